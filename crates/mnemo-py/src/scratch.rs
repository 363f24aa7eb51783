//! `ScratchSchema`: a throwaway PostgreSQL schema (the facade's `mnemo::ScratchSchema`), so
//! Python tests and benchmarks get a fresh store per test on one server, as the Rust tests do.
//! Dropped, with everything in it, by `drop()` or when the object is collected.

use crate::errors::Failure;
use crate::runtime;
use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use std::sync::Mutex;

#[pyclass(module = "mnemo._native", frozen)]
pub struct ScratchSchema {
    inner: Mutex<Option<mnemo::ScratchSchema>>,
    url: String,
}

/// Runs blocking PostgreSQL work off the caller's thread, with the GIL released.
fn off_thread<T: Send + 'static>(
    py: Python<'_>,
    f: impl FnOnce() -> mnemo::Result<T> + Send + 'static,
) -> PyResult<T> {
    let rt = runtime::handle().map_err(|f| f.to_py(py))?;
    py.detach(move || {
        rt.block_on(rt.spawn_blocking(f))
            .map_err(|e| Failure::internal(format!("scratch schema task failed: {e}")))
            .and_then(|r| r.map_err(Failure::from))
    })
    .map_err(|f| f.to_py(py))
}

#[pymethods]
impl ScratchSchema {
    /// Creates an empty schema `<prefix>_<pid>_<n>` in the database of `url`.
    #[new]
    fn new(py: Python<'_>, url: String, prefix: String) -> PyResult<Self> {
        let schema = off_thread(py, move || mnemo::ScratchSchema::create(&url, &prefix))?;
        Ok(Self {
            url: schema.url(),
            inner: Mutex::new(Some(schema)),
        })
    }

    /// The store URL whose tables live in this schema.
    #[getter]
    fn url(&self) -> String {
        self.url.clone()
    }

    /// Drops the schema now (idempotent).
    fn drop(&self, py: Python<'_>) -> PyResult<()> {
        let taken = self
            .inner
            .lock()
            .map_err(|_| PyRuntimeError::new_err("scratch schema state poisoned"))?
            .take();
        if let Some(schema) = taken {
            off_thread(py, move || {
                drop(schema);
                Ok(())
            })?;
        }
        Ok(())
    }
}
