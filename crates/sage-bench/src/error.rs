//! The one error of bench-all: what went wrong, named by the option, the file or the `sage`
//! command it came from.

use std::fmt::Display;
use std::path::{Path, PathBuf};

use sage_core::SageError;

/// Why bench-all stopped. A job that fails does not stop the others: the run goes on and ends in
/// [`BenchError::JobsFailed`], with every other result written.
#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    /// The command line or the configuration asks for something bench-all cannot do; the
    /// message names the option, or the configuration and its field.
    #[error("{0}")]
    Invalid(String),
    /// A file or folder could not be read, written or made, or does not hold what it should.
    #[error("{}: {what}: {detail}", path.display())]
    File {
        /// The file or folder.
        path: PathBuf,
        /// What could not be done with it ("cannot read", "not a result file", ...).
        what: &'static str,
        /// The underlying error's message.
        detail: String,
    },
    /// A `sage` command could not be started, failed, or printed what bench-all cannot read.
    #[error("{command}: {message}")]
    Sage {
        /// The command, as its arguments say it (already redacted where it names a model).
        command: String,
        /// What went wrong: sage's own last line of standard error, where it gave one.
        message: String,
    },
    /// Some jobs failed; their errors were said as they happened, and every other result is
    /// written.
    #[error("{} of {total} jobs failed (their errors are above; every other result is written): {}", failed.len(), failed.join(", "))]
    JobsFailed {
        /// `<similarity> <suite>/<task>` of each failed job.
        failed: Vec<String>,
        /// The jobs this run had.
        total: usize,
    },
    /// A Slurm command could not be run or failed, or a submitted task or the gather job did
    /// not complete; the message names the job and its log.
    #[error("{0}")]
    Slurm(String),
    /// An error of sage-core (writing a file atomically, ...).
    #[error(transparent)]
    Core(#[from] SageError),
}

/// bench-all's result.
pub type Result<T, E = BenchError> = std::result::Result<T, E>;

impl BenchError {
    /// A file error: `what` could not be done with `path`, because of `detail`.
    pub(crate) fn file(path: &Path, what: &'static str, detail: impl Display) -> BenchError {
        BenchError::File {
            path: path.to_owned(),
            what,
            detail: detail.to_string(),
        }
    }

    /// A Slurm command's failure.
    pub(crate) fn slurm(command: &str, message: impl Display) -> BenchError {
        BenchError::Slurm(format!("{command}: {message}"))
    }

    /// A `sage` command's failure.
    pub(crate) fn sage(command: impl Into<String>, message: impl Display) -> BenchError {
        BenchError::Sage {
            command: command.into(),
            message: message.to_string(),
        }
    }
}

/// Returns [`BenchError::Invalid`] with a formatted message: bench-all's `bail!`.
macro_rules! invalid {
    ($($message:tt)*) => {
        return Err($crate::BenchError::Invalid(format!($($message)*)))
    };
}
pub(crate) use invalid;
