use std::path::PathBuf;

/// Errors of sage-embed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EmbedError {
    /// A model file is missing or unreadable.
    #[error("{}: {message}", path.display())]
    File {
        /// The file.
        path: PathBuf,
        /// What went wrong.
        message: String,
    },
    /// A model configuration file is malformed or asks for something unsupported.
    #[error("{}: {message}", path.display())]
    Config {
        /// The file.
        path: PathBuf,
        /// What was wrong.
        message: String,
    },
    /// A model could not be found locally or fetched from the hub.
    #[error("{0}")]
    Resolve(String),
    /// The tokenizer failed.
    #[error("tokenizer: {0}")]
    Tokenizer(String),
    /// A tensor operation failed.
    #[error("candle: {0}")]
    Candle(#[from] candle_core::Error),
    /// The embedding cache failed.
    #[error("embedding cache {}: {message}", path.display())]
    Cache {
        /// The cache file.
        path: PathBuf,
        /// What went wrong.
        message: String,
    },
    /// A remote embedder's provider or server failed, or its spec is malformed (sage-remote).
    #[error(transparent)]
    Remote(#[from] sage_remote::RemoteError),
    /// An error from sage-core.
    #[error(transparent)]
    Core(#[from] sage_core::SageError),
    /// At `--precision int8` a calibration text's vector strayed too far from its float32 one:
    /// the model's activations defeat int8 on this machine.
    #[error(
        "--precision int8: {model}'s int8 vectors keep a lowest cosine of {lowest:.4} against \
         float32 on the {texts} calibration texts, below the {min} they must keep: its \
         activations defeat int8 here; run it at --precision f32 (or auto)",
        min = crate::MIN_COSINE
    )]
    Int8Inaccurate {
        /// The model.
        model: String,
        /// The lowest cosine measured.
        lowest: f64,
        /// Calibration texts embedded.
        texts: usize,
    },
    /// The GPU asked for cannot be used (no GPU, no CUDA in this build, an old driver).
    #[error(transparent)]
    Device(#[from] sage_device::DeviceError),
}

impl From<EmbedError> for sage_core::SageError {
    fn from(e: EmbedError) -> Self {
        match e {
            EmbedError::Core(core) => core,
            other => sage_core::SageError::backend("embedding", other),
        }
    }
}

/// Result alias of sage-embed.
pub type Result<T, E = EmbedError> = std::result::Result<T, E>;

pub(crate) fn file_error(path: impl Into<PathBuf>, message: impl std::fmt::Display) -> EmbedError {
    EmbedError::File {
        path: path.into(),
        message: message.to_string(),
    }
}

pub(crate) fn config_error(
    path: impl Into<PathBuf>,
    message: impl std::fmt::Display,
) -> EmbedError {
    EmbedError::Config {
        path: path.into(),
        message: message.to_string(),
    }
}
