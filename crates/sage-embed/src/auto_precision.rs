//! `--precision auto`: int8 only where it pays here and keeps the vectors.
//!
//! Whether int8 is worth it depends on the CPU (VNNI or AMX, or neither) and on the model (its
//! activation outliers), so it is measured at load rather than guessed: the model is loaded at
//! f32 and at int8, both embed a fixed calibration set shipped with this crate (40 texts of
//! every length, a few not English), and int8 is taken only when it ran at [`MIN_SPEEDUP`] times
//! f32's speed or more and the lowest cosine between its vector and f32's, over every
//! calibration text, is at least [`MIN_COSINE`]. Otherwise f32, with the reason. A model that has no int8 (a static or remote
//! model, a family without lower precisions, a GPU) is f32, said so.
//!
//! A choice near the threshold could flip between two runs on one machine, and with it the
//! vectors; so the verdict is remembered (a `precision-auto.json` beside the embedding cache,
//! keyed by the model's revision, this CPU, its instruction sets and the thread count) and the
//! next run on the same machine takes the same precision without measuring again.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Instant;

use sage_core::Embedder;

use crate::calibration::{calibration_texts, MIN_COSINE};
use crate::loader::ModelSource;
use crate::model_kind::ModelKind;
use crate::{Precision, ResolveOptions, Result, SentenceTransformer, TransformerOptions};

/// How much faster than f32 int8 must run to be taken: the speed of one machine drifts by about
/// this much between sittings, so a smaller lead could flip from one run to the next, and with
/// it the vectors a run computes.
pub const MIN_SPEEDUP: f64 = 1.1;

/// Timed passes over the calibration set per precision, alternated (the best is kept), after
/// one untimed pass each.
const PASSES: usize = 5;

/// What `--precision auto` chose and why.
#[derive(Clone, Debug, PartialEq)]
pub struct PrecisionVerdict {
    /// The precision the model will run at.
    pub chosen: Precision,
    /// int8's speed over f32's on the calibration set (texts/s ÷ texts/s), where measured.
    pub int8_speedup: Option<f64>,
    /// The lowest cosine between int8's and f32's vectors over the calibration set, where
    /// measured.
    pub int8_lowest_cosine: Option<f64>,
    /// Why, as one sentence.
    pub reason: String,
}

/// The rule, on what was measured: int8 when it reaches [`MIN_SPEEDUP`] and keeps
/// [`MIN_COSINE`].
pub fn decide_precision(speedup: f64, lowest_cosine: f64, texts: usize) -> PrecisionVerdict {
    let measured = format!(
        "int8 ran {speedup:.2}x f32's speed with a lowest cosine of {lowest_cosine:.4} against \
         f32 on {texts} calibration texts"
    );
    let (chosen, verdict) = if lowest_cosine < MIN_COSINE {
        (
            Precision::F32,
            format!("below the {MIN_COSINE} it must keep"),
        )
    } else if speedup < MIN_SPEEDUP {
        (
            Precision::F32,
            format!("not the {MIN_SPEEDUP}x of f32's speed it must reach on this CPU"),
        )
    } else {
        (Precision::Int8, "faster, and accurate enough".to_owned())
    };
    PrecisionVerdict {
        chosen,
        int8_speedup: Some(speedup),
        int8_lowest_cosine: Some(lowest_cosine),
        reason: format!("{measured}: {verdict}"),
    }
}

fn f32_because(reason: String) -> PrecisionVerdict {
    PrecisionVerdict {
        chosen: Precision::F32,
        int8_speedup: None,
        int8_lowest_cosine: None,
        reason,
    }
}

/// Chooses the precision `spec` runs at under `options` (whose own `precision` is ignored), by
/// loading it at f32 and int8 and measuring both on the calibration set. With `memo` (a JSON
/// file), a verdict already measured for this model on this machine is taken from it (its
/// reason says when), and a new one is written to it.
pub fn choose_precision(
    spec: &str,
    resolve: &ResolveOptions,
    options: &TransformerOptions,
    memo: Option<&Path>,
) -> Result<PrecisionVerdict> {
    if options.cuda {
        return Ok(f32_because(
            "on a GPU the model runs in half precision; int8 is the CPU's".to_owned(),
        ));
    }
    let model = match ModelSource::resolve(spec, resolve)? {
        ModelSource::Remote(_) => {
            return Ok(f32_because(
                "a remote model has no precision to choose".to_owned(),
            ))
        }
        ModelSource::Local(_, kind) if kind != ModelKind::Transformer => {
            return Ok(f32_because(
                "a static model has no dense products to run in int8".to_owned(),
            ))
        }
        ModelSource::Local(model, _) => model,
    };
    // a verdict this machine already measured is taken before any weight is read
    let key = machine_key(&model.name, &crate::transformer::revision_of(&model)?);
    let mut remembered = memo.map(read_memo).unwrap_or_default();
    if let Some(verdict) = remembered.get(&key) {
        let mut verdict = verdict.clone();
        verdict.reason = format!("as measured before on this machine: {}", verdict.reason);
        return Ok(verdict);
    }
    let at = |precision| TransformerOptions {
        precision,
        ..options.clone()
    };
    let texts = calibration_texts();
    let int8 = match SentenceTransformer::load(&model, at(Precision::Int8)) {
        Ok(int8) => int8,
        // a family without lower precisions says so, naming what has them
        Err(crate::EmbedError::Core(sage_core::SageError::InvalidArgument(why))) => {
            return Ok(f32_because(why))
        }
        // int8's own check at load measured the vectors too far from float32's
        Err(crate::EmbedError::Int8Inaccurate { lowest, texts, .. }) => {
            let verdict = PrecisionVerdict {
                chosen: Precision::F32,
                int8_speedup: None,
                int8_lowest_cosine: Some(lowest),
                reason: format!(
                    "int8 keeps a lowest cosine of {lowest:.4} against f32 on {texts} \
                     calibration texts: below the {MIN_COSINE} it must keep"
                ),
            };
            if let Some(memo) = memo {
                remembered.insert(key, verdict.clone());
                write_memo(memo, &remembered);
            }
            return Ok(verdict);
        }
        Err(e) => return Err(e),
    };
    let f32 = SentenceTransformer::load(&model, at(Precision::F32))?;
    let lowest = int8
        .int8_lowest_cosine()
        .expect("an int8 model measures its lowest cosine at load");
    let mut best = [f64::INFINITY; 2];
    for _ in 0..PASSES {
        for (k, model) in [&f32, &int8].into_iter().enumerate() {
            let start = Instant::now();
            model.embed(&texts)?;
            best[k] = best[k].min(start.elapsed().as_secs_f64());
        }
    }
    let verdict = decide_precision(best[0] / best[1], lowest, texts.len());
    if let Some(memo) = memo {
        remembered.insert(key, verdict.clone());
        write_memo(memo, &remembered);
    }
    Ok(verdict)
}

/// The model (its id and revision: weights that change are measured again), this CPU (its name
/// and the instruction sets the products use) and the thread count: what the verdict depends on.
fn machine_key(model: &str, revision: &str) -> String {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|info| {
            info.lines()
                .find_map(|l| l.strip_prefix("model name"))
                .map(|v| v.trim_start_matches([' ', '\t', ':']).trim().to_owned())
        })
        .unwrap_or_else(|| std::env::consts::ARCH.to_owned());
    format!(
        "{model}@{revision} | {cpu} [{}] | {} threads",
        instruction_sets().join(" "),
        rayon::current_num_threads()
    )
}

fn instruction_sets() -> Vec<&'static str> {
    // what the products run on here, as SAGE_CPU allows: a new kernel measures again
    let mut sets = vec![sage_kernels::cpu::effective().name()];
    sets.extend(sage_kernels::int8_kernel());
    if sage_kernels::amx_available() {
        sets.push("amx");
    }
    sets
}

/// One remembered verdict, as the memo file holds it.
#[derive(serde::Serialize, serde::Deserialize)]
struct Remembered {
    chosen: String,
    int8_speedup: Option<f64>,
    int8_lowest_cosine: Option<f64>,
    reason: String,
}

/// The verdicts remembered in `memo`; none where it is missing or unreadable (measured again).
fn read_memo(memo: &Path) -> BTreeMap<String, PrecisionVerdict> {
    let remembered: BTreeMap<String, Remembered> = std::fs::read(memo)
        .ok()
        .and_then(|bytes| serde_json::from_slice(&bytes).ok())
        .unwrap_or_default();
    remembered
        .into_iter()
        .filter_map(|(key, r)| {
            Some((
                key,
                PrecisionVerdict {
                    chosen: Precision::from_name(&r.chosen)?,
                    int8_speedup: r.int8_speedup,
                    int8_lowest_cosine: r.int8_lowest_cosine,
                    reason: r.reason,
                },
            ))
        })
        .collect()
}

fn write_memo(memo: &Path, verdicts: &BTreeMap<String, PrecisionVerdict>) {
    let remembered: BTreeMap<&String, Remembered> = verdicts
        .iter()
        .map(|(key, v)| {
            (
                key,
                Remembered {
                    chosen: v.chosen.name().to_owned(),
                    int8_speedup: v.int8_speedup,
                    int8_lowest_cosine: v.int8_lowest_cosine,
                    reason: v.reason.clone(),
                },
            )
        })
        .collect();
    // a memo that cannot be written costs the next run a measurement, not this one its run
    if let Ok(bytes) = serde_json::to_vec_pretty(&remembered) {
        if let Some(parent) = memo.parent() {
            let _ = std::fs::create_dir_all(parent);
        }
        let _ = sage_core::write_atomically(memo, &bytes);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::calibration::cosine;

    /// The rule on made-up measurements: accuracy first, then speed.
    #[test]
    fn int8_only_when_faster_and_accurate() {
        let fast_and_close = decide_precision(1.4, 0.995, 40);
        assert_eq!(fast_and_close.chosen, Precision::Int8);
        assert_eq!(
            fast_and_close.reason,
            "int8 ran 1.40x f32's speed with a lowest cosine of 0.9950 against f32 on 40 \
             calibration texts: faster, and accurate enough"
        );
        let inaccurate = decide_precision(1.6, 0.91, 40);
        assert_eq!(inaccurate.chosen, Precision::F32);
        assert!(
            inaccurate.reason.ends_with("below the 0.99 it must keep"),
            "{}",
            inaccurate.reason
        );
        let slow = decide_precision(0.8, 0.999, 40);
        assert_eq!(slow.chosen, Precision::F32);
        assert!(slow
            .reason
            .ends_with("not the 1.1x of f32's speed it must reach on this CPU"));
        // a lead within a sitting's drift is no lead
        assert_eq!(decide_precision(1.09, 0.999, 40).chosen, Precision::F32);
        assert_eq!(decide_precision(1.1, 0.999, 40).chosen, Precision::Int8);
    }

    #[test]
    fn the_calibration_set_spans_lengths_and_languages() {
        let texts = calibration_texts();
        assert_eq!(texts.len(), 40);
        let words = |t: &str| t.split_whitespace().count();
        assert!(texts.iter().any(|t| words(t) <= 2));
        assert!(texts.iter().any(|t| words(t) >= 40));
        assert!(texts.iter().any(|t| t.contains("Zug")));
        assert!((cosine(&[1.0, 0.0], &[1.0, 0.0]) - 1.0).abs() < 1e-12);
        assert_eq!(cosine(&[0.0, 0.0], &[0.0, 0.0]), 1.0);
    }

    /// On a real model, the choice follows the rule on what was measured here (which way it
    /// goes depends on this CPU), and a static model is f32 without measuring.
    #[test]
    fn auto_measures_a_real_model_and_follows_the_rule() {
        let Some(dir) = sage_test_env::model_dir_or_skip(
            "all-MiniLM-L6-v2",
            "auto_measures_a_real_model_and_follows_the_rule",
        ) else {
            return;
        };
        let resolve = ResolveOptions::from_env();
        let memo = tempfile::tempdir().unwrap();
        let memo = memo.path().join("precision-auto.json");
        let verdict = choose_precision(
            dir.to_str().unwrap(),
            &resolve,
            &TransformerOptions::default(),
            Some(&memo),
        )
        .unwrap();
        let (speedup, cosine) = (
            verdict.int8_speedup.unwrap(),
            verdict.int8_lowest_cosine.unwrap(),
        );
        assert!(cosine > 0.5 && cosine <= 1.0 + 1e-9, "{verdict:?}");
        assert_eq!(verdict, decide_precision(speedup, cosine, 40));
        // the next choice on this machine is the remembered one, said so, whatever the timing
        let again = choose_precision(
            dir.to_str().unwrap(),
            &resolve,
            &TransformerOptions::default(),
            Some(&memo),
        )
        .unwrap();
        assert_eq!(again.chosen, verdict.chosen);
        assert_eq!(again.int8_speedup, verdict.int8_speedup);
        assert_eq!(
            again.reason,
            format!("as measured before on this machine: {}", verdict.reason)
        );
        // a damaged memo is measured past, not an error
        std::fs::write(&memo, b"{not json").unwrap();
        let measured = choose_precision(
            dir.to_str().unwrap(),
            &resolve,
            &TransformerOptions::default(),
            Some(&memo),
        )
        .unwrap();
        assert!(!measured.reason.starts_with("as measured before"));
        let on_gpu = TransformerOptions {
            cuda: true,
            ..TransformerOptions::default()
        };
        let gpu = choose_precision(dir.to_str().unwrap(), &resolve, &on_gpu, None).unwrap();
        assert_eq!(gpu.chosen, Precision::F32);
        assert!(gpu.int8_speedup.is_none());
        if let Some(glove) = sage_test_env::env_dir("SAGE_MODELS_DIR")
            .map(|d| d.join("glove.6B.50d"))
            .filter(|d| d.is_dir())
        {
            let words = choose_precision(
                glove.to_str().unwrap(),
                &resolve,
                &TransformerOptions::default(),
                None,
            )
            .unwrap();
            assert_eq!(words.chosen, Precision::F32);
            assert!(words.reason.contains("static model"), "{}", words.reason);
        }
    }
}
