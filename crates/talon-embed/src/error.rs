//! The crate's errors.

use std::path::PathBuf;

/// Why model files or a table could not be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EmbedError {
    /// The model's files are not where they were looked for.
    #[error("embedding model not found: {0}")]
    Missing(String),
    /// A file could not be read or written.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A file could not be read safely (a special file, too large).
    #[error(transparent)]
    Fs(#[from] talon_fs::FsError),
    /// A file is not the pinned one (its SHA-256 differs).
    #[error("{path}: SHA-256 {actual}, expected {expected}")]
    Checksum {
        /// The file.
        path: PathBuf,
        /// What it hashes to.
        actual: String,
        /// The pinned hash.
        expected: String,
    },
    /// A file's content is not what this crate reads.
    #[error("invalid embedding data: {0}")]
    Invalid(String),
    /// `tokenizer.json` is not JSON.
    #[error("invalid embedding data: tokenizer.json: {0}")]
    TokenizerJson(#[source] serde_json::Error),
    /// `model.safetensors` does not parse, or lacks a tensor.
    #[error("invalid embedding data: model.safetensors: {}{source}", lead(.tensor))]
    Safetensors {
        /// The tensor asked for, if the file itself parsed.
        tensor: Option<String>,
        /// Why.
        source: safetensors::SafeTensorError,
    },
}

/// `tensor: `, or nothing.
fn lead(tensor: &Option<String>) -> String {
    tensor
        .as_ref()
        .map(|t| format!("{t}: "))
        .unwrap_or_default()
}

impl EmbedError {
    pub(crate) fn invalid(message: impl Into<String>) -> Self {
        Self::Invalid(message.into())
    }

    pub(crate) fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Self::Io {
            path: path.into(),
            source,
        }
    }
}

/// The crate's result.
pub type Result<T> = std::result::Result<T, EmbedError>;
