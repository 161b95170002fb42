//! The paraphrase and judge prompts, and how an answer becomes a paraphrase.

use serde::{Deserialize, Serialize};

use sage_llm::ChatMessage;

/// Which paraphrase prompt.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PromptStyle {
    /// English datasets.
    English,
    /// Any language: the rewrite must stay in the input's language.
    Multilingual,
}

const SYSTEM: &str = "You rewrite texts. You answer with the rewritten text only.";

const ENGLISH: &str = "Paraphrase the text below. Keep its meaning exactly: the same facts, \
the same claims, nothing added and nothing left out. Change the wording and the sentence \
structure. Answer with one paraphrase only: no alternatives, no explanations, no notes, no \
quotation marks.";

const MULTILINGUAL: &str = "Paraphrase the text below in the same language as the text. Keep \
its meaning exactly: the same facts, the same claims, nothing added and nothing left out. Change \
the wording and the sentence structure. Answer with one paraphrase only, in the language of the \
text: no translation, no alternatives, no explanations, no notes, no quotation marks.";

impl PromptStyle {
    /// The instruction text (recorded in reports and part of the cache key).
    pub fn instruction(&self) -> &'static str {
        match self {
            PromptStyle::English => ENGLISH,
            PromptStyle::Multilingual => MULTILINGUAL,
        }
    }

    /// The messages asking to paraphrase `text`. The text comes last, so every request shares
    /// the system prompt and instruction as a prefix.
    pub fn messages(&self, text: &str) -> Vec<ChatMessage> {
        vec![
            ChatMessage::system(SYSTEM),
            ChatMessage::user(format!("{}\n\nText: {text}", self.instruction())),
        ]
    }
}

/// The judge's instruction: a 0–5 rating of semantic similarity, as in the STS annotation
/// guidelines.
pub const JUDGE_INSTRUCTION: &str = "Rate how similar in meaning the two sentences below are, \
on a scale from 0 to 5: 0 = completely different topics, 1 = not equivalent but on the same \
topic, 2 = not equivalent but share some details, 3 = roughly equivalent but some important \
information differs or is missing, 4 = mostly equivalent, only unimportant details differ, \
5 = completely equivalent, they mean the same thing. Answer with the number only.";

/// The messages asking the judge to rate `a` against `b`.
pub fn judge_messages(a: &str, b: &str) -> Vec<ChatMessage> {
    vec![
        ChatMessage::system("You are a careful annotator of semantic similarity."),
        ChatMessage::user(format!(
            "{JUDGE_INSTRUCTION}\n\nSentence 1: {a}\nSentence 2: {b}"
        )),
    ]
}

/// The rating an answer opens with (reasoning blocks removed, an optional "Rating:" or
/// "Score:" label and markdown emphasis allowed), when it lies in 0–5. Only the opening counts:
/// a model that answers with prose ("The two sentences are not equivalent on a scale of 0 to
/// 5") did not rate, and reading its first digit would record a 0 it never gave.
pub fn parse_rating(answer: &str) -> Option<f64> {
    let answer = strip_reasoning(answer);
    let mut rest = answer.trim_start().trim_start_matches(['*', '_', '#', ' ']);
    for label in ["rating", "score", "similarity"] {
        if rest.len() >= label.len() && rest[..label.len()].eq_ignore_ascii_case(label) {
            rest = rest[label.len()..].trim_start_matches([':', ' ', '*', '_']);
            break;
        }
    }
    let number: String = rest
        .chars()
        .take_while(|c| c.is_ascii_digit() || *c == '.')
        .collect();
    let after = rest[number.len()..].chars().next();
    // "4 out of 5", "4/5", "4." end the number; "4th" or "45" do not
    if after.is_some_and(|c| c.is_alphanumeric()) {
        return None;
    }
    let value: f64 = number.trim_end_matches('.').parse().ok()?;
    (0.0..=5.0).contains(&value).then_some(value)
}

/// Removes reasoning blocks (`<think>…</think>`, `<thinking>…</thinking>`, `<reasoning>…`):
/// reasoning models put their deliberation there, not the answer. An unterminated block
/// swallows the rest (the answer never came).
pub fn strip_reasoning(answer: &str) -> String {
    let mut out = answer.to_owned();
    for tag in ["think", "thinking", "reasoning"] {
        let open = format!("<{tag}>");
        let close = format!("</{tag}>");
        while let Some(start) = out.find(&open) {
            match out[start..].find(&close) {
                Some(end) => out.replace_range(start..start + end + close.len(), ""),
                None => out.truncate(start),
            }
        }
        // a closing tag with no opening one: the template opened the block in the prompt
        if let Some(end) = out.find(&close) {
            out.replace_range(..end + close.len(), "");
        }
    }
    out
}

/// The paraphrase in an answer: reasoning removed, a lead-in line such as "Here is the
/// paraphrase:" dropped, a `Paraphrase:` label and wrapping quotes the input did not have
/// removed, whitespace trimmed. Empty when nothing is left.
pub fn clean_answer(answer: &str, input: &str) -> String {
    let mut text = strip_reasoning(answer).trim().to_owned();
    if let Some((first, rest)) = text.split_once('\n') {
        let first = first.trim();
        if first.ends_with(':') && !rest.trim().is_empty() {
            text = rest.trim().to_owned();
        }
    }
    for label in [
        "Paraphrase:",
        "Paraphrased text:",
        "Rewritten text:",
        "Original text:",
        "Original:",
        "Text:",
    ] {
        let labelled = text
            .get(..label.len())
            .is_some_and(|head| head.eq_ignore_ascii_case(label));
        if labelled && text.len() > label.len() {
            text = text[label.len()..].trim().to_owned();
        }
    }
    // one-paragraph input: what follows the first blank line is notes
    if !input.contains("\n\n") {
        if let Some((first, _)) = text.split_once("\n\n") {
            text = first.trim().to_owned();
        }
    }
    let input = input.trim();
    for (open, close) in [('"', '"'), ('“', '”'), ('\'', '\'')] {
        if text.len() >= 2
            && text.starts_with(open)
            && text.ends_with(close)
            && !(input.starts_with(open) && input.ends_with(close))
        {
            text = text[open.len_utf8()..text.len() - close.len_utf8()]
                .trim()
                .to_owned();
        }
    }
    // a lead-in with nothing after it is no paraphrase
    if text.ends_with(':') {
        text.clear();
    }
    text
}

/// Whether `answer` repeats a clause of `instruction` (of four words or more) that `input`
/// does not contain: a small model sometimes answers with the prompt's own words ("Same facts,
/// same claims, nothing added and nothing left out."), which is no paraphrase of anything.
pub fn echoes_instruction(answer: &str, input: &str, instruction: &str) -> bool {
    let normal = |t: &str| {
        t.to_lowercase()
            .split(|c: char| !c.is_alphanumeric())
            .filter(|w| !w.is_empty())
            .collect::<Vec<_>>()
            .join(" ")
    };
    let (answer, input) = (normal(answer), normal(input));
    instruction
        .split(['.', ':', ',', ';'])
        .map(normal)
        .filter(|clause| clause.split(' ').count() >= 4)
        .any(|clause| {
            let within = |t: &str| format!(" {t} ").contains(&format!(" {clause} "));
            within(&answer) && !within(&input)
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_repeating_the_instruction_are_caught() {
        let instruction = PromptStyle::English.instruction();
        let echo = "Same facts, same claims, nothing added and nothing left out.";
        assert!(echoes_instruction(
            echo,
            "It s just rap lyrics",
            instruction
        ));
        assert!(echoes_instruction(
            "Keep its meaning exactly! Dogs bark.",
            "Dogs bark.",
            instruction
        ));
        // a real paraphrase, and a clause the input itself contains, pass
        assert!(!echoes_instruction(
            "Barking is what dogs do.",
            "Dogs bark.",
            instruction
        ));
        assert!(!echoes_instruction(
            "Nothing added and nothing left out, the budget stands.",
            "The budget stands: nothing added and nothing left out.",
            instruction
        ));
        // short clauses ("no notes") are ordinary words
        assert!(!echoes_instruction(
            "He left no notes.",
            "No notes were left.",
            instruction
        ));
    }

    #[test]
    fn reasoning_blocks_are_removed() {
        assert_eq!(
            strip_reasoning("<think>hmm\nok</think>A cat sat."),
            "A cat sat."
        );
        assert_eq!(
            strip_reasoning("A <think>x</think>b<think>y</think>c"),
            "A bc"
        );
        assert_eq!(
            strip_reasoning("so...</think>\nThe answer."),
            "\nThe answer."
        );
        assert_eq!(strip_reasoning("<think>never closed"), "");
    }

    #[test]
    fn answers_are_cleaned() {
        assert_eq!(
            clean_answer(
                "Here is the paraphrase:\n\"A feline rested.\"",
                "The cat sat."
            ),
            "A feline rested."
        );
        assert_eq!(
            clean_answer("Paraphrase: A feline rested.", "x"),
            "A feline rested."
        );
        // quotes the input had stay
        assert_eq!(
            clean_answer("\"Hi,\" he said.", "\"Hello,\" he said."),
            "\"Hi,\" he said."
        );
        assert_eq!(clean_answer("  <think>a</think>  ", "x"), "");
        // labels are compared on character boundaries
        assert_eq!(clean_answer("Pope’s son", "x"), "Pope’s son");
        // notes after a blank line go when the input is one paragraph
        assert_eq!(
            clean_answer("A feline rested.\n\nNote: I changed cat.", "The cat sat."),
            "A feline rested."
        );
        assert_eq!(
            clean_answer("P one.\n\nP two.", "One.\n\nTwo."),
            "P one.\n\nP two."
        );
        assert_eq!(clean_answer("Here is the paraphrase:", "x"), "");
        assert_eq!(
            clean_answer("Original: Four girls doing backbends", "x"),
            "Four girls doing backbends"
        );
    }

    #[test]
    fn ratings_are_parsed() {
        assert_eq!(parse_rating("4"), Some(4.0));
        assert_eq!(
            parse_rating("<think>maybe 7</think> Rating: 3.5."),
            Some(3.5)
        );
        assert_eq!(parse_rating("**Score**: 2"), Some(2.0));
        assert_eq!(parse_rating("5/5 - they mean the same"), Some(5.0));
        assert_eq!(parse_rating("4.\n\nThe sentences differ in..."), Some(4.0));
        assert_eq!(parse_rating("7"), None);
        assert_eq!(parse_rating("none"), None);
        assert_eq!(parse_rating("45"), None);
        assert_eq!(parse_rating("3rd"), None);
        // prose mentioning the scale is not a rating (SmolLM2-135M answers like this)
        assert_eq!(
            parse_rating("The two sentences are not equivalent on a scale of 0 to 5,"),
            None
        );
    }

    #[test]
    fn the_text_comes_last() {
        let m = PromptStyle::English.messages("Dogs bark.");
        assert!(m[1].content.ends_with("Text: Dogs bark."));
        assert!(PromptStyle::Multilingual
            .instruction()
            .contains("same language"));
    }
}
