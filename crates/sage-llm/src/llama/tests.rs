use candle_core::quantized::{gguf_file::Value, GgmlDType};
use candle_transformers::models::{quantized_llama, quantized_qwen2};
use rand::{Rng, SeedableRng};

use super::*;

const VOCAB: usize = 96;
const HIDDEN: usize = 64;

/// A small random GGUF of `architecture`: 2 layers, 4 query heads over 2 key/value heads,
/// quantized matrices (llama: Q4_1, our kernel's type; qwen2: Q4_0, candle's), F32 norms
/// and biases.
fn tiny_gguf(architecture: &str, seed: u64) -> Vec<u8> {
    let q = if architecture == "llama" {
        GgmlDType::Q4_1
    } else {
        GgmlDType::Q4_0
    };
    let mut rng = sage_core::ExperimentRng::seed_from_u64(seed);
    let device = Device::Cpu;
    let mut random = |shape: &[usize], scale: f32, dtype: GgmlDType| {
        let n: usize = shape.iter().product();
        let values: Vec<f32> = (0..n).map(|_| rng.gen_range(-scale..scale)).collect();
        QTensor::quantize(&Tensor::from_vec(values, shape, &device).unwrap(), dtype).unwrap()
    };
    let mut tensors: Vec<(String, QTensor)> = vec![
        (
            "token_embd.weight".into(),
            random(&[VOCAB, HIDDEN], 1.0, GgmlDType::Q4_0),
        ),
        (
            "output_norm.weight".into(),
            random(&[HIDDEN], 1.0, GgmlDType::F32),
        ),
        ("output.weight".into(), random(&[VOCAB, HIDDEN], 0.5, q)),
    ];
    for i in 0..2 {
        let w = |name: &str| format!("blk.{i}.{name}");
        tensors.push((w("attn_q.weight"), random(&[HIDDEN, HIDDEN], 0.3, q)));
        tensors.push((w("attn_k.weight"), random(&[32, HIDDEN], 0.3, q)));
        tensors.push((w("attn_v.weight"), random(&[32, HIDDEN], 0.3, q)));
        tensors.push((w("attn_output.weight"), random(&[HIDDEN, HIDDEN], 0.3, q)));
        tensors.push((
            w("attn_norm.weight"),
            random(&[HIDDEN], 1.0, GgmlDType::F32),
        ));
        tensors.push((w("ffn_norm.weight"), random(&[HIDDEN], 1.0, GgmlDType::F32)));
        tensors.push((w("ffn_gate.weight"), random(&[128, HIDDEN], 0.3, q)));
        tensors.push((w("ffn_up.weight"), random(&[128, HIDDEN], 0.3, q)));
        tensors.push((w("ffn_down.weight"), random(&[HIDDEN, 128], 0.3, q)));
        if architecture == "qwen2" {
            tensors.push((w("attn_q.bias"), random(&[HIDDEN], 0.2, GgmlDType::F32)));
            tensors.push((w("attn_k.bias"), random(&[32], 0.2, GgmlDType::F32)));
            tensors.push((w("attn_v.bias"), random(&[32], 0.2, GgmlDType::F32)));
        }
    }
    let key = |k: &str| format!("{architecture}.{k}");
    let metadata: Vec<(String, Value)> = vec![
        (
            "general.architecture".into(),
            Value::String(architecture.into()),
        ),
        (key("attention.head_count"), Value::U32(4)),
        (key("attention.head_count_kv"), Value::U32(2)),
        (key("block_count"), Value::U32(2)),
        (key("embedding_length"), Value::U32(HIDDEN as u32)),
        (key("context_length"), Value::U32(256)),
        (key("rope.dimension_count"), Value::U32(16)),
        (key("rope.freq_base"), Value::F32(10_000.0)),
        (key("attention.layer_norm_rms_epsilon"), Value::F32(1e-5)),
    ];
    let mut file = std::io::Cursor::new(Vec::new());
    gguf_file::write(
        &mut file,
        &metadata
            .iter()
            .map(|(k, v)| (k.as_str(), v))
            .collect::<Vec<_>>(),
        &tensors
            .iter()
            .map(|(k, t)| (k.as_str(), t))
            .collect::<Vec<_>>(),
    )
    .unwrap();
    file.into_inner()
}

fn content(bytes: &[u8]) -> (gguf_file::Content, std::io::Cursor<&[u8]>) {
    let mut reader = std::io::Cursor::new(bytes);
    (gguf_file::Content::read(&mut reader).unwrap(), reader)
}

fn ours(bytes: &[u8]) -> PackedDecoder {
    let (content, mut reader) = content(bytes);
    PackedDecoder::from_gguf(&content, &mut reader, &Device::Cpu).unwrap()
}

fn row(t: &Tensor) -> Vec<f32> {
    t.flatten_all().unwrap().to_vec1().unwrap()
}

/// Candle's model as a function of (new tokens, position) to logits.
type CandleModel = Box<dyn FnMut(&[u32], usize) -> Tensor>;

/// A candle model's `forward(input, position)` fed one sequence of token ids.
fn stepper(
    mut forward: impl FnMut(&Tensor, usize) -> candle_core::Result<Tensor> + 'static,
) -> CandleModel {
    Box::new(move |tokens, pos| {
        let input = Tensor::new(tokens, &Device::Cpu)
            .unwrap()
            .unsqueeze(0)
            .unwrap();
        forward(&input, pos).unwrap()
    })
}

/// SmolLM2's heads (9 query heads over 3 key/value heads of 64), operands that are views
/// into a larger cache at several offsets, lengths across gemm's size thresholds: reading
/// the shared heads in place gives the bits of candle's matmul on the repeated copy.
#[test]
fn shared_heads_in_place_give_candles_bits_on_the_repeated_copy() {
    let mut rng = sage_core::ExperimentRng::seed_from_u64(5);
    let mut random = |shape: &[usize]| {
        let n: usize = shape.iter().product();
        let values: Vec<f32> = (0..n).map(|_| rng.gen_range(-2.0f32..2.0)).collect();
        Tensor::from_vec(values, shape, &Device::Cpu).unwrap()
    };
    let (n_head, n_kv, d, capacity) = (9, 3, 64, 300);
    for &(m, len, skip) in &[
        (1, 1, 0),
        (1, 37, 3),
        (5, 64, 1),
        (40, 140, 0),
        (1, 257, 17),
    ] {
        let cache = random(&[n_kv, capacity, d]);
        // the filled rows of a cache, as `KvCache::append` returns them
        let rows = cache.narrow(1, skip, len).unwrap().unsqueeze(0).unwrap();
        let q = random(&[1, n_head, m, d]);
        let scores = matmul_shared_heads(&q, &rows, true).unwrap();
        let expected = q
            .matmul(&repeat_heads(&rows, n_head).unwrap().t().unwrap())
            .unwrap();
        assert_eq!(row(&scores), row(&expected), "scores, m {m}, len {len}");
        let weights = random(&[1, n_head, m, len]);
        let mixed = matmul_shared_heads(&weights, &rows, false).unwrap();
        let expected = weights
            .matmul(&repeat_heads(&rows, n_head).unwrap())
            .unwrap();
        assert_eq!(row(&mixed), row(&expected), "values, m {m}, len {len}");
    }
    let q = random(&[1, 9, 1, 64]);
    assert!(matmul_shared_heads(&q, &random(&[1, 2, 5, 64]), true).is_err());
    assert!(matmul_shared_heads(&q, &random(&[1, 3, 5, 32]), true).is_err());
}

/// The prompt, then three decoded tokens, through candle's model and through ours alone.
#[test]
fn one_sequence_gives_candles_logits() {
    let prompt: Vec<u32> = vec![1, 17, 42, 5, 88, 23, 9];
    let decoded = [31u32, 64, 2];
    for architecture in ["llama", "qwen2"] {
        let bytes = tiny_gguf(architecture, 7);
        let mut theirs: CandleModel = {
            let (content, mut reader) = content(&bytes);
            if architecture == "llama" {
                let mut m =
                    quantized_llama::ModelWeights::from_gguf(content, &mut reader, &Device::Cpu)
                        .unwrap();
                stepper(move |x, pos| m.forward(x, pos))
            } else {
                let mut m =
                    quantized_qwen2::ModelWeights::from_gguf(content, &mut reader, &Device::Cpu)
                        .unwrap();
                stepper(move |x, pos| m.forward(x, pos))
            }
        };
        let decoder = ours(&bytes);
        let mut cache = KvCache::default();
        let mut pos = 0;
        for tokens in std::iter::once(&prompt[..]).chain(decoded.chunks(1)) {
            let expected = row(&theirs(tokens, pos));
            let got = row(&decoder.forward(&mut [(tokens, &mut cache)]).unwrap());
            pos += tokens.len();
            assert_eq!(cache.len(), pos);
            // the same operations in the same order: the same bits
            assert_eq!(got, expected, "{architecture} after {pos} tokens");
        }
    }
}

const PROMPTS: [&[u32]; 5] = [
    &[3, 4, 5],
    &[7, 8],
    &[9, 8, 7, 6, 5, 4, 3, 2, 1],
    &[60, 61],
    &[11, 12, 13, 14],
];
const DECODED: [u32; 3] = [10, 20, 30];

/// Each prompt alone, then each of `DECODED`: the logits after every pass.
fn alone(decoder: &PackedDecoder) -> Vec<Vec<Vec<f32>>> {
    PROMPTS
        .iter()
        .map(|p| {
            let mut cache = KvCache::default();
            let mut out = vec![row(&decoder.forward(&mut [(*p, &mut cache)]).unwrap())];
            for t in DECODED {
                out.push(row(&decoder
                    .forward(&mut [(&[t][..], &mut cache)])
                    .unwrap()));
            }
            out
        })
        .collect()
}

/// Passes of (sequence, tokens): the first two sequences start together, the others join
/// while those decode, the last joins after the first has finished.
const SCRIPT: [&[(usize, &[u32])]; 8] = [
    &[(0, PROMPTS[0]), (1, PROMPTS[1])],
    &[(0, &[10]), (1, &[10]), (2, PROMPTS[2])],
    &[(2, &[10]), (0, &[20]), (3, PROMPTS[3]), (1, &[20])],
    &[(0, &[30]), (1, &[30]), (2, &[20]), (3, &[10])],
    &[(3, &[20]), (4, PROMPTS[4]), (2, &[30])],
    &[(3, &[30]), (4, &[10])],
    &[(4, &[20])],
    &[(4, &[30])],
];

/// Sequences of different lengths, in prefill and decoding together, give bit for bit what
/// each gives alone.
#[test]
fn a_packed_batch_equals_each_sequence_alone() {
    for architecture in ["llama", "qwen2"] {
        let decoder = ours(&tiny_gguf(architecture, 11));
        let mut caches = vec![KvCache::default(); PROMPTS.len()];
        let mut together: Vec<Vec<Vec<f32>>> = vec![Vec::new(); PROMPTS.len()];
        for pass in SCRIPT {
            let mut refs: Vec<Option<&mut KvCache>> = caches.iter_mut().map(Some).collect();
            let mut steps: Vec<(&[u32], &mut KvCache)> = pass
                .iter()
                .map(|&(i, tokens)| (tokens, refs[i].take().unwrap()))
                .collect();
            let logits = decoder.forward(&mut steps).unwrap();
            for (k, &(i, _)) in pass.iter().enumerate() {
                together[i].push(row(&logits.get(k).unwrap()));
            }
        }
        assert_eq!(together, alone(&decoder), "{architecture}");
    }
}

/// Two caches cloned from one prefix, and the prefix itself, extended together well past
/// their first capacity: each gives, bit for bit, what its sequence gives alone from an
/// empty cache, so no write through one cache is seen by another.
#[test]
fn clones_of_a_prefix_do_not_see_each_others_writes() {
    let decoder = ours(&tiny_gguf("llama", 5));
    let prefix_tokens = &PROMPTS[2][..5];
    let chunks = |first: &[u32], salt: u32| -> Vec<Vec<u32>> {
        std::iter::once(first.to_vec())
            .chain((1..40u32).map(|step| vec![(step * 7 + salt) % VOCAB as u32]))
            .collect()
    };
    let scripts = [
        chunks(&[40, 41], 1),
        chunks(&[50], 2),
        chunks(&[60, 61, 62], 3),
    ];

    let mut prefix = KvCache::default();
    decoder
        .forward(&mut [(prefix_tokens, &mut prefix)])
        .unwrap();
    let mut caches = [prefix.clone(), prefix.clone(), prefix];
    let mut together: Vec<Vec<Vec<f32>>> = vec![Vec::new(); scripts.len()];
    for step in 0..scripts[0].len() {
        let mut steps: Vec<(&[u32], &mut KvCache)> = scripts
            .iter()
            .zip(caches.iter_mut())
            .map(|(script, cache)| (&script[step][..], cache))
            .collect();
        let logits = decoder.forward(&mut steps).unwrap();
        for (i, out) in together.iter_mut().enumerate() {
            out.push(row(&logits.get(i).unwrap()));
        }
    }

    for (script, got) in scripts.iter().zip(&together) {
        let mut cache = KvCache::default();
        decoder.forward(&mut [(prefix_tokens, &mut cache)]).unwrap();
        let alone: Vec<Vec<f32>> = script
            .iter()
            .map(|chunk| row(&decoder.forward(&mut [(&chunk[..], &mut cache)]).unwrap()))
            .collect();
        assert_eq!(got, &alone);
    }
}

/// The pooled path on the same script: the fifth sequence reuses the first one's slot, the
/// third starts from a prefix cache loaded into its slot. Attention there reduces over
/// padded lengths, so the logits agree to rounding, not to the bit.
#[test]
fn pooled_sequences_give_each_sequence_alone_to_rounding() {
    for architecture in ["llama", "qwen2"] {
        let decoder = ours(&tiny_gguf(architecture, 11));
        let expected = alone(&decoder);
        let pool = decoder.pool(4, 16).unwrap();
        assert_eq!(pool.capacity(), 16);
        let slot_of = [2usize, 0, 3, 1, 2];
        let mut held = vec![0usize; PROMPTS.len()];
        let mut prefix = KvCache::default();
        decoder
            .forward(&mut [(&PROMPTS[2][..4], &mut prefix)])
            .unwrap();
        let mut together: Vec<Vec<Vec<f32>>> = vec![Vec::new(); PROMPTS.len()];
        for pass in SCRIPT {
            let steps: Vec<(&[u32], usize, usize)> = pass
                .iter()
                .map(|&(i, tokens)| {
                    if i == 2 && held[i] == 0 {
                        pool.load(slot_of[i], &prefix).unwrap();
                        held[i] = prefix.len();
                        return (&tokens[4..], slot_of[i], held[i]);
                    }
                    (tokens, slot_of[i], held[i])
                })
                .collect();
            let logits = decoder.forward_pooled(&pool, &steps).unwrap();
            for (k, &(i, _)) in pass.iter().enumerate() {
                held[i] += steps[k].0.len();
                together[i].push(row(&logits.get(k).unwrap()));
            }
        }
        for (i, (got, want)) in together.iter().zip(&expected).enumerate() {
            for (g, w) in got.iter().flatten().zip(want.iter().flatten()) {
                assert!(
                    (g - w).abs() <= 1e-4 * w.abs().max(1.0),
                    "{architecture}: sequence {i}: {g} vs {w}"
                );
            }
            assert_eq!(got.len(), want.len());
        }
    }
}

#[test]
fn a_pool_refuses_what_it_cannot_hold() {
    let decoder = ours(&tiny_gguf("llama", 3));
    let pool = decoder.pool(2, 8).unwrap();
    let nine = [1u32; 9];
    let e = decoder
        .forward_pooled(&pool, &[(&nine, 0, 0)])
        .err()
        .unwrap();
    assert!(e.to_string().contains("context of 8"), "{e}");
    let e = decoder
        .forward_pooled(&pool, &[(&[1], 1, 0), (&[2], 1, 0)])
        .err()
        .unwrap();
    assert!(e.to_string().contains("used twice"), "{e}");
    let e = decoder
        .forward_pooled(&pool, &[(&[1], 2, 0)])
        .err()
        .unwrap();
    assert!(e.to_string().contains("out of range"), "{e}");
}

#[test]
fn too_long_a_sequence_is_an_error_not_a_panic() {
    let decoder = ours(&tiny_gguf("llama", 3));
    let tokens = vec![1u32; 257];
    let mut cache = KvCache::default();
    let e = decoder
        .forward(&mut [(&tokens[..], &mut cache)])
        .err()
        .unwrap();
    assert!(e.to_string().contains("context of 256"), "{e}");
}
