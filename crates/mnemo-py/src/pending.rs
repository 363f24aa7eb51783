//! One call's work, as the Python side runs it: `Pending.wait()` blocks with the GIL released
//! (`Memory`), `Pending.future()` hands asyncio a future (`AsyncMemory`). Either way the work
//! runs as a task of one shared tokio runtime, so a Rust panic inside it ends that task only and
//! comes back as `mnemo.InternalError`, never as a crash or a `PanicException`.

use crate::convert::json_to_py;
use crate::errors::Failure;
use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use serde_json::Value;
use std::future::Future;
use std::pin::Pin;
use std::sync::Mutex;

type Work = Pin<Box<dyn Future<Output = Result<Value, Failure>> + Send>>;

/// The runtime every call runs on (the one `pyo3_async_runtimes` drives asyncio futures with).
pub(crate) fn runtime() -> &'static tokio::runtime::Runtime {
    pyo3_async_runtimes::tokio::get_runtime()
}

/// Work not started yet; run it once, by `wait()` or by `future()`.
#[pyclass(module = "mnemo._native", frozen)]
pub struct Pending {
    work: Mutex<Option<Work>>,
}

impl Pending {
    pub fn new(work: impl Future<Output = Result<Value, Failure>> + Send + 'static) -> Self {
        Self {
            work: Mutex::new(Some(Box::pin(work))),
        }
    }

    /// An answer known before any work (a value computed while reading the arguments).
    pub fn ready(value: Result<Value, Failure>) -> Self {
        Self::new(async move { value })
    }

    fn take(&self) -> PyResult<Work> {
        self.work
            .lock()
            .map_err(|_| PyRuntimeError::new_err("this call's state is poisoned"))?
            .take()
            .ok_or_else(|| PyRuntimeError::new_err("this call was already run"))
    }
}

/// Runs `work` as its own task, so a panic stays inside it.
async fn guarded(work: Work) -> Result<Value, Failure> {
    match runtime().spawn(work).await {
        Ok(out) => out,
        Err(e) if e.is_panic() => {
            let payload = e.into_panic();
            let what = payload
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "no message".into());
            Err(Failure::internal(format!(
                "a defect in mnemo stopped this call (Rust panic: {what})"
            )))
        }
        Err(e) => Err(Failure::internal(format!("the call was cancelled: {e}"))),
    }
}

/// A finished call as asyncio receives it: the value, or the `mnemo.errors` exception (built
/// here, where the GIL is held).
struct Outcome(Result<Value, Failure>);

impl<'py> IntoPyObject<'py> for Outcome {
    type Target = PyAny;
    type Output = Bound<'py, PyAny>;
    type Error = PyErr;

    fn into_pyobject(self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        match self.0 {
            Ok(v) => json_to_py(py, &v),
            Err(f) => Err(f.to_py(py)),
        }
    }
}

#[pymethods]
impl Pending {
    /// Runs the call to its end with the GIL released, and returns its answer.
    fn wait(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        let work = self.take()?;
        let out = py.detach(move || runtime().block_on(guarded(work)));
        Ok(Outcome(out).into_pyobject(py)?.unbind())
    }

    /// The call as an asyncio future of the running loop.
    fn future<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let work = self.take()?;
        pyo3_async_runtimes::tokio::future_into_py(py, async move {
            Ok::<_, PyErr>(Outcome(guarded(work).await))
        })
    }
}
