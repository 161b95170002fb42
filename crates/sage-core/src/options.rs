//! Options with documented ranges, checked once where every caller passes (linfa's
//! `ParamGuard`): the `sage` flags, `--options` JSON, bench.toml and Python keywords all reach a
//! task through its options struct, so its `check` is the one place a range is stated and
//! enforced. The command line only spells options as flags, and asks a suite to check them
//! (`Suite::check_options`) before it loads a model.

use std::fmt::Display;
use std::ops::RangeInclusive;

use crate::{Result, SageError};

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

/// [`within`] for an option that may be unset (unset means its documented default).
pub fn within_if_set<T: PartialOrd + Display>(
    name: &str,
    value: Option<T>,
    range: RangeInclusive<T>,
) -> Result<()> {
    value.map_or(Ok(()), |v| within(name, v, range))
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
        assert!(within_if_set::<usize>("max_rows", None, 1..=10).is_ok());
        assert!(within_if_set("max_rows", Some(0usize), 1..=10).is_err());
        assert!(at_least("margin", 0.0, 0.0).is_ok() && at_least("margin", 7e300, 0.0).is_ok());
        assert_eq!(
            at_least("margin", -1.0, 0.0).unwrap_err().to_string(),
            "invalid argument: margin = -1 is below its least value 0"
        );
        assert!(at_least("margin", f64::NAN, 0.0).is_err());
    }
}
