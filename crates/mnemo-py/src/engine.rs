//! `Engine`: one `mnemo::Memory` behind Python arguments. Each method reads its arguments while
//! the GIL is held (a wrong type is a `TypeError` naming the argument, see `args`) and returns
//! a [`Pending`] holding the work; `mnemo.Memory` waits for it, `mnemo.AsyncMemory` awaits it.
//! One engine is shared freely between Python threads: the facade is `Send + Sync`, and no
//! method holds the GIL or a lock of its own while it works.

mod messages;
mod requests;

use crate::args::Kw;
use crate::convert::{py_to_json, str_arg, type_name};
use crate::errors::Failure;
use crate::ops::extra;
use crate::ops::records;
use crate::ops::write_context;
use crate::pending::Pending;
use crate::runtime;
use mnemo::ListRequest;
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyTuple};
use std::sync::Mutex;

#[pyclass(module = "mnemo._native", frozen, weakref)]
pub struct Engine {
    /// The process that opened it: in a child made by `os.fork()` the store's connections, its
    /// index and the job workers belong to the parent, so the engine refuses every call there
    /// and is never dropped there (dropping would save the parent's files or close its sockets).
    pid: u32,
    /// What its writes record as their author: `python`, or `python:<name>`.
    actor: String,
    /// `None` once closed. Never dropped in another process (see `pid`).
    open: Mutex<Option<Open>>,
}

/// An open engine: the library, and the job workers it started (stopped with it).
struct Open {
    mem: mnemo::Memory,
    workers: Option<mnemo::JobWorkers>,
}

impl Drop for Engine {
    fn drop(&mut self) {
        // `get_mut` takes no lock: in a forked child the parent may have held it.
        let open = match self.open.get_mut() {
            Ok(slot) => slot.take(),
            Err(poisoned) => poisoned.into_inner().take(),
        };
        if self.pid != std::process::id() {
            std::mem::forget(open);
            return;
        }
        if let Some(Open {
            workers: Some(workers),
            mem,
        }) = open
        {
            // Each worker ends the job it runs (none is left under a lease); the library is
            // dropped when the last worker has let go of it.
            drop(mem);
            if let Ok(rt) = runtime::handle() {
                rt.spawn(workers.stop());
            }
        }
    }
}

impl Engine {
    /// The library, for a call of this process on an open engine; a clear error otherwise.
    fn mem(&self) -> PyResult<mnemo::Memory> {
        Python::attach(|py| self.checked().map_err(|f| f.to_py(py)))
    }

    fn checked(&self) -> Result<mnemo::Memory, Failure> {
        if self.pid != std::process::id() {
            return Err(Failure::conflict(format!(
                "this Memory was opened in process {} and this is a child made by os.fork(); \
                 open a new Memory in the child",
                self.pid
            )));
        }
        let open = self
            .open
            .lock()
            .map_err(|_| Failure::internal("the engine's state is poisoned"))?;
        match open.as_ref() {
            Some(o) => Ok(o.mem.clone()),
            None => Err(Failure::conflict("this Memory is closed")),
        }
    }
}

#[pymethods]
impl Engine {
    /// Opens the store the settings name (a dict of `mnemo.toml`'s shape); the embedder loads
    /// on first use.
    #[staticmethod]
    #[pyo3(signature = (settings, actor=None))]
    fn open(py: Python<'_>, settings: &Bound<'_, PyAny>, actor: Option<String>) -> PyResult<Self> {
        let actor = requests::actor_of(py, actor)?;
        let config = requests::config_of(py, settings)?;
        let rt = runtime::handle().map_err(|f| f.to_py(py))?;
        let opened = py.detach(|| {
            rt.block_on(async {
                rt.spawn(mnemo::Memory::open(config))
                    .await
                    .map_err(|e| Failure::internal(format!("opening the store failed: {e}")))?
                    .map_err(Failure::from)
            })
        });
        let mem = opened.map_err(|f| f.to_py(py))?;
        let n = mem.job_config().workers;
        let workers = (n > 0).then(|| {
            let _entered = rt.enter();
            mem.start_workers(n)
        });
        Ok(Self {
            pid: std::process::id(),
            actor,
            open: Mutex::new(Some(Open { mem, workers })),
        })
    }

    /// Stops the job workers after the job each is running (jobs still pending stay queued for
    /// the next open) and releases the store; later calls raise `mnemo.ConflictError`. Closing
    /// twice is harmless.
    fn close(&self, py: Python<'_>) -> PyResult<Pending> {
        if self.pid != std::process::id() {
            return Ok(Pending::ready(Ok(serde_json::Value::Null)));
        }
        let taken = self
            .open
            .lock()
            .map_err(|_| Failure::internal("the engine's state is poisoned").to_py(py))?
            .take();
        Ok(Pending::new(async move {
            if let Some(Open { mem, workers }) = taken {
                if let Some(w) = workers {
                    w.stop().await;
                }
                drop(mem);
            }
            Ok(serde_json::Value::Null)
        }))
    }

    /// A background job (an add queued with `async_mode=True`) as a dict with its `status`.
    fn job(&self, id: &Bound<'_, PyAny>) -> PyResult<Pending> {
        let id = str_arg("job_id", id)?;
        Ok(Pending::new(records::job(self.mem()?, id)))
    }

    #[pyo3(signature = (messages, **kw))]
    fn add(
        &self,
        messages: &Bound<'_, PyAny>,
        kw: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Pending> {
        let mut k = Kw::new(kw);
        let parts = k.parts()?;
        let (req, async_mode) = requests::add_request(&mut k, messages, &self.actor)?;
        k.finish()?;
        Ok(Pending::new(records::add(
            self.mem()?,
            parts,
            req,
            async_mode,
        )))
    }

    #[pyo3(signature = (query, **kw))]
    fn search(
        &self,
        query: &Bound<'_, PyAny>,
        kw: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Pending> {
        let query = str_arg("query", query)?;
        let mut k = Kw::new(kw);
        let parts = k.parts()?;
        let s = requests::search_of(&mut k, query)?;
        k.finish()?;
        Ok(Pending::new(records::search(self.mem()?, parts, s)))
    }

    #[pyo3(signature = (memory_id, **kw))]
    fn get(
        &self,
        memory_id: &Bound<'_, PyAny>,
        kw: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Pending> {
        let memory_id = str_arg("memory_id", memory_id)?;
        let mut k = Kw::new(kw);
        let parts = k.parts()?;
        let detail = k.bool("detail")?.unwrap_or(false);
        let expired = requests::expired_of(&mut k)?;
        k.finish()?;
        let work = records::get(self.mem()?, parts, memory_id, detail, expired);
        Ok(Pending::new(work))
    }

    #[pyo3(signature = (**kw))]
    fn get_all(&self, py: Python<'_>, kw: Option<&Bound<'_, PyDict>>) -> PyResult<Pending> {
        let mut k = Kw::new(kw);
        let parts = k.parts()?;
        let (req, kinds) = requests::list_request(&mut k, py)?;
        k.finish()?;
        let mem = self.mem()?;
        Ok(Pending::new(async move {
            let kinds = kinds
                .map(|ks| ks.iter().map(|k| k.parse()).collect::<Result<Vec<_>, _>>())
                .transpose()?;
            records::get_all(mem, parts, ListRequest { kinds, ..req }).await
        }))
    }

    #[pyo3(signature = (memory_id, data=None, **kw))]
    fn update(
        &self,
        memory_id: &Bound<'_, PyAny>,
        data: Option<&Bound<'_, PyAny>>,
        kw: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Pending> {
        let memory_id = str_arg("memory_id", memory_id)?;
        let data = data
            .filter(|d| !d.is_none())
            .map(|d| str_arg("data", d))
            .transpose()?;
        let mut k = Kw::new(kw);
        let parts = k.parts()?;
        let req = requests::update_request(&mut k, data)?;
        let ctx = write_context(&self.actor, k.str("reason")?);
        k.finish()?;
        let work = records::update(self.mem()?, parts, memory_id, req, ctx);
        Ok(Pending::new(work))
    }

    #[pyo3(signature = (memory_id, **kw))]
    fn delete(
        &self,
        memory_id: &Bound<'_, PyAny>,
        kw: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Pending> {
        let memory_id = str_arg("memory_id", memory_id)?;
        let mut k = Kw::new(kw);
        let parts = k.parts()?;
        let ctx = write_context(&self.actor, k.str("reason")?);
        k.finish()?;
        Ok(Pending::new(records::delete(
            self.mem()?,
            parts,
            memory_id,
            ctx,
        )))
    }

    #[pyo3(signature = (**kw))]
    fn delete_all(&self, kw: Option<&Bound<'_, PyDict>>) -> PyResult<Pending> {
        let mut k = Kw::new(kw);
        let parts = k.parts()?;
        let ctx = write_context(&self.actor, k.str("reason")?);
        k.finish()?;
        Ok(Pending::new(records::delete_all(self.mem()?, parts, ctx)))
    }

    #[pyo3(signature = (memory_id, **kw))]
    fn history(
        &self,
        memory_id: &Bound<'_, PyAny>,
        kw: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Pending> {
        let memory_id = str_arg("memory_id", memory_id)?;
        let mut k = Kw::new(kw);
        let parts = k.parts()?;
        k.finish()?;
        Ok(Pending::new(records::history(
            self.mem()?,
            parts,
            memory_id,
        )))
    }

    /// A core memory block operation (`list`, `get`, `create`, `append`, `replace`, `rewrite`,
    /// `delete`, `history`, `seed`); see `ops::blocks`.
    #[pyo3(signature = (op, **kw))]
    fn block_call(&self, op: String, kw: Option<&Bound<'_, PyDict>>) -> PyResult<Pending> {
        let mut k = Kw::new(kw);
        let parts = k.parts()?;
        let args = requests::block_args(&mut k)?;
        k.finish()?;
        Ok(Pending::new(crate::ops::blocks::call(
            self.mem()?,
            op,
            parts,
            args,
        )))
    }

    fn reset(&self) -> PyResult<Pending> {
        Ok(Pending::new(records::reset(self.mem()?)))
    }

    #[pyo3(signature = (query, **kw))]
    fn context(
        &self,
        query: &Bound<'_, PyAny>,
        kw: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Pending> {
        let query = str_arg("query", query)?;
        let mut k = Kw::new(kw);
        let parts = k.parts()?;
        let (budget, options) = requests::context_of(&mut k)?;
        k.finish()?;
        let work = extra::context(self.mem()?, parts, query, budget, options);
        Ok(Pending::new(work))
    }

    #[pyo3(signature = (memory_id=None, **kw))]
    fn erase(
        &self,
        memory_id: Option<&Bound<'_, PyAny>>,
        kw: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Pending> {
        let memory_id = memory_id
            .filter(|d| !d.is_none())
            .map(|d| str_arg("memory_id", d))
            .transpose()?;
        let mut k = Kw::new(kw);
        let parts = k.parts()?;
        let (target, reason) = requests::erase_of(&mut k, memory_id)?;
        k.finish()?;
        let target = match target {
            Ok(t) => t,
            Err(f) => return Ok(Pending::ready(Err(f))),
        };
        let ctx = write_context(&self.actor, reason);
        Ok(Pending::new(extra::erase(self.mem()?, parts, target, ctx)))
    }

    #[pyo3(signature = (memory_id, **kw))]
    fn links(
        &self,
        memory_id: &Bound<'_, PyAny>,
        kw: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Pending> {
        let memory_id = str_arg("memory_id", memory_id)?;
        let mut k = Kw::new(kw);
        let parts = k.parts()?;
        k.finish()?;
        Ok(Pending::new(extra::links(self.mem()?, parts, memory_id)))
    }

    #[pyo3(signature = (from_id, to_id, **kw))]
    fn add_link(
        &self,
        from_id: &Bound<'_, PyAny>,
        to_id: &Bound<'_, PyAny>,
        kw: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Pending> {
        let ends = (str_arg("from_id", from_id)?, str_arg("to_id", to_id)?);
        let mut k = Kw::new(kw);
        let parts = k.parts()?;
        let spec = requests::link_of(&mut k, ends, true)?;
        k.finish()?;
        Ok(Pending::new(extra::add_link(self.mem()?, parts, spec)))
    }

    #[pyo3(signature = (from_id, to_id, **kw))]
    fn remove_link(
        &self,
        from_id: &Bound<'_, PyAny>,
        to_id: &Bound<'_, PyAny>,
        kw: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Pending> {
        let ends = (str_arg("from_id", from_id)?, str_arg("to_id", to_id)?);
        let mut k = Kw::new(kw);
        let parts = k.parts()?;
        let spec = requests::link_of(&mut k, ends, false)?;
        k.finish()?;
        Ok(Pending::new(extra::remove_link(self.mem()?, parts, spec)))
    }

    #[pyo3(signature = (**kw))]
    fn profile(&self, kw: Option<&Bound<'_, PyDict>>) -> PyResult<Pending> {
        let mut k = Kw::new(kw);
        let parts = k.parts()?;
        k.finish()?;
        Ok(Pending::new(extra::profile(self.mem()?, parts)))
    }

    #[pyo3(signature = (**kw))]
    fn refresh_profile(&self, kw: Option<&Bound<'_, PyDict>>) -> PyResult<Pending> {
        let mut k = Kw::new(kw);
        let parts = k.parts()?;
        let instructions = k.str("instructions")?;
        k.finish()?;
        let work = extra::refresh_profile(self.mem()?, parts, instructions);
        Ok(Pending::new(work))
    }

    #[pyo3(signature = (**kw))]
    fn messages(&self, kw: Option<&Bound<'_, PyDict>>) -> PyResult<Pending> {
        let mut k = Kw::new(kw);
        let parts = k.parts()?;
        let session = k.str("session_id")?;
        let limit = k.count("limit")?.unwrap_or(requests::DEFAULT_LIMIT);
        k.finish()?;
        let work = extra::messages(self.mem()?, parts, session, limit);
        Ok(Pending::new(work))
    }

    /// A page of the scope's sessions (`cursor`: the last page's `next_cursor`).
    #[pyo3(signature = (**kw))]
    fn sessions(&self, kw: Option<&Bound<'_, PyDict>>) -> PyResult<Pending> {
        let mut k = Kw::new(kw);
        let parts = k.parts()?;
        let cursor = k.str("cursor")?;
        let limit = k.count("limit")?.unwrap_or(requests::DEFAULT_LIMIT);
        k.finish()?;
        let work = records::sessions(self.mem()?, parts, cursor, limit);
        Ok(Pending::new(work))
    }

    /// A page of the scope's timeline: memories in event-time order with their turns.
    #[pyo3(signature = (**kw))]
    fn timeline(&self, kw: Option<&Bound<'_, PyDict>>) -> PyResult<Pending> {
        let mut k = Kw::new(kw);
        let parts = k.parts()?;
        let page = requests::timeline_page(&mut k)?;
        k.finish()?;
        Ok(Pending::new(crate::ops::timeline::timeline(
            self.mem()?,
            parts,
            page,
        )))
    }

    /// The relations of the entities named `entity` (now, or `as_of`), at most `limit`.
    #[pyo3(signature = (entity, **kw))]
    fn relations(
        &self,
        entity: &Bound<'_, PyAny>,
        kw: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Pending> {
        let entity = str_arg("entity", entity)?;
        let mut k = Kw::new(kw);
        let parts = k.parts()?;
        let read = requests::graph_read(&mut k)?;
        k.finish()?;
        let work = crate::ops::graph::relations(self.mem()?, parts, entity, read);
        Ok(Pending::new(work))
    }

    /// The neighbourhood of the entities named `entity` to `depth` hops (1 to 3).
    #[pyo3(signature = (entity, **kw))]
    fn graph(
        &self,
        entity: &Bound<'_, PyAny>,
        kw: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Pending> {
        let entity = str_arg("entity", entity)?;
        let mut k = Kw::new(kw);
        let parts = k.parts()?;
        let depth = k.count("depth")?.unwrap_or(1);
        let read = requests::graph_read(&mut k)?;
        k.finish()?;
        let work = crate::ops::graph::graph(self.mem()?, parts, entity, depth, read);
        Ok(Pending::new(work))
    }

    fn export(&self) -> PyResult<Pending> {
        Ok(Pending::new(extra::export(self.mem()?)))
    }

    fn import_(&self, records: &Bound<'_, PyAny>) -> PyResult<Pending> {
        if !(records.is_instance_of::<PyList>() || records.is_instance_of::<PyTuple>()) {
            return Err(PyTypeError::new_err(format!(
                "records must be a list of dicts, not {}",
                type_name(records)
            )));
        }
        let value = py_to_json("records", records)?;
        Ok(Pending::new(extra::import(self.mem()?, value)))
    }
}
