//! A suite's options, declared once ([`suite_options!`](crate::suite_options)): the struct, its defaults, and a table
//! of every field with its help and range. Everything else is read off that one declaration:
//! the `sage run` flags and their help, the range check ([`CheckOptions`]) that the flags,
//! `--options` JSON, bench.toml and Python keywords all meet (linfa's `ParamGuard`), the keys
//! `--options` takes, and the documented defaults (`sage suites` lists them; a test refuses a
//! bench.toml that writes one again).

use std::fmt::Display;
use std::ops::RangeInclusive;

use serde_json::Value;

use crate::{Result, SageError};

/// What an option's value must be, beyond what its type reads. An unset option (an `Option`
/// field's `None`, written `null`) meets every range: it means the documented default.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Range {
    /// Whatever the type reads.
    Any,
    /// A whole number from the first to the second, both included.
    Whole(u64, u64),
    /// A number from the first to the second, both included.
    Between(f64, f64),
    /// A number at least this.
    AtLeast(f64),
}

/// How one option is declared: its range, and how the command line spells it.
#[derive(Clone, Copy, Debug)]
pub struct OptionSpec {
    /// Its range.
    pub range: Range,
    /// The flag, where it is not the key with `-` for `_` (evalrank's `similarity` is
    /// `--vector-similarity`: every suite's `--similarity` names what is evaluated).
    pub flag: Option<&'static str>,
    /// A switch that unsets the option (`--whole-documents` for `truncate_tokens`), with its help.
    pub unset_by: Option<(&'static str, &'static str)>,
    /// Must be given (evalrank's `level`): there is no default to fall back on.
    pub required: bool,
    /// The run's, not an option: the seed comes from the request (`--seed`, `seed=`), so the
    /// field is neither a flag nor a key `--options` takes.
    pub not_an_option: bool,
    /// An object option whose own fields are options too (PTEB's `gate`, `llm`): each is a flag.
    pub section: Option<&'static [OptionField]>,
    /// An environment variable its flag reads when the flag is not given (bench-all hands a
    /// sharded run's paraphrase caches to `sage run pteb` this way).
    pub env: Option<&'static str>,
}

impl OptionSpec {
    const fn of(range: Range) -> OptionSpec {
        OptionSpec {
            range,
            flag: None,
            unset_by: None,
            required: false,
            not_an_option: false,
            section: None,
            env: None,
        }
    }

    /// Any value its type reads.
    pub const fn any() -> OptionSpec {
        OptionSpec::of(Range::Any)
    }

    /// A whole number from `least` to `most`.
    pub const fn whole(least: u64, most: u64) -> OptionSpec {
        OptionSpec::of(Range::Whole(least, most))
    }

    /// A number from `least` to `most`.
    pub const fn between(least: f64, most: f64) -> OptionSpec {
        OptionSpec::of(Range::Between(least, most))
    }

    /// A number at least `least`.
    pub const fn at_least(least: f64) -> OptionSpec {
        OptionSpec::of(Range::AtLeast(least))
    }

    /// The run seed: a field of the struct, not an option.
    pub const fn run_seed() -> OptionSpec {
        let mut spec = OptionSpec::any();
        spec.not_an_option = true;
        spec
    }

    /// An object whose fields are the options `fields` declares.
    pub const fn section(fields: &'static [OptionField]) -> OptionSpec {
        let mut spec = OptionSpec::any();
        spec.section = Some(fields);
        spec
    }

    /// Spelled `--flag` on the command line.
    pub const fn flag(mut self, flag: &'static str) -> OptionSpec {
        self.flag = Some(flag);
        self
    }

    /// Unset by the switch `--flag`, whose help is `help`.
    pub const fn unset_by(mut self, flag: &'static str, help: &'static str) -> OptionSpec {
        self.unset_by = Some((flag, help));
        self
    }

    /// Read from the environment variable `name` when its flag is not given.
    pub const fn env(mut self, name: &'static str) -> OptionSpec {
        self.env = Some(name);
        self
    }

    /// Required: no default.
    pub const fn required(mut self) -> OptionSpec {
        self.required = true;
        self
    }
}

/// One option of a suite, as its declaration states it.
#[derive(Clone, Copy, Debug)]
pub struct OptionField {
    /// Its key in `--options`, bench.toml and Python keywords.
    pub key: &'static str,
    /// What it means: the field's doc comment, which is also the flag's help.
    pub help: &'static str,
    /// Its range and spelling.
    pub spec: OptionSpec,
}

impl OptionField {
    /// The flag that spells it: `--` and the key with `-` for `_`, unless declared otherwise.
    pub fn flag(&self) -> String {
        self.spec
            .flag
            .map_or_else(|| self.key.replace('_', "-"), str::to_owned)
    }

    /// The help as one line: the doc comment's lines joined.
    pub fn help_line(&self) -> String {
        self.help.split_whitespace().collect::<Vec<_>>().join(" ")
    }

    /// The range in words (`1 to 1,000`), or `None` for [`Range::Any`].
    pub fn range_words(&self) -> Option<String> {
        match self.spec.range {
            Range::Any => None,
            Range::Whole(least, most) => Some(format!(
                "{} to {}",
                with_separators(least),
                with_separators(most)
            )),
            Range::Between(least, most) => Some(format!("{least} to {most}")),
            Range::AtLeast(least) => Some(format!("at least {least}")),
        }
    }
}

/// `1000000` as `1,000,000`.
fn with_separators(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// A suite's options, declared with [`suite_options!`](crate::suite_options): the table of its fields.
pub trait SuiteOptions: Default + serde::Serialize {
    /// Every field, in declaration order.
    const FIELDS: &'static [OptionField];

    /// The defaults, as `--options` JSON spells them (the run seed left out).
    fn defaults() -> serde_json::Map<String, Value> {
        let mut map = match serde_json::to_value(Self::default()) {
            Ok(Value::Object(map)) => map,
            _ => serde_json::Map::new(),
        };
        for field in Self::FIELDS.iter().filter(|f| f.spec.not_an_option) {
            map.remove(field.key);
        }
        map
    }
}

/// One option as the front ends show it (`sage suites`, `sage run NAME --help`, the guide): a
/// section's fields are listed each on its own, their keys dotted (`gate.low_cosine`).
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct OptionInfo {
    /// Its key; `section.key` inside a section.
    pub key: String,
    /// The flag that spells it, without `--`.
    pub flag: String,
    /// What it means, one line.
    pub help: String,
    /// Its range in words, when it has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub range: Option<String>,
    /// Its default (`null`: unset, as the help says what that means).
    pub default: Value,
    /// Must be given.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub required: bool,
    /// The switch that unsets it, and that switch's help.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unset_by: Option<(String, String)>,
    /// The environment variable its flag reads when not given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub env: Option<String>,
}

/// Every option `T` declares, with its default, sections flattened: what a front end needs to
/// spell them as flags and to document them.
pub fn describe<T: SuiteOptions>() -> Vec<OptionInfo> {
    let defaults = Value::Object(T::defaults());
    let mut out = Vec::new();
    describe_in(T::FIELDS, &defaults, "", &mut out);
    out
}

fn describe_in(fields: &[OptionField], defaults: &Value, prefix: &str, out: &mut Vec<OptionInfo>) {
    for field in fields.iter().filter(|f| !f.spec.not_an_option) {
        let default = defaults.get(field.key).cloned().unwrap_or(Value::Null);
        if let Some(section) = field.spec.section {
            describe_in(section, &default, &format!("{prefix}{}.", field.key), out);
            continue;
        }
        out.push(OptionInfo {
            key: format!("{prefix}{}", field.key),
            flag: field.flag(),
            help: field.help_line(),
            range: field.range_words(),
            default,
            required: field.spec.required,
            unset_by: field
                .spec
                .unset_by
                .map(|(flag, help)| (flag.to_owned(), help.to_owned())),
            env: field.spec.env.map(str::to_owned),
        });
    }
}

/// Checks `value` (a suite's options as JSON) against the ranges `fields` declare, sections
/// included; the error names the option (`gate.low_cosine` inside a section), its value and
/// its range.
pub fn check_fields(fields: &[OptionField], value: &Value) -> Result<()> {
    check_fields_in(fields, value, "")
}

fn check_fields_in(fields: &[OptionField], value: &Value, prefix: &str) -> Result<()> {
    for field in fields {
        let name = format!("{prefix}{}", field.key);
        let Some(given) = value.get(field.key).filter(|v| !v.is_null()) else {
            continue;
        };
        if let Some(section) = field.spec.section {
            check_fields_in(section, given, &format!("{name}."))?;
            continue;
        }
        let number = || {
            given.as_f64().ok_or_else(|| {
                SageError::InvalidArgument(format!("{name} = {given} is not a number"))
            })
        };
        match field.spec.range {
            Range::Any => {}
            Range::Whole(least, most) => match given.as_u64() {
                Some(n) => within(&name, n, least..=most)?,
                None => {
                    return Err(SageError::InvalidArgument(format!(
                        "{name} = {given} is outside its range {least} to {most}"
                    )))
                }
            },
            Range::Between(least, most) => within(&name, number()?, least..=most)?,
            Range::AtLeast(least) => at_least(&name, number()?, least)?,
        }
    }
    Ok(())
}

/// The options every field of `fields` requires that `options` lacks, by key.
pub fn missing_required(
    fields: &[OptionField],
    options: &serde_json::Map<String, Value>,
) -> Vec<&'static str> {
    fields
        .iter()
        .filter(|f| f.spec.required && options.get(f.key).is_none_or(Value::is_null))
        .map(|f| f.key)
        .collect()
}

/// Declares a suite's options once: the struct with each field's doc comment, its default and
/// its [`OptionSpec`], written as
///
/// ```
/// sage_core::suite_options! {
///     /// Task 4's options.
///     #[derive(Clone, Debug, PartialEq)]
///     pub struct Options {
///         /// Subsets per dataset.
///         pub subsets: usize = 5, sage_core::OptionSpec::whole(1, 1_000);
///         /// Rows sampled per dataset; all when `None`.
///         pub max_rows: Option<usize> = None, sage_core::OptionSpec::whole(1, 10_000_000);
///     }
/// }
/// use sage_core::{CheckOptions, SuiteOptions};
/// assert_eq!(Options::FIELDS[0].key, "subsets");
/// assert!(Options { subsets: 0, ..Options::default() }.check().is_err());
/// ```
///
/// gives the struct (serde: absent fields keep their defaults, unknown ones are an error), its
/// `Default`, its [`SuiteOptions`] table and its [`CheckOptions`]. A check that ranges cannot
/// state is named after the struct: `also_check = path;` (a `fn(&Options) -> Result<()>`).
#[macro_export]
macro_rules! suite_options {
    (
        $(#[$meta:meta])*
        $vis:vis struct $name:ident {
            $(
                $(#[doc = $doc:literal])*
                $(#[serde($($serde:tt)*)])*
                $fvis:vis $field:ident : $ty:ty = $default:expr , $spec:expr ;
            )*
        }
        $(also_check = $extra:path;)?
    ) => {
        $(#[$meta])*
        #[derive(serde::Serialize, serde::Deserialize)]
        #[serde(default, deny_unknown_fields)]
        $vis struct $name {
            $(
                $(#[doc = $doc])*
                $(#[serde($($serde)*)])*
                $fvis $field: $ty,
            )*
        }

        impl Default for $name {
            fn default() -> Self {
                $name {
                    $($field: $default,)*
                }
            }
        }

        impl $crate::SuiteOptions for $name {
            const FIELDS: &'static [$crate::OptionField] = &[
                $(
                    $crate::OptionField {
                        key: stringify!($field),
                        help: concat!($($doc, "\n",)*),
                        spec: $spec,
                    },
                )*
            ];
        }

        impl $crate::CheckOptions for $name {
            fn check(&self) -> $crate::Result<()> {
                let value = $crate::__private::serde_json::to_value(self)
                    .map_err(|e| $crate::SageError::InvalidArgument(e.to_string()))?;
                $crate::check_fields(<Self as $crate::SuiteOptions>::FIELDS, &value)?;
                $($extra(self)?;)?
                Ok(())
            }
        }
    };
}

/// A task's options whose values have documented ranges.
pub trait CheckOptions {
    /// Every value within its documented range, else an error naming the option, the value and
    /// the range; called before any data is read.
    fn check(&self) -> Result<()>;
}

/// `name = value` within `range`, else an error saying so.
pub fn within<T: PartialOrd + Display>(
    name: &str,
    value: T,
    range: RangeInclusive<T>,
) -> Result<()> {
    if range.contains(&value) {
        Ok(())
    } else {
        Err(SageError::InvalidArgument(format!(
            "{name} = {value} is outside its range {} to {}",
            range.start(),
            range.end()
        )))
    }
}

/// `name = value` at least `least`, for an option with no upper bound, else an error saying so
/// (a NaN is refused too).
pub fn at_least<T: PartialOrd + Display>(name: &str, value: T, least: T) -> Result<()> {
    if value >= least {
        Ok(())
    } else {
        Err(SageError::InvalidArgument(format!(
            "{name} = {value} is below its least value {least}"
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_out_of_range_value_is_named_with_its_range() {
        assert!(within("subsets", 5usize, 1..=1_000).is_ok());
        assert!(within("subsets", 1usize, 1..=1_000).is_ok());
        assert!(within("subsets", 1_000usize, 1..=1_000).is_ok());
        assert_eq!(
            within("subsets", 0usize, 1..=1_000)
                .unwrap_err()
                .to_string(),
            "invalid argument: subsets = 0 is outside its range 1 to 1000"
        );
        assert!(within("margin", f64::NAN, 0.0..=5.0).is_err());
        // an unset option meets its range; a set one is checked
        let max_rows = [OptionField {
            key: "max_rows",
            help: "",
            spec: OptionSpec::whole(1, 10),
        }];
        assert!(check_fields(&max_rows, &serde_json::json!({"max_rows": null})).is_ok());
        assert!(check_fields(&max_rows, &serde_json::json!({"max_rows": 0})).is_err());
        assert!(at_least("margin", 0.0, 0.0).is_ok() && at_least("margin", 7e300, 0.0).is_ok());
        assert_eq!(
            at_least("margin", -1.0, 0.0).unwrap_err().to_string(),
            "invalid argument: margin = -1 is below its least value 0"
        );
        assert!(at_least("margin", f64::NAN, 0.0).is_err());
    }
}
