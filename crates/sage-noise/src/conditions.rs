//! The conditions a run sweeps (channel × level), applying one to a set of texts, and the area
//! under a retention curve.

use sage_core::RunSeed;
use sage_perturb::{PerturbError, Perturbation, PerturbationSpec, Provenance, WordNet};
use serde::{Deserialize, Serialize};

use crate::{NoiseError, Options, Result};

/// The channels a run sweeps by default: every production-noise kind of sage-perturb with a
/// `rate` (see the table in sage-perturb's docs for what each does and its source).
pub const DEFAULT_CHANNELS: [&str; 12] = [
    "keyboard-typos",
    "ocr-confusions",
    "character-noise",
    "lower-case",
    "upper-case",
    "random-case",
    "punctuation-loss",
    "whitespace-loss",
    "word-drop",
    "word-swap",
    "boilerplate",
    "truncation",
];

/// The length channel: padded with filler to a number of tokens.
const PADDING: &str = "filler-padding";

/// What a curve's levels are.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Axis {
    /// Share of the channel's units touched, in [0, 1].
    Rate,
    /// Target length in cl100k tokens.
    Tokens,
}

/// One channel at one level.
pub struct Condition {
    /// The perturbation kind.
    pub channel: String,
    /// What `level` is.
    pub axis: Axis,
    /// The rate or length.
    pub level: f64,
    perturbation: Box<dyn Perturbation>,
}

/// What one condition did to a set of texts.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Tally {
    /// Texts noised.
    pub(crate) texts: usize,
    /// Texts that differ from their clean text.
    pub(crate) changed: usize,
    /// Units counted and touched, summed over the texts (rate channels).
    pub(crate) units: Option<(usize, usize)>,
}

/// A condition's noisy texts and what it did.
pub(crate) struct Noisy {
    pub(crate) texts: Vec<String>,
    pub(crate) tally: Tally,
}

impl Condition {
    /// The perturbation's id, e.g. `keyboard-typos(rate=0.2)`.
    pub fn id(&self) -> String {
        self.perturbation.id()
    }

    /// `texts` noised, text `i` with the generator of `(seed, "<stream>/<id>", i)`.
    pub(crate) fn apply(&self, stream: &str, texts: &[&str], seed: RunSeed) -> Result<Noisy> {
        self.apply_keyed(
            stream,
            texts,
            &(0..texts.len() as u64).collect::<Vec<_>>(),
            seed,
        )
    }

    /// `texts` noised, text `i` with the generator of `(seed, "<stream>/<id>", keys[i])`: the
    /// key is the unit's position in its file, so a sampled run noises a unit as the whole one
    /// does.
    pub(crate) fn apply_keyed(
        &self,
        stream: &str,
        texts: &[&str],
        keys: &[u64],
        seed: RunSeed,
    ) -> Result<Noisy> {
        use rayon::prelude::*;
        let label = format!("{stream}/{}", self.id());
        let perturbed = texts
            .par_iter()
            .zip(keys)
            .map(|(text, &key)| {
                self.perturbation
                    .apply(text, &mut seed.rng_for_item(&label, key))
            })
            .collect::<std::result::Result<Vec<_>, PerturbError>>()?;
        let mut tally = Tally {
            texts: texts.len(),
            ..Tally::default()
        };
        for (p, clean) in perturbed.iter().zip(texts) {
            tally.changed += usize::from(p.text != *clean);
            if let Provenance::Noise { units, touched } = p.provenance {
                let (u, t) = tally.units.get_or_insert((0, 0));
                *u += units;
                *t += touched;
            }
        }
        Ok(Noisy {
            texts: perturbed.into_iter().map(|p| p.text).collect(),
            tally,
        })
    }
}

fn no_wordnet() -> std::result::Result<std::sync::Arc<WordNet>, PerturbError> {
    Err(PerturbError::Spec(
        "a noise channel is a rate-parameterised kind; WordNet kinds have no rate".into(),
    ))
}

/// Every condition of `options`, checked. A rate of 0 is run like any other: its texts equal the
/// clean ones, so it costs nothing and its retention is the identity's, exactly 1.
pub(crate) fn build(options: &Options) -> Result<Vec<Condition>> {
    let invalid = |message: String| NoiseError::Perturb(PerturbError::Spec(message));
    let mut out = Vec::new();
    for channel in &options.channels {
        let kind = PerturbationSpec::KINDS
            .iter()
            .find(|k| k.name == channel.as_str())
            .filter(|k| k.parameters.iter().any(|p| p.name == "rate"))
            .ok_or_else(|| {
                let rated: Vec<&str> = PerturbationSpec::KINDS
                    .iter()
                    .filter(|k| k.parameters.iter().any(|p| p.name == "rate"))
                    .map(|k| k.name)
                    .collect();
                invalid(format!(
                    "noise channel {channel:?}: not a perturbation kind with a rate; channels: {}",
                    rated.join(", ")
                ))
            })?;
        for &rate in &options.rates {
            if !(0.0..=1.0).contains(&rate) {
                return Err(invalid(format!("rates: {rate} is not in [0, 1]")));
            }
            out.push(Condition {
                channel: kind.name.to_owned(),
                axis: Axis::Rate,
                level: rate,
                perturbation: PerturbationSpec {
                    kind: kind.name.to_owned(),
                    params: vec![("rate".into(), rate.to_string())],
                }
                .build(no_wordnet)?,
            });
        }
    }
    if !(0.0..=1.0).contains(&options.length_position) {
        return Err(invalid(format!(
            "length_position: {} is not in [0, 1]",
            options.length_position
        )));
    }
    for &tokens in &options.lengths {
        out.push(Condition {
            channel: PADDING.to_owned(),
            axis: Axis::Tokens,
            level: tokens as f64,
            perturbation: PerturbationSpec {
                kind: PADDING.to_owned(),
                params: vec![
                    ("tokens".into(), tokens.to_string()),
                    ("pos".into(), options.length_position.to_string()),
                ],
            }
            .build(no_wordnet)?,
        });
    }
    // only level 0 is allowed: the clean evaluation alone, with its interval
    if out.is_empty() {
        return Err(invalid(
            "no condition to run: give a channel and a rate, or a length".into(),
        ));
    }
    if options.pair_budget == 0 {
        return Err(invalid("pair_budget: must be at least 1".into()));
    }
    for (name, cap) in [
        ("max_queries", options.max_queries),
        ("max_docs", options.max_docs),
        ("max_rows", options.max_rows),
        ("max_reference", options.max_reference),
    ] {
        if cap == Some(0) {
            return Err(invalid(format!(
                "{name}: 0 leaves nothing to score; at least 1, or none for all"
            )));
        }
    }
    Ok(out)
}

/// The channels of `conditions` in order of first appearance, each with its axis and the
/// indices of its conditions.
pub(crate) fn channels(conditions: &[Condition]) -> Vec<(String, Axis, Vec<usize>)> {
    let mut out: Vec<(String, Axis, Vec<usize>)> = Vec::new();
    for (i, c) in conditions.iter().enumerate() {
        match out.iter_mut().find(|(name, _, _)| *name == c.channel) {
            Some((_, _, members)) => members.push(i),
            None => out.push((c.channel.clone(), c.axis, vec![i])),
        }
    }
    out
}

/// Area under `(level, retention)` points (ascending levels, the first at 0) by the trapezoid
/// rule, divided by the largest level: 1 when every retention is 1.
pub(crate) fn area(points: impl Iterator<Item = (f64, f64)>) -> f64 {
    let points: Vec<(f64, f64)> = points.collect();
    let Some(&(last, _)) = points.last() else {
        return f64::NAN;
    };
    if last <= 0.0 {
        return points[0].1;
    }
    points
        .windows(2)
        .map(|w| (w[1].0 - w[0].0) * (w[0].1 + w[1].1) / 2.0)
        .sum::<f64>()
        / last
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn area_is_one_without_loss_and_a_half_for_a_linear_loss() {
        assert_eq!(area([(0.0, 1.0), (0.1, 1.0), (0.4, 1.0)].into_iter()), 1.0);
        assert!((area([(0.0, 1.0), (0.5, 0.5), (1.0, 0.0)].into_iter()) - 0.5).abs() < 1e-12);
        // uneven spacing is weighted by the spacing
        let a = area([(0.0, 1.0), (0.1, 0.9), (0.4, 0.6)].into_iter());
        assert!((a - (0.1 * 0.95 + 0.3 * 0.75) / 0.4).abs() < 1e-12);
    }

    #[test]
    fn options_are_checked_before_any_work() {
        let with = |f: &dyn Fn(&mut Options)| {
            let mut o = Options::default();
            f(&mut o);
            build(&o).err().map(|e| e.to_string())
        };
        assert_eq!(build(&Options::default()).unwrap().len(), 12 * 5 + 3);
        assert!(with(&|o| o.channels = vec!["typos".into()])
            .unwrap()
            .contains("keyboard-typos"));
        assert!(with(&|o| o.channels = vec!["jumbling".into()])
            .unwrap()
            .contains("not a perturbation kind with a rate"));
        assert!(with(&|o| o.rates = vec![1.5]).unwrap().contains("1.5"));
        assert!(with(&|o| o.lengths = vec![1_000_000])
            .unwrap()
            .contains("tokens"));
        assert!(with(&|o| o.length_position = 2.0)
            .unwrap()
            .contains("length_position"));
        assert!(with(&|o| {
            o.channels.clear();
            o.lengths.clear();
        })
        .unwrap()
        .contains("no condition"));
    }
}
