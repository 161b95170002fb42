//! # sage-task
//!
//! The one error of the tasks that read data and perturb it: robustness, sensitivity,
//! retrieval, noise and ALIGN-SIM each name [`TaskError`] by an alias (`RobustnessError`, ...),
//! so a caller matches the same variants whichever task failed.
//!
//! It stands below the task crates and above both of its sources, sage-data and sage-perturb,
//! so that data flows one way: perturbing a text needs no dataset reader, and reading a dataset
//! needs no perturbation. (It once lived in sage-perturb, which then depended on sage-data for
//! this enum alone.)
#![deny(missing_docs)]

/// The error of a task that reads data, perturbs it and scores a similarity on it.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TaskError {
    /// Reading the data.
    #[error(transparent)]
    Data(#[from] sage_data::DataError),
    /// Perturbing it.
    #[error(transparent)]
    Perturb(#[from] sage_perturb::PerturbError),
    /// A similarity or measure.
    #[error(transparent)]
    Core(#[from] sage_core::SageError),
    /// Too few usable rows to score.
    #[error("{0}")]
    Insufficient(String),
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each source's error converts with `?` and keeps its own message.
    #[test]
    fn each_source_converts_and_keeps_its_message() {
        let core: TaskError = sage_core::SageError::InvalidArgument("no rows".into()).into();
        assert!(matches!(core, TaskError::Core(_)));
        assert!(core.to_string().contains("no rows"), "{core}");
        let perturb: TaskError = sage_perturb::PerturbError::Spec("unknown kind".into()).into();
        assert!(matches!(perturb, TaskError::Perturb(_)));
        assert_eq!(perturb.to_string(), "unknown kind");
    }
}
