//! Negation toggling: affirmative ↔ negative, with a documented rule table.

use std::sync::OnceLock;

use regex::{Captures, Regex};

use crate::{ExperimentRng, Perturbation, Perturbed, Provenance, Result};

/// Auxiliaries and modals that take a following `not`.
const AUXILIARIES: [&str; 16] = [
    "is", "are", "was", "were", "will", "do", "does", "did", "has", "have", "had", "should",
    "could", "would", "must", "can",
];

/// Toggles every negatable auxiliary, both ways, in one left-to-right pass (so nothing is toggled
/// twice). Whole words only, case-insensitive; the replacement keeps the case of the matched first
/// letter (an all-capital match stays all-capital).
///
/// | matched | becomes |
/// |---|---|
/// | `X not` for X in is, are, was, were, will, do, does, did, has, have, had, should, could, would, must | `X` |
/// | `cannot`, `can not` | `can` |
/// | `Xn't` (same X), `can't`, `won't` — straight or curly apostrophe | `X`, `can`, `will` |
/// | `X` (same X) | `X not` |
/// | `can` | `cannot` |
///
/// Like the reference's regexes this is lexical: "free will" becomes "free will not". A text
/// without any of these words is returned unchanged (the provenance then lists no toggle).
#[derive(Clone, Copy, Debug, Default)]
pub struct NegationToggle;

fn pattern() -> &'static Regex {
    static PATTERN: OnceLock<Regex> = OnceLock::new();
    PATTERN.get_or_init(|| {
        let aux = AUXILIARIES.join("|");
        let negatable = AUXILIARIES[..15].join("|");
        // Order matters: the regex takes the first alternative that matches at a position.
        Regex::new(&format!(
            r"(?i)\b(?:(?P<contracted>{negatable}|ca|wo)n['’]t\b|(?P<cannot>cannot|can\s+not)\b|(?P<negated>{negatable})\s+not\b|(?P<plain>{aux})\b)"
        ))
        .expect("negation pattern is valid")
    })
}

fn toggled(caps: &Captures<'_>) -> String {
    if let Some(stem) = caps.name("contracted") {
        match stem.as_str().to_ascii_lowercase().as_str() {
            "ca" => "can".to_owned(),
            "wo" => "will".to_owned(),
            other => other.to_owned(),
        }
    } else if caps.name("cannot").is_some() {
        "can".to_owned()
    } else if let Some(aux) = caps.name("negated") {
        aux.as_str().to_ascii_lowercase()
    } else {
        let aux = caps["plain"].to_ascii_lowercase();
        if aux == "can" {
            "cannot".to_owned()
        } else {
            format!("{aux} not")
        }
    }
}

fn with_case_of(original: &str, replacement: String) -> String {
    let letters: Vec<char> = original.chars().filter(|c| c.is_alphabetic()).collect();
    if letters.len() > 1 && letters.iter().all(|c| c.is_uppercase()) {
        return replacement.to_uppercase();
    }
    match original.chars().next() {
        Some(first) if first.is_uppercase() => {
            let mut chars = replacement.chars();
            chars
                .next()
                .map(|c| c.to_uppercase().chain(chars).collect())
                .unwrap_or_default()
        }
        _ => replacement,
    }
}

/// One toggle applied by [`NegationToggle`].
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Toggle {
    /// Byte offset of the match in the original text.
    pub at: usize,
    /// The matched text.
    pub from: String,
    /// Its replacement.
    pub to: String,
}

impl Perturbation for NegationToggle {
    fn id(&self) -> String {
        "negation-toggle".to_owned()
    }

    fn apply(&self, text: &str, _rng: &mut ExperimentRng) -> Result<Perturbed> {
        let mut toggles = Vec::new();
        let out = pattern().replace_all(text, |caps: &Captures<'_>| {
            let whole = caps.get(0).expect("group 0 always matches");
            let to = with_case_of(whole.as_str(), toggled(caps));
            toggles.push(Toggle {
                at: whole.start(),
                from: whole.as_str().to_owned(),
                to: to.clone(),
            });
            to
        });
        Ok(Perturbed {
            text: out.into_owned(),
            provenance: Provenance::NegationToggle { toggles },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sage_core::RunSeed;

    fn toggle(text: &str) -> String {
        NegationToggle
            .apply(text, &mut RunSeed(0).rng("n"))
            .unwrap()
            .text
    }

    #[test]
    fn toggles_both_ways_once() {
        assert_eq!(toggle("The sky is blue."), "The sky is not blue.");
        assert_eq!(toggle("The sky is not blue."), "The sky is blue.");
        assert_eq!(
            toggle("It isn't here and they can't stay."),
            "It is here and they can stay."
        );
        assert_eq!(
            toggle("We cannot go, we can not stay, we can swim."),
            "We can go, we can stay, we cannot swim."
        );
        assert_eq!(
            toggle("She won’t leave; he will."),
            "She will leave; he will not."
        );
        assert_eq!(
            toggle("They did not know, he does know."),
            "They did know, he does not know."
        );
        assert_eq!(
            toggle("Prices have risen; costs had not."),
            "Prices have not risen; costs had."
        );
        assert_eq!(
            toggle("You should, could, would and must."),
            "You should not, could not, would not and must not."
        );
    }

    #[test]
    fn keeps_case_and_whole_words() {
        assert_eq!(
            toggle("Is it? Can it? Isn't it? WAS IT?"),
            "Is not it? Cannot it? Is it? WAS NOT IT?"
        );
        assert_eq!(
            toggle("This island wasn't visible; Dolores does."),
            "This island was visible; Dolores does not."
        );
        assert_eq!(toggle("canned candles"), "canned candles");
    }

    #[test]
    fn provenance_lists_every_toggle() {
        let out = NegationToggle
            .apply("It is not. It is.", &mut RunSeed(0).rng("n"))
            .unwrap();
        let Provenance::NegationToggle { toggles } = out.provenance else {
            panic!()
        };
        assert_eq!(
            toggles,
            vec![
                Toggle {
                    at: 3,
                    from: "is not".into(),
                    to: "is".into()
                },
                Toggle {
                    at: 14,
                    from: "is".into(),
                    to: "is not".into()
                },
            ]
        );
    }
}
