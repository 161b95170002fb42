use super::*;

#[test]
fn greedy_takes_the_argmax_and_top_p_keeps_the_nucleus() {
    let logits = [0.0f32, 5.0, 1.0, 4.9];
    let mut rng = RunSeed(1).rng("t");
    assert_eq!(sample_top_p(&logits, 0.0, 0.9, &mut rng), 1);
    // top-p so small that only the most likely token is in the nucleus
    for _ in 0..50 {
        assert_eq!(sample_top_p(&logits, 1.0, 0.01, &mut rng), 1);
    }
    // with p = 0.9, tokens 1 and 3 (~0.47 each) are drawn, never 0 or 2 (~0.02, ~0.05 left out)
    let mut seen = [0usize; 4];
    for _ in 0..400 {
        seen[sample_top_p(&logits, 1.0, 0.9, &mut rng) as usize] += 1;
    }
    assert_eq!((seen[0], seen[2]), (0, 0));
    assert!(seen[1] > 100 && seen[3] > 100, "{seen:?}");
}

/// The draw with a full sort of the vocabulary, as the sampler was first written.
fn full_sort_draw(logits: &[f32], temperature: f64, top_p: f64, rng: &mut impl Rng) -> u32 {
    let max = logits.iter().copied().fold(f32::NEG_INFINITY, f32::max) as f64;
    let mut probs: Vec<(u32, f64)> = logits
        .iter()
        .enumerate()
        .map(|(i, &l)| (i as u32, ((l as f64 - max) / temperature).exp()))
        .collect();
    let total: f64 = probs.iter().map(|p| p.1).sum();
    probs.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    let mut kept = 0.0;
    let mut cut = probs.len();
    for (i, p) in probs.iter().enumerate() {
        kept += p.1 / total;
        if kept >= top_p {
            cut = i + 1;
            break;
        }
    }
    let mass: f64 = probs[..cut].iter().map(|p| p.1).sum();
    let mut target = rng.gen::<f64>() * mass;
    for p in &probs[..cut] {
        target -= p.1;
        if target < 0.0 {
            return p.0;
        }
    }
    probs[cut - 1].0
}

#[test]
fn reading_only_the_head_draws_what_a_full_sort_draws() {
    let mut gen = RunSeed(3).rng("logits");
    for case in 0..200 {
        // flat and peaked distributions, with ties, over a vocabulary past the first head
        let spread = [0.1f32, 1.0, 4.0, 12.0][case % 4];
        let logits: Vec<f32> = (0..3000)
            .map(|_| (gen.gen::<f32>() * spread * 8.0).round() / 8.0)
            .collect();
        let (temperature, top_p) = [(0.8, 0.9), (1.0, 0.99), (0.5, 1.0), (2.0, 0.5)][case % 4];
        let seed = RunSeed(case as u64);
        let mut a = seed.rng("draw");
        let mut b = seed.rng("draw");
        for _ in 0..5 {
            assert_eq!(
                sample_top_p(&logits, temperature, top_p, &mut a),
                full_sort_draw(&logits, temperature, top_p, &mut b),
                "case {case}"
            );
        }
    }
}

#[test]
fn same_seed_same_draws() {
    let logits: Vec<f32> = (0..100).map(|i| (i as f32 * 0.37).sin()).collect();
    let draw = |seed| {
        let mut rng = RunSeed(seed).rng("t");
        (0..20)
            .map(|_| sample_top_p(&logits, 0.8, 0.9, &mut rng))
            .collect::<Vec<_>>()
    };
    assert_eq!(draw(7), draw(7));
    assert_ne!(draw(7), draw(8));
}
