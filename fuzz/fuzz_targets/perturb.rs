//! Every perturbation on any text, with parameters drawn inside their documented ranges (and,
//! for one input in four, any string at all): building either succeeds or names the parameter,
//! applying never panics, and the same seed gives the same text twice. The WordNet kinds use the
//! fixture mirror's WordNet.
#![no_main]

use std::path::Path;
use std::sync::{Arc, OnceLock};

use arbitrary::{Arbitrary, Unstructured};
use libfuzzer_sys::fuzz_target;
use sage_core::RunSeed;
use sage_perturb::{PerturbationSpec, WordNet};

fn wordnet() -> Arc<WordNet> {
    static WORDNET: OnceLock<Arc<WordNet>> = OnceLock::new();
    WORDNET
        .get_or_init(|| {
            let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../data/fixtures/mirror/wordnet/dict");
            Arc::new(WordNet::open(dir).unwrap())
        })
        .clone()
}

/// A value in `[0, max]`, ends included, from a fraction of 2^16.
fn within(u: &mut Unstructured, max: f64) -> arbitrary::Result<String> {
    let step = u16::arbitrary(u)?;
    Ok((max * f64::from(step) / f64::from(u16::MAX)).to_string())
}

fn params(u: &mut Unstructured, kind: &str) -> arbitrary::Result<Vec<(String, String)>> {
    if u.ratio(1, 4)? {
        // anything at all: an error is fine, a panic or a runaway allocation is not
        return Vec::<(String, String)>::arbitrary(u);
    }
    let mut p = Vec::new();
    let mut set = |name: &str, value: String| p.push((name.to_owned(), value));
    match kind {
        "random-capitalisation" => set("p", within(u, 1.0)?),
        "character-deletion" => set("every", u.int_in_range(1..=1_000_000_000u32)?.to_string()),
        "needle-insertion" => {
            set("p", within(u, 10.0)?);
            set("pos", within(u, 1.0)?);
        }
        "token-removal" => {
            set("size", within(u, 1.0)?);
            set("pos", within(u, 1.0)?);
        }
        // counts up to the documented 1e6 cost up to a million swaps a text: rarely that many
        "jumbling" | "synonym-replacement" => {
            let n = if u.ratio(1, 64)? {
                u.int_in_range(0..=1_000_000u32)?
            } else {
                u.int_in_range(0..=64u32)?
            };
            set("n", n.to_string());
        }
        _ => {}
    }
    Ok(p)
}

fuzz_target!(|input: &[u8]| {
    let mut u = Unstructured::new(input);
    let Ok(pick) = u.choose_index(PerturbationSpec::KINDS.len()) else {
        return;
    };
    let kind = PerturbationSpec::KINDS[pick].0;
    let Ok(params) = params(&mut u, kind) else {
        return;
    };
    let Ok(seed) = u64::arbitrary(&mut u) else {
        return;
    };
    let text = String::from_utf8_lossy(u.take_rest()).into_owned();
    let spec = PerturbationSpec {
        kind: kind.to_owned(),
        params,
    };
    let Ok(perturbation) = spec.build(|| Ok(wordnet())) else {
        return;
    };
    let once = perturbation.apply(&text, &mut RunSeed(seed).rng("fuzz"));
    let twice = perturbation.apply(&text, &mut RunSeed(seed).rng("fuzz"));
    match (once, twice) {
        (Ok(a), Ok(b)) => assert_eq!(a, b, "{} is not deterministic", perturbation.id()),
        (Err(a), Err(b)) => assert_eq!(a.to_string(), b.to_string()),
        (a, b) => panic!("{}: {a:?} then {b:?}", perturbation.id()),
    }
});
