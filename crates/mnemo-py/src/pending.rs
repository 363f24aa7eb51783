//! One call's work, as the Python side runs it: `Pending.wait()` blocks with the GIL released
//! (`Memory`), `Pending.future()` hands asyncio a future (`AsyncMemory`). Either way the work
//! runs as a task of one shared tokio runtime, so a Rust panic inside it ends that task only and
//! comes back as `mnemo.InternalError`, never as a crash or a `PanicException`.
//!
//! An asyncio future is resolved through `loop.call_soon_threadsafe` from the task that ran the
//! work, holding the GIL only for that hand-over and dropping every Python object before it lets
//! go; once interpreter exit has begun (`runtime::shutdown`) no task attaches to Python at all.

use crate::convert::json_to_py;
use crate::errors::Failure;
use crate::runtime;
use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use serde_json::Value;
use std::future::Future;
use std::pin::Pin;
use std::sync::Mutex;

type Work = Pin<Box<dyn Future<Output = Result<Value, Failure>> + Send>>;

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
async fn guarded(rt: tokio::runtime::Handle, work: Work) -> Result<Value, Failure> {
    match rt.spawn(work).await {
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

/// `mnemo._bridge.resolve(future, ok, value)`: sets the future's result or exception unless it
/// was cancelled meanwhile; it runs on the loop's thread, as asyncio requires.
fn resolver(py: Python<'_>) -> PyResult<&Bound<'_, PyAny>> {
    static RESOLVE: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
    RESOLVE
        .get_or_try_init(py, || {
            Ok::<_, PyErr>(py.import("mnemo._bridge")?.getattr("resolve")?.unbind())
        })
        .map(|f| f.bind(py))
}

/// Hands a finished call to its asyncio future. A loop closed meanwhile (the caller gave up)
/// refuses the hand-over, and the answer is dropped.
fn deliver(event_loop: Py<PyAny>, future: Py<PyAny>, out: Result<Value, Failure>) {
    if !runtime::live() {
        // The interpreter is tearing down: not even a reference count may be touched.
        std::mem::forget((event_loop, future));
        return;
    }
    let mut held = Some((event_loop, future, out));
    let _ = Python::try_attach(|py| {
        let Some((event_loop, future, out)) = held.take() else {
            return;
        };
        let (ok, value) = match Outcome(out).into_pyobject(py) {
            Ok(v) => (true, v),
            Err(e) => (false, e.into_value(py).into_bound(py).into_any()),
        };
        let call = resolver(py).and_then(|resolve| {
            event_loop.bind(py).call_method1(
                "call_soon_threadsafe",
                (resolve, future.bind(py), ok, value),
            )
        });
        // A closed loop raises RuntimeError: nobody waits for this answer any more.
        drop(call);
        drop((event_loop, future));
    });
    // `try_attach` refused (the interpreter is finalizing): leak what it would have dropped.
    std::mem::forget(held);
}

#[pymethods]
impl Pending {
    /// Runs the call to its end with the GIL released, and returns its answer.
    fn wait(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        let work = self.take()?;
        let rt = runtime::handle().map_err(|f| f.to_py(py))?;
        let out = py.detach(move || rt.block_on(guarded(rt.clone(), work)));
        Ok(Outcome(out).into_pyobject(py)?.unbind())
    }

    /// The call as an asyncio future of the running loop.
    fn future<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let work = self.take()?;
        let rt = runtime::handle().map_err(|f| f.to_py(py))?;
        let event_loop = py.import("asyncio")?.call_method0("get_running_loop")?;
        let future = event_loop.call_method0("create_future")?;
        let (l, f) = (event_loop.unbind(), future.clone().unbind());
        let inner = rt.clone();
        rt.spawn(async move { deliver(l, f, guarded(inner, work).await) });
        Ok(future)
    }
}
