//! A suite's options from its command line: `--options JSON`, `--option KEY=VALUE`, and the
//! flags that spell single options, laid over each other in that order. Every `sage run`
//! subcommand reads its options through here, so the layering is written once.
//!
//! The flags are not written here: each is read off the suite's options declaration
//! ([`sage_core::suite_options!`], listed by [`sage_suites::Suite::options`]) with its help,
//! range and default, so a suite's option, its flag and its documentation cannot drift apart.
//! A flag only spells an option: its value is read as `--option` reads one (JSON when it is
//! JSON, else a string) and meets the suite's own check, so the error names the option.

use anyhow::{bail, Result};
use clap::parser::ValueSource;
use clap::{Arg, ArgAction, ArgMatches, Command};
use sage_core::OptionInfo;
use serde_json::{Map, Value};

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
    pub(crate) fn base(&self) -> Result<Map<String, Value>> {
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
            options.insert(key.to_owned(), flag_value(value));
        }
        Ok(options)
    }
}

/// A flag's or `--option`'s text as a value: JSON when it is JSON (2, true, [1,2], null), else
/// the text itself.
fn flag_value(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|_| Value::String(text.to_owned()))
}

/// The clap id of the flag that spells the option `key` (ids apart from the subcommand's own:
/// evalrank's `similarity` option is not its `--similarity`).
/// A flag's value: JSON where it parses, else the text; for a list option, text that is not a
/// JSON list is its comma-separated items (`--languages eng,ara`, `--prompts default,my.txt`).
fn list_or_value(option: &OptionInfo, text: &str) -> Value {
    match flag_value(text) {
        Value::Array(items) => Value::Array(items),
        _ if option.default.is_array() => Value::Array(
            text.split(',')
                .map(str::trim)
                .filter(|item| !item.is_empty())
                .map(|item| Value::String(item.to_owned()))
                .collect(),
        ),
        value => value,
    }
}

fn option_id(key: &str) -> String {
    format!("option:{key}")
}

fn unset_id(key: &str) -> String {
    format!("unset:{key}")
}

/// `command` with a flag for each of `options`: its help, range and default from the
/// declaration; a switch for an option whose default is `false`. An option whose flag the
/// command has already (the model's `--cuda` is also PTEB's `cuda`) is read from that flag, not
/// declared twice.
pub(crate) fn with_option_flags(mut command: Command, options: &[OptionInfo]) -> Command {
    for option in options {
        if command
            .get_arguments()
            .any(|a| a.get_long() == Some(option.flag.as_str()))
        {
            continue;
        }
        let mut help = option.help.trim_end_matches('.').to_owned();
        if let Some(range) = &option.range {
            help.push_str(&format!(" ({range})"));
        }
        if option.required {
            help.push_str(" [required, here or in --options]");
        } else if !option.default.is_null() && option.default != Value::Bool(false) {
            help.push_str(&format!(" [default: {}]", shown(&option.default)));
        }
        let mut arg = Arg::new(option_id(&option.key))
            .long(option.flag.clone())
            .help(help);
        arg = if option.default == Value::Bool(false) {
            arg.action(ArgAction::SetTrue)
        } else {
            arg.action(ArgAction::Set)
                .value_name(
                    option
                        .key
                        .rsplit('.')
                        .next()
                        .unwrap_or_default()
                        .to_uppercase(),
                )
                .allow_negative_numbers(true)
        };
        if let Some(env) = &option.env {
            arg = arg.env(env.clone());
        }
        command = command.arg(arg);
        if let Some((flag, unset_help)) = &option.unset_by {
            command = command.arg(
                Arg::new(unset_id(&option.key))
                    .long(flag.clone())
                    .help(unset_help.clone())
                    .action(ArgAction::SetTrue)
                    .conflicts_with(option_id(&option.key)),
            );
        }
    }
    command
}

/// A default as a user would type it: a string without its quotes.
fn shown(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// The options of a run: `--options` and `--option` first, then each of `options`' flags that
/// was given (on the command line, or through its environment variable), under its key (a
/// section's `gate.low_cosine` inside `gate`). A flag not given sets nothing, so the same option
/// from `--options` stands, and the default lives once, in the declaration.
pub(crate) fn options_from(
    options: &[OptionInfo],
    given: &ArgMatches,
    base: &OptionArgs,
) -> Result<Map<String, Value>> {
    let mut map = base.base()?;
    let from_user = |id: &str| {
        matches!(
            given.value_source(id),
            Some(ValueSource::CommandLine | ValueSource::EnvVariable)
        )
    };
    for option in options {
        // the flag declared here, else the command's own flag of that spelling
        let own = option_id(&option.key);
        let id = if given.ids().any(|i| i.as_str() == own) {
            own
        } else {
            option.flag.replace('-', "_")
        };
        if given.ids().any(|i| i.as_str() == id) && from_user(&id) {
            let value = match given.get_raw(&id).and_then(|mut raw| raw.next()) {
                Some(raw) => list_or_value(option, &raw.to_string_lossy()),
                None => Value::Bool(true),
            };
            insert_at(&mut map, &option.key, value);
        }
        let unset = unset_id(&option.key);
        if given.ids().any(|i| i.as_str() == unset) && from_user(&unset) {
            insert_at(&mut map, &option.key, Value::Null);
        }
    }
    Ok(map)
}

/// `value` under the dotted `key` of `map`, making the sections it passes through (a section
/// `--options` gave as something other than an object is replaced: the suite then names what is
/// still wrong).
fn insert_at(map: &mut Map<String, Value>, key: &str, value: Value) {
    match key.split_once('.') {
        None => {
            map.insert(key.to_owned(), value);
        }
        Some((section, rest)) => {
            let entry = map
                .entry(section.to_owned())
                .or_insert_with(|| Value::Object(Map::new()));
            if !entry.is_object() {
                *entry = Value::Object(Map::new());
            }
            insert_at(
                entry.as_object_mut().expect("made an object above"),
                rest,
                value,
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::FromArgMatches;

    #[derive(Debug, clap::Parser)]
    struct Base {
        #[command(flatten)]
        options: OptionArgs,
        /// The command's own switch, which an option of the same spelling reads.
        #[arg(long)]
        cuda: bool,
    }

    fn info(key: &str, default: Value) -> OptionInfo {
        OptionInfo {
            key: key.to_owned(),
            flag: key.rsplit('.').next().unwrap().replace('_', "-"),
            help: format!("The {key}."),
            range: Some("1 to 10".into()),
            default,
            required: false,
            unset_by: None,
            env: None,
        }
    }

    /// Flags lay over `--options` key by key, sections included; a flag not given leaves the
    /// option as `--options` said; a switch sets true; the command's own flag serves the option
    /// of its spelling; an unset switch writes null.
    #[test]
    fn flags_lay_over_the_options_they_spell() {
        let mut truncate = info("truncate_tokens", Value::from(2048));
        truncate.unset_by = Some(("whole-documents".into(), "Do not truncate.".into()));
        let options = [
            info("subsets", Value::from(5)),
            info("max_texts", Value::from(2000)),
            info("gate.low_cosine", Value::from(0.66)),
            info("noisy", Value::Bool(false)),
            info("cuda", Value::Bool(false)),
            truncate,
        ];
        let command = with_option_flags(
            <Base as clap::CommandFactory>::command().no_binary_name(true),
            &options,
        );
        let given = command
            .try_get_matches_from([
                "--options",
                r#"{"subsets": 3, "max_texts": 10, "gate": {"max_share_below": 0.1}}"#,
                "--max-texts",
                "20",
                "--low-cosine",
                "-0.5",
                "--noisy",
                "--cuda",
                "--whole-documents",
            ])
            .unwrap();
        let base = Base::from_arg_matches(&given).unwrap();
        let map = options_from(&options, &given, &base.options).unwrap();
        assert_eq!(
            Value::Object(map),
            serde_json::json!({
                "subsets": 3,
                "max_texts": 20,
                "gate": {"max_share_below": 0.1, "low_cosine": -0.5},
                "noisy": true,
                "cuda": true,
                "truncate_tokens": null,
            })
        );
    }

    /// A list option's flag takes comma-separated items, or a JSON list as before.
    #[test]
    fn a_list_flag_takes_comma_separated_items() {
        let options = [
            info("languages", serde_json::json!([])),
            info("prompts", serde_json::json!([])),
            info("rates", serde_json::json!([0.1])),
        ];
        let command = with_option_flags(
            <Base as clap::CommandFactory>::command().no_binary_name(true),
            &options,
        );
        let given = command
            .try_get_matches_from([
                "--languages",
                "eng, ara",
                "--prompts",
                "default",
                "--rates",
                "[0.2, 0.4]",
            ])
            .unwrap();
        let base = Base::from_arg_matches(&given).unwrap();
        let map = options_from(&options, &given, &base.options).unwrap();
        assert_eq!(
            Value::Object(map),
            serde_json::json!({
                "languages": ["eng", "ara"],
                "prompts": ["default"],
                "rates": [0.2, 0.4],
            })
        );
    }

    /// Help says the range and the default the declaration gives.
    #[test]
    fn help_carries_range_and_default() {
        let command = with_option_flags(Command::new("t"), &[info("subsets", Value::from(5))]);
        let arg = command
            .get_arguments()
            .find(|a| a.get_long() == Some("subsets"))
            .unwrap();
        assert_eq!(
            arg.get_help().unwrap().to_string(),
            "The subsets (1 to 10) [default: 5]"
        );
    }
}
