//! `mnemo._native`: the Rust half of the Python package `mnemo`. The pure-Python half
//! (`python/mnemo`) defines `Memory` and `AsyncMemory` with their signatures and docstrings; each
//! of their methods calls one method of `engine::Engine` here and either waits for the `pending::Pending` it
//! returns (`Memory`, with the GIL released) or awaits it (`AsyncMemory`, an asyncio future
//! resolved from one shared tokio runtime: no thread per call).
//!
//! - `engine`: `Engine`, a `mnemo::Memory` behind Python arguments; arguments are read and
//!   checked while the GIL is held (a wrong type is a `TypeError` naming the argument), the work
//!   runs as a future. `engine::requests` reads each method's keyword arguments into the request
//!   its work takes, `engine::messages` Mem0's message forms.
//! - `ops`: those futures: the facade's calls, answering JSON values in Mem0's shapes.
//! - `pending`: running a future to completion, blocking or as asyncio, with panics caught.
//! - `convert`: Python objects to and from JSON values, times, scopes.
//! - `errors`: `mnemo.errors` classes for the library's error kinds.
//! - `args`: keyword arguments read by name and type.
//! - `runtime`: the tokio runtime of this process, rebuilt after `os.fork()` and stopped at
//!   interpreter exit.
//! - `scratch` (feature `testing`): throwaway PostgreSQL schemas, a fresh store per Python test.

// The Rust allocations of the extension (Python's own are untouched); see the workspace manifest.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

mod args;
mod convert;
mod engine;
mod errors;
mod ops;
mod pending;
mod runtime;
#[cfg(feature = "testing")]
mod scratch;

use pyo3::prelude::*;

/// The native module, imported by `mnemo/__init__.py`.
#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<engine::Engine>()?;
    m.add_class::<pending::Pending>()?;
    #[cfg(feature = "testing")]
    {
        m.add_class::<scratch::ScratchSchema>()?;
        m.add_function(wrap_pyfunction!(_panic_probe, m)?)?;
    }
    m.add_function(wrap_pyfunction!(_shutdown, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}

/// Stops mnemo's runtime before the interpreter finalizes (an `atexit` hook of the package):
/// see `runtime`. Waits, with the GIL released, for calls still in flight.
#[pyfunction]
fn _shutdown(py: Python<'_>) {
    py.detach(runtime::shutdown);
}

/// A call whose work panics: the tests use it to check that a Rust panic reaches Python as
/// `mnemo.InternalError` (the guard in `pending`), since no input may make mnemo panic.
#[cfg(feature = "testing")]
#[pyfunction]
fn _panic_probe() -> pending::Pending {
    pending::Pending::new(panics())
}

#[cfg(feature = "testing")]
async fn panics() -> Result<serde_json::Value, errors::Failure> {
    panic!("the panic probe")
}
