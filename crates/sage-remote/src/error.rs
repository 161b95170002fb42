//! The one error of the remote embedders.

use sage_core::SageError;

/// Why a remote embedder failed.
#[derive(Debug, thiserror::Error)]
pub enum RemoteError {
    /// A remote embedding provider or server failed or answered badly. The provider and message
    /// are redacted ([`sage_redact`]): it never holds a key or a URL password.
    #[error("{provider}: {message}")]
    Remote {
        /// The protocol and server host (`openai at 127.0.0.1:7997`).
        provider: String,
        /// What went wrong, with the server's status and reason.
        message: String,
    },
    /// An error from sage-core.
    #[error(transparent)]
    Core(#[from] SageError),
}

impl From<RemoteError> for SageError {
    fn from(e: RemoteError) -> Self {
        match e {
            RemoteError::Core(core) => core,
            other => SageError::backend("embedding", other),
        }
    }
}

/// Result alias of sage-remote.
pub type Result<T, E = RemoteError> = std::result::Result<T, E>;
