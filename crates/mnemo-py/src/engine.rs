//! `Engine`: one `mnemo::Memory` behind Python arguments. Each method reads its arguments while
//! the GIL is held (a wrong type is a `TypeError` naming the argument, see `args`) and returns
//! a [`Pending`] holding the work; `mnemo.Memory` waits for it, `mnemo.AsyncMemory` awaits it.
//! One engine is shared freely between Python threads: the facade is `Send + Sync`, and no
//! method holds the GIL or a lock of its own while it works.

use crate::args::Kw;
use crate::convert::{dict_arg, py_to_json, str_arg, text_of, type_name};
use crate::errors::Failure;
use crate::ops::extra::{self, EraseTarget, LinkSpec};
use crate::ops::records::{self, Search};
use crate::ops::write_context;
use crate::pending::Pending;
use crate::runtime;
use mnemo::{AddInput, AddRequest, ListRequest, UpdateRequest};
use mnemo_core::pack::ContextOptions;
use mnemo_core::{Content, ContentMessage, MemoryKind, NoteInput, ReadOptions, Scope};
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyString, PyTuple};
use std::sync::Mutex;

/// Mem0's default page and result sizes.
const DEFAULT_LIMIT: usize = 100;

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

/// Mem0's message forms: a string (one user message), a dict, or a list of dicts with `role`
/// and `content` (and an optional `name`, the speaker; other keys are ignored, as Mem0 does).
fn messages_of(obj: &Bound<'_, PyAny>) -> PyResult<AddInput> {
    if let Ok(s) = obj.cast::<PyString>() {
        return Ok(AddInput::Text(text_of("messages", s)?));
    }
    if obj.is_instance_of::<PyDict>() {
        return Ok(AddInput::from_content(vec![message_of(0, obj)?]));
    }
    if obj.is_instance_of::<PyList>() || obj.is_instance_of::<PyTuple>() {
        let mut out = Vec::new();
        for (i, item) in obj.try_iter()?.enumerate() {
            out.push(message_of(i, &item?)?);
        }
        return Ok(AddInput::from_content(out));
    }
    Err(PyTypeError::new_err(format!(
        "messages must be a str, a dict or a list of dicts, not {}",
        type_name(obj)
    )))
}

fn message_of(i: usize, obj: &Bound<'_, PyAny>) -> PyResult<ContentMessage> {
    let d = obj.cast::<PyDict>().map_err(|_| {
        PyTypeError::new_err(format!(
            "messages[{i}] must be a dict, not {}",
            type_name(obj)
        ))
    })?;
    let text = |key: &str, required: bool| -> PyResult<Option<String>> {
        match d.get_item(key)?.filter(|v| required || !v.is_none()) {
            None if required => Err(PyTypeError::new_err(format!(
                "messages[{i}] needs a {key:?} (str)"
            ))),
            None => Ok(None),
            Some(v) => match v.cast::<PyString>() {
                Ok(s) => Ok(Some(text_of(&format!("messages[{i}].{key}"), s)?)),
                Err(_) => Err(PyTypeError::new_err(format!(
                    "messages[{i}][{key:?}] must be a str, not {}",
                    type_name(&v)
                ))),
            },
        }
    };
    let role = text("role", true)?.unwrap_or_default();
    let role = role.parse().map_err(|e: mnemo::Error| {
        Failure::invalid(&format!("messages[{i}].role"), e.to_string()).to_py(obj.py())
    })?;
    Ok(ContentMessage {
        role,
        content: content_of(i, d)?,
        name: text("name", false)?,
    })
}

/// A message's `content`: a str, or a list of OpenAI-style parts (dicts), read by the rules
/// every surface shares (`mnemo_core::content`).
fn content_of(i: usize, d: &Bound<'_, PyDict>) -> PyResult<Content> {
    let field = format!("messages[{i}].content");
    let Some(v) = d.get_item("content")?.filter(|v| !v.is_none()) else {
        return Err(PyTypeError::new_err(format!(
            "messages[{i}] needs a \"content\" (str or list of parts)"
        )));
    };
    if let Ok(s) = v.cast::<PyString>() {
        return Ok(Content::Text(text_of(&field, s)?));
    }
    if !(v.is_instance_of::<PyList>() || v.is_instance_of::<PyTuple>()) {
        return Err(PyTypeError::new_err(format!(
            "{field} must be a str or a list of parts, not {}",
            type_name(&v)
        )));
    }
    let json = py_to_json(&field, &v)?;
    Content::from_json(&field, &json).map_err(|e| Failure::from(e).to_py(v.py()))
}

/// Mem0's `memory_type` names and mnemo's: `procedural_memory` is `procedural`.
fn memory_type_of(raw: Option<String>) -> Result<Option<MemoryKind>, Failure> {
    match raw.as_deref() {
        None => Ok(None),
        Some("procedural_memory") => Ok(Some(MemoryKind::Procedural)),
        Some(k) => Ok(Some(k.parse().map_err(|e: mnemo::Error| {
            Failure::invalid("memory_type", e.to_string())
        })?)),
    }
}

/// A stand-in scope for requests built before their scope is checked; the work replaces it
/// with the checked one before the request reaches the library.
fn placeholder_scope(py: Python<'_>) -> PyResult<Scope> {
    Scope::user("python").map_err(|e| Failure::from(e).to_py(py))
}

/// `include_expired`, or Mem0 2.x's name for it, `show_expired`: either asks for expired ones.
fn expired_of(k: &mut Kw<'_>) -> PyResult<bool> {
    let (a, b) = (k.bool("include_expired")?, k.bool("show_expired")?);
    Ok(a.unwrap_or(false) || b.unwrap_or(false))
}

/// A number the library keeps as `f32`.
fn f32_of(v: Option<f64>) -> Option<f32> {
    v.map(|v| v as f32)
}

#[pymethods]
impl Engine {
    /// Opens the store the settings name (a dict of `mnemo.toml`'s shape); the embedder loads
    /// on first use.
    #[staticmethod]
    #[pyo3(signature = (settings, actor=None))]
    fn open(py: Python<'_>, settings: &Bound<'_, PyAny>, actor: Option<String>) -> PyResult<Self> {
        let actor = match actor {
            None => "python".to_string(),
            Some(a) => {
                mnemo_core::limits::check_no_nul("actor", &a)
                    .map_err(|e| Failure::from(e).to_py(py))?;
                if a.trim().is_empty() || a.chars().count() > 128 {
                    return Err(Failure::invalid("actor", "must be 1 to 128 characters").to_py(py));
                }
                format!("python:{a}")
            }
        };
        let value = dict_arg("config", Some(settings))?.unwrap_or_default();
        let settings: mnemo::Settings = serde_json::from_value(value)
            .map_err(|e| Failure::invalid("config", e.to_string()).to_py(py))?;
        let config = settings
            .memory_config()
            .map_err(|e| Failure::from(e).to_py(py))?;
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
        let py = messages.py();
        let mut k = Kw::new(kw);
        let parts = k.parts()?;
        let input = messages_of(messages)?;
        let async_mode = k.bool("async_mode")?.unwrap_or(false);
        let req = AddRequest {
            // The scope is checked when the work runs, which puts it in.
            scope: placeholder_scope(py)?,
            input,
            metadata: k.dict("metadata")?,
            expires_at: k.time("expires_at")?,
            timestamp: k.time("timestamp")?,
            idempotency_key: k.str("idempotency_key")?,
            infer: k.bool("infer")?,
            memory_type: memory_type_of(k.str("memory_type")?).map_err(|f| f.to_py(py))?,
            note: NoteInput {
                keywords: k.strs("keywords")?,
                tags: k.strs("tags")?,
                context: k.str("context")?,
            },
            instructions: k.str("prompt")?,
            session_id: k.str("session_id")?,
            request_id: None,
            // History names the writer; each memory keeps its speaker (a message's `name`).
            actor: Some(self.actor.clone()),
        };
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
        let s = Search {
            query,
            limit: k.count("limit")?.unwrap_or(DEFAULT_LIMIT),
            filters: k.dict("filters")?,
            threshold: f32_of(k.number("threshold")?),
            kinds: k.strs("kinds")?,
            mode: k.str("mode")?,
            read: ReadOptions {
                include_expired: expired_of(&mut k)?,
                include_inactive: k.bool("include_inactive")?.unwrap_or(false),
                as_of: k.time("as_of")?,
                ..ReadOptions::default()
            },
            expand_links: k.count("expand_links")?.unwrap_or(0),
            reference_date: k.time("reference_date")?,
            graph: k.bool("graph")?,
        };
        // Mem0 2.x's `rerank`: mnemo's hybrid ranking always runs, and no second reranker
        // exists to switch on or off, so the flag is read (a bool) and changes nothing.
        k.bool("rerank")?;
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
        let expired = expired_of(&mut k)?;
        k.finish()?;
        let work = records::get(self.mem()?, parts, memory_id, detail, expired);
        Ok(Pending::new(work))
    }

    #[pyo3(signature = (**kw))]
    fn get_all(&self, py: Python<'_>, kw: Option<&Bound<'_, PyDict>>) -> PyResult<Pending> {
        let mut k = Kw::new(kw);
        let parts = k.parts()?;
        let kinds = k.strs("kinds")?;
        let req = ListRequest {
            scope: placeholder_scope(py)?,
            kinds: None,
            filters: k.dict("filters")?,
            limit: k.count("limit")?.unwrap_or(DEFAULT_LIMIT),
            cursor: k.str("cursor")?,
            include_expired: expired_of(&mut k)?,
            as_of: k.time("as_of")?,
        };
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
        // Mem0 2.x names the new text `text`; `data` is the older name. Both, differing, is
        // ambiguous.
        let text = match (data, k.str("text")?) {
            (Some(a), Some(b)) if a != b => {
                let f =
                    Failure::invalid("text", "given as both data and text, with different values");
                return Err(Python::attach(|py| f.to_py(py)));
            }
            (a, b) => a.or(b),
        };
        let req = UpdateRequest {
            text,
            metadata: k.dict("metadata")?,
            expires_at: k.time("expires_at")?.map(Some),
        };
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
        let args = crate::ops::blocks::BlockArgs {
            label: k.str("label")?,
            value: k.str("value")?,
            text: k.str("text")?,
            old: k.str("old")?,
            new: k.str("new")?,
            description: k.str("description")?,
            limit: k.count("limit")?,
            read_only: k.bool("read_only")?,
            agents: k.strs("agents")?,
            expected_version: k.count("expected_version")?,
            reason: k.str("reason")?,
            cursor: k.str("cursor")?,
        };
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
        let budget = k.count("budget_tokens")?.unwrap_or(1000);
        let options = ContextOptions {
            session_id: k.str("session_id")?,
            no_profile: k.bool("no_profile")?.unwrap_or(false),
            no_blocks: k.bool("no_blocks")?.unwrap_or(false),
            memory_candidates: k.count("memory_candidates")?,
            tokenizer: k.str("tokenizer")?,
        };
        k.finish()?;
        let budget = u32::try_from(budget).unwrap_or(u32::MAX);
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
        let session = k.str("session_id")?;
        let confirm = k.bool("confirm")?.unwrap_or(false);
        let sources = k.bool("sources")?.unwrap_or(false);
        let reason = k.str("reason")?;
        k.finish()?;
        let target = match (memory_id, session) {
            (Some(id), None) => EraseTarget::Memory { id, sources },
            (None, Some(s)) => EraseTarget::Session(s),
            (None, None) => EraseTarget::Scope { confirm },
            (Some(_), Some(_)) => {
                return Ok(Pending::ready(Err(Failure::invalid(
                    "session_id",
                    "erase one memory or one session, not both in one call",
                ))))
            }
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
        let from_id = str_arg("from_id", from_id)?;
        let to_id = str_arg("to_id", to_id)?;
        let mut k = Kw::new(kw);
        let parts = k.parts()?;
        let spec = LinkSpec {
            from: from_id,
            to: to_id,
            kind: k.str("kind")?.unwrap_or_else(|| "related".into()),
            strength: f32_of(k.number("strength")?).unwrap_or(1.0),
            reason: k.str("reason")?,
        };
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
        let from_id = str_arg("from_id", from_id)?;
        let to_id = str_arg("to_id", to_id)?;
        let mut k = Kw::new(kw);
        let parts = k.parts()?;
        let spec = LinkSpec {
            from: from_id,
            to: to_id,
            kind: k.str("kind")?.unwrap_or_else(|| "related".into()),
            strength: 1.0,
            reason: None,
        };
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
        let limit = k.count("limit")?.unwrap_or(DEFAULT_LIMIT);
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
        let limit = k.count("limit")?.unwrap_or(DEFAULT_LIMIT);
        k.finish()?;
        let work = records::sessions(self.mem()?, parts, cursor, limit);
        Ok(Pending::new(work))
    }

    /// A page of the scope's timeline: memories in event-time order with their turns.
    #[pyo3(signature = (**kw))]
    fn timeline(&self, kw: Option<&Bound<'_, PyDict>>) -> PyResult<Pending> {
        let mut k = Kw::new(kw);
        let parts = k.parts()?;
        let page = crate::ops::timeline::Page {
            from: k.time("start")?,
            to: k.time("end")?,
            limit: k.count("limit")?.unwrap_or(DEFAULT_LIMIT),
            cursor: k.str("cursor")?,
        };
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
        let read = graph_read(&mut k)?;
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
        let read = graph_read(&mut k)?;
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

/// The `as_of` and `limit` of a graph read (default: now, 50 edges).
fn graph_read(k: &mut Kw<'_>) -> PyResult<crate::ops::graph::GraphRead> {
    Ok(crate::ops::graph::GraphRead {
        as_of: k.time("as_of")?,
        limit: k.count("limit")?.unwrap_or(GRAPH_LIMIT),
    })
}

/// The most edges a graph read returns unless it asks for another number.
const GRAPH_LIMIT: usize = 50;
