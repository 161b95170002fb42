//! The paraphrase and judge prompts, and how an answer becomes a paraphrase.

use serde::{Deserialize, Serialize};

use sage_llm::ChatMessage;

/// Which paraphrase prompt.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PromptStyle {
    /// English datasets; a text of another language gets the multilingual prompt naming its
    /// language.
    English,
    /// Any language: the rewrite must stay in the input's language (named when the row says
    /// which it is).
    Multilingual,
    /// Another wording of the instruction: the prompt-sensitivity analysis (the paper's Table
    /// 12) runs PTEB once per wording. `{language}` in it is replaced by the text's language;
    /// a wording without it rewrites English texts only.
    Wording {
        /// Its name in reports (`default`, `variant-1`, a user's file name).
        name: String,
        /// The instruction.
        instruction: String,
    },
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

/// The multilingual prompt when the row names its language: a small model told "the same
/// language" often answers in English; told "Swahili" it stays.
const MULTILINGUAL_NAMED: &str = "The text below is in {language}. Paraphrase it in \
{language}. Keep its meaning exactly: the same facts, the same claims, nothing added and \
nothing left out. Change the wording and the sentence structure. Answer with one paraphrase \
only, in {language}: no translation, no alternatives, no explanations, no notes, no quotation \
marks.";

/// The wordings shipped for the prompt-sensitivity analysis, as (name, instruction): the
/// default English instruction and two rewordings of it (ours: the paper's variants were
/// written by GPT-5 from its own default prompt, which it prints as an image only). Each keeps
/// the four demands — same meaning, new wording, one answer, nothing else — in other words.
pub const SHIPPED_WORDINGS: [(&str, &str); 3] = [
    ("default", ENGLISH),
    (
        "variant-1",
        "Rewrite the following text in different words. The rewrite must mean exactly the same \
thing: keep every fact and every claim, add nothing, drop nothing. Vary the vocabulary and the \
sentence structure. Reply with the rewritten text alone, without quotation marks, comments or \
alternatives.",
    ),
    (
        "variant-2",
        "You are a careful editor. Restate the text below so that a reader learns precisely the \
same information from it, using other words and another sentence structure. Do not add, remove \
or soften anything. Give a single restatement and nothing else: no quotation marks, no \
explanation, no list of options.",
    ),
];

impl PromptStyle {
    /// The shipped wording `name` ([`SHIPPED_WORDINGS`]), or a user's wording read from the
    /// file `name` (its whole text, trimmed; named by the file's stem).
    pub fn wording(name: &str) -> Result<PromptStyle, String> {
        // the default wording is the English prompt itself, so its paraphrases are the cached
        // ones of every English run
        if name == SHIPPED_WORDINGS[0].0 {
            return Ok(PromptStyle::English);
        }
        if let Some((name, instruction)) = SHIPPED_WORDINGS.iter().find(|(n, _)| *n == name) {
            return Ok(PromptStyle::Wording {
                name: (*name).to_owned(),
                instruction: (*instruction).to_owned(),
            });
        }
        let path = std::path::Path::new(name);
        if !path.is_file() {
            let shipped: Vec<&str> = SHIPPED_WORDINGS.iter().map(|(n, _)| *n).collect();
            return Err(format!(
                "prompt {name:?}: neither a shipped wording ({}) nor a file",
                shipped.join(", ")
            ));
        }
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("prompt file {}: {e}", path.display()))?;
        let instruction = text.trim();
        if instruction.is_empty() {
            return Err(format!("prompt file {}: empty", path.display()));
        }
        let stem = path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| name.to_owned());
        Ok(PromptStyle::Wording {
            name: stem,
            instruction: instruction.to_owned(),
        })
    }

    /// The name reports give this prompt.
    pub fn name(&self) -> &str {
        match self {
            PromptStyle::English => "default",
            PromptStyle::Multilingual => "multilingual",
            PromptStyle::Wording { name, .. } => name,
        }
    }

    /// The instruction text for English texts (recorded in reports and part of the cache key).
    pub fn instruction(&self) -> &str {
        match self {
            PromptStyle::English => ENGLISH,
            PromptStyle::Multilingual => MULTILINGUAL,
            PromptStyle::Wording { instruction, .. } => instruction,
        }
    }

    /// The instruction for a text in `language` (any form [`sage_data::languages`] reads;
    /// `None` or English: [`Self::instruction`]). An error when this prompt cannot name the
    /// language: an unknown code, or a wording without `{language}`.
    pub fn instruction_in(&self, language: Option<&str>) -> Result<String, String> {
        let Some(language) = language else {
            return Ok(self.instruction().to_owned());
        };
        let name = sage_data::languages::english_name(language)
            .ok_or_else(|| format!("the prompt cannot name the language {language:?}"))?;
        if name == "English" {
            return Ok(self.instruction().to_owned());
        }
        match self {
            PromptStyle::English | PromptStyle::Multilingual => {
                Ok(MULTILINGUAL_NAMED.replace("{language}", name))
            }
            PromptStyle::Wording {
                name: wording,
                instruction,
            } => {
                if instruction.contains("{language}") {
                    Ok(instruction.replace("{language}", name))
                } else {
                    Err(format!(
                        "the prompt wording {wording:?} cannot name the language of {name} texts: \
                         write {{language}} where it should (\"Paraphrase the {{language}} text \
                         below\")"
                    ))
                }
            }
        }
    }

    /// The messages asking to paraphrase `text` (English). The text comes last, so every
    /// request shares the system prompt and instruction as a prefix.
    pub fn messages(&self, text: &str) -> Vec<ChatMessage> {
        messages_with(self.instruction(), text)
    }
}

/// The messages asking to paraphrase `text` with `instruction`.
pub(crate) fn messages_with(instruction: &str, text: &str) -> Vec<ChatMessage> {
    vec![
        ChatMessage::system(SYSTEM),
        ChatMessage::user(format!("{instruction}\n\nText: {text}")),
    ]
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
