//! What every measure asks of its inputs before it computes, said as the core error a caller
//! can name: equal lengths, finite values, enough of them.

use sage_core::{Result, SageError};

pub(crate) fn ensure_same_len(what: &'static str, left: usize, right: usize) -> Result<()> {
    if left == right {
        Ok(())
    } else {
        Err(SageError::LengthMismatch { what, left, right })
    }
}

/// Every value finite: a NaN or an infinity among a measure's inputs would come out as a NaN
/// (printed as `null`) or a wrong number.
pub(crate) fn ensure_finite(what: &'static str, values: &[f64]) -> Result<()> {
    match values.iter().position(|v| !v.is_finite()) {
        None => Ok(()),
        Some(i) => Err(SageError::undefined(
            what,
            format!("value {i} is {}, not a finite number", values[i]),
        )),
    }
}

pub(crate) fn ensure_at_least(what: &'static str, needed: usize, got: usize) -> Result<()> {
    if got >= needed {
        Ok(())
    } else {
        Err(SageError::TooFewValues { what, needed, got })
    }
}
