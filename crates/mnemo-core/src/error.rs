//! The one error type of the core crate and the closed set of error kinds that every surface maps.

/// What class of failure an error is. Surfaces (CLI exit codes, HTTP status, MCP error codes) map
/// this set exhaustively, so adding a kind is a breaking change on purpose.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorKind {
    InvalidInput,
    NotFound,
    Conflict,
    Unauthorized,
    RateLimited,
    /// A dependency (model provider, disk, database) is unavailable; retrying may succeed.
    Unavailable,
    /// A model answered, but with output that could not be repaired into what was asked for;
    /// nothing was written, and retrying (or a stronger model) may succeed.
    ModelOutput,
    Internal,
    /// The store's file or database is damaged (not a database, a failed integrity check):
    /// no retry helps; restore a backup or export what still reads (`mnemo doctor`).
    Corrupt,
}

impl ErrorKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorKind::InvalidInput => "invalid_input",
            ErrorKind::NotFound => "not_found",
            ErrorKind::Conflict => "conflict",
            ErrorKind::Unauthorized => "unauthorized",
            ErrorKind::RateLimited => "rate_limited",
            ErrorKind::Unavailable => "unavailable",
            ErrorKind::ModelOutput => "model_output",
            ErrorKind::Internal => "internal",
            ErrorKind::Corrupt => "corrupt",
        }
    }

    pub fn is_retryable(self) -> bool {
        matches!(
            self,
            ErrorKind::Unavailable | ErrorKind::RateLimited | ErrorKind::ModelOutput
        )
    }
}

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("invalid {field}: {reason}")]
    InvalidInput { field: String, reason: String },
    #[error("{what} {id} not found")]
    NotFound { what: &'static str, id: String },
    #[error("conflict: {reason}")]
    Conflict { reason: String },
    #[error("{component} unavailable: {reason}")]
    Unavailable { component: String, reason: String },
    /// The caller asked for more than a configured bound admits right now (a full job queue);
    /// the same request later may succeed.
    #[error("{what} is full: {reason}")]
    RateLimited { what: String, reason: String },
    #[error("storage error: {reason}")]
    Storage { reason: String },
    #[error("model error: {reason}")]
    Model { reason: String },
    #[error("unusable output from {model} during {step}: {reason}")]
    ModelOutput {
        model: String,
        step: String,
        reason: String,
    },
    #[error("internal error: {reason}")]
    Internal { reason: String },
    /// The store's data is damaged: the file is not a database, or a page fails its checks.
    #[error("{what} is damaged: {reason}")]
    Corrupt { what: String, reason: String },
}

impl Error {
    pub fn kind(&self) -> ErrorKind {
        match self {
            Error::InvalidInput { .. } => ErrorKind::InvalidInput,
            Error::NotFound { .. } => ErrorKind::NotFound,
            Error::Conflict { .. } => ErrorKind::Conflict,
            Error::Unavailable { .. } => ErrorKind::Unavailable,
            Error::RateLimited { .. } => ErrorKind::RateLimited,
            Error::ModelOutput { .. } => ErrorKind::ModelOutput,
            Error::Corrupt { .. } => ErrorKind::Corrupt,
            Error::Storage { .. } | Error::Model { .. } | Error::Internal { .. } => {
                ErrorKind::Internal
            }
        }
    }

    pub fn invalid(field: impl Into<String>, reason: impl Into<String>) -> Self {
        Error::InvalidInput {
            field: field.into(),
            reason: reason.into(),
        }
    }

    pub fn not_found(what: &'static str, id: impl ToString) -> Self {
        Error::NotFound {
            what,
            id: id.to_string(),
        }
    }

    pub fn storage(reason: impl ToString) -> Self {
        Error::Storage {
            reason: reason.to_string(),
        }
    }

    pub fn internal(reason: impl ToString) -> Self {
        Error::Internal {
            reason: reason.to_string(),
        }
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;
