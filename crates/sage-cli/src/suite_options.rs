//! A suite's options from its command line: `--options JSON`, `--option KEY=VALUE`, and the
//! flags that spell single options, laid over each other in that order. Every `sage run`
//! subcommand reads its options through here, so the layering is written once.

use anyhow::{bail, Result};
use serde_json::Value;

/// `--options JSON` and `--option KEY=VALUE`: a suite's options as its own schema spells them
/// (`sage suites` names the schema; an unknown key is an error naming it). Every suite takes
/// them; a shipped suite's flags are aliases of its options, each laid over them when given.
#[derive(Debug, clap::Args)]
pub struct OptionArgs {
    /// The suite's options as one JSON object.
    #[arg(long, value_name = "JSON")]
    options: Option<String>,
    /// One option, KEY=VALUE: VALUE is read as JSON when it is JSON (2, true, [1,2]), else
    /// taken as a string. Repeatable; over --options.
    #[arg(long = "option", value_name = "KEY=VALUE")]
    option: Vec<String>,
}

impl OptionArgs {
    /// `--options` with every `--option` laid over it.
    pub(crate) fn base(&self) -> Result<serde_json::Map<String, Value>> {
        let mut options = match &self.options {
            None => serde_json::Map::new(),
            Some(text) => match serde_json::from_str(text) {
                Ok(Value::Object(map)) => map,
                Ok(other) => bail!("--options: expected a JSON object, got {other}"),
                Err(e) => bail!("--options: not JSON: {e}"),
            },
        };
        for option in &self.option {
            let Some((key, value)) = option.split_once('=').filter(|(k, _)| !k.is_empty()) else {
                bail!("--option {option:?}: expected KEY=VALUE");
            };
            let value =
                serde_json::from_str(value).unwrap_or_else(|_| Value::String(value.to_owned()));
            options.insert(key.to_owned(), value);
        }
        Ok(options)
    }
}

/// A suite's options from its command line: `--options` and `--option` first, then each flag
/// the user gave, under the option it spells. A flag left at its default sets nothing, so the
/// same option given by `--options` stands, and the default lives once, in the suite's options.
pub(crate) struct FlagOptions<'a> {
    /// The subcommand's parsed arguments (what was given, what was defaulted); none for a suite
    /// without a subcommand of its own, whose flags are all optional.
    given: Option<&'a clap::ArgMatches>,
    options: serde_json::Map<String, Value>,
}

impl<'a> FlagOptions<'a> {
    /// The options `base` spells, under flags to come.
    pub(crate) fn new(given: Option<&'a clap::ArgMatches>, base: &OptionArgs) -> Result<Self> {
        Ok(FlagOptions {
            given,
            options: base.base()?,
        })
    }

    /// Whether the flag of clap id `id` was on the command line (not its default).
    fn was_given(&self, id: &str) -> bool {
        self.given
            .is_some_and(|m| m.value_source(id) == Some(clap::parser::ValueSource::CommandLine))
    }

    /// `value` under `key` when the flag `id` was given.
    pub(crate) fn given(&mut self, id: &str, key: &str, value: impl serde::Serialize) -> &mut Self {
        if self.was_given(id) {
            self.set(key, value);
        }
        self
    }

    /// `value` under `key` when there is one (an optional flag, given when `Some`).
    pub(crate) fn some(&mut self, key: &str, value: Option<impl serde::Serialize>) -> &mut Self {
        if let Some(value) = value {
            self.set(key, value);
        }
        self
    }

    /// `value` under `key` of the object option `section` (created when absent), when the flag
    /// `id` was given.
    pub(crate) fn given_in(
        &mut self,
        section: &str,
        id: &str,
        key: &str,
        value: impl serde::Serialize,
    ) -> &mut Self {
        if self.was_given(id) {
            self.set_in(section, key, value);
        }
        self
    }

    /// `value` under `key` of `section` when there is one.
    pub(crate) fn some_in(
        &mut self,
        section: &str,
        key: &str,
        value: Option<impl serde::Serialize>,
    ) -> &mut Self {
        if let Some(value) = value {
            self.set_in(section, key, value);
        }
        self
    }

    fn set(&mut self, key: &str, value: impl serde::Serialize) {
        let value = serde_json::to_value(value).expect("a flag's value is JSON");
        self.options.insert(key.to_owned(), value);
    }

    fn set_in(&mut self, section: &str, key: &str, value: impl serde::Serialize) {
        let value = serde_json::to_value(value).expect("a flag's value is JSON");
        let entry = self
            .options
            .entry(section.to_owned())
            .or_insert_with(|| Value::Object(serde_json::Map::new()));
        if !entry.is_object() {
            // `--options` gave the section as something else: the flag's key replaces it, and
            // the suite names whatever is still wrong
            *entry = Value::Object(serde_json::Map::new());
        }
        entry
            .as_object_mut()
            .expect("made an object above")
            .insert(key.to_owned(), value);
    }

    /// The options, flags laid over `--options` and `--option`.
    pub(crate) fn into_map(self) -> serde_json::Map<String, Value> {
        self.options
    }
}
