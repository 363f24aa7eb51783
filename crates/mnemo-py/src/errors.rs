//! The library's errors as Python exceptions. The classes live in `mnemo/errors.py` (one per
//! error kind, all under `mnemo.MnemoError`, carrying `kind`, `message` and `retryable`); this
//! module only picks the class and builds the instance, which needs the GIL.

use pyo3::prelude::*;
use pyo3::PyErr;

/// An error as it leaves the Rust side: the kind's name and the message.
#[derive(Debug, Clone)]
pub struct Failure {
    pub kind: &'static str,
    pub message: String,
}

impl From<mnemo::Error> for Failure {
    fn from(e: mnemo::Error) -> Self {
        Self {
            kind: e.kind().as_str(),
            message: e.to_string(),
        }
    }
}

impl Failure {
    pub fn internal(message: impl Into<String>) -> Self {
        Self {
            kind: mnemo::ErrorKind::Internal.as_str(),
            message: message.into(),
        }
    }

    pub fn unavailable(component: &str, reason: impl Into<String>) -> Self {
        mnemo::Error::Unavailable {
            component: component.into(),
            reason: reason.into(),
        }
        .into()
    }

    pub fn conflict(reason: impl Into<String>) -> Self {
        mnemo::Error::Conflict {
            reason: reason.into(),
        }
        .into()
    }

    pub fn invalid(field: &str, reason: impl Into<String>) -> Self {
        mnemo::Error::invalid(field, reason.into()).into()
    }

    /// The Python exception: the `mnemo.errors` class of this kind (its base `MnemoError`
    /// for a kind the Python side does not know yet).
    pub fn to_py(&self, py: Python<'_>) -> PyErr {
        let build = || -> PyResult<PyErr> {
            let module = py.import("mnemo.errors")?;
            let class = module.getattr("class_of_kind")?.call1((self.kind,))?;
            let value = class.call1((self.message.as_str(),))?;
            Ok(PyErr::from_value(value))
        };
        build().unwrap_or_else(|e| e)
    }
}
