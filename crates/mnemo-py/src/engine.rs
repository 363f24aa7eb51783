//! `Engine`: one `mnemo::Memory` behind Python arguments. Each method reads its arguments while
//! the GIL is held (a wrong type is a `TypeError` naming the argument, see `args`) and returns
//! a [`Pending`] holding the work; `mnemo.Memory` waits for it, `mnemo.AsyncMemory` awaits it.
//! One engine is shared freely between Python threads: the facade is `Send + Sync`, and no
//! method holds the GIL or a lock of its own while it works.

use crate::args::Kw;
use crate::convert::{dict_arg, py_to_json, type_name};
use crate::errors::Failure;
use crate::ops::extra::{self, EraseTarget, LinkSpec};
use crate::ops::records::{self, Search};
use crate::pending::{runtime, Pending};
use mnemo::{AddInput, AddRequest, ListRequest, UpdateRequest};
use mnemo_core::pack::ContextOptions;
use mnemo_core::{InputMessage, MemoryKind, NoteInput, ReadOptions, Scope};
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyString, PyTuple};

/// Mem0's default page and result sizes.
const DEFAULT_LIMIT: usize = 100;

#[pyclass(module = "mnemo._native", frozen)]
pub struct Engine {
    mem: mnemo::Memory,
    /// Job workers of this engine (`jobs.workers` in the settings); they stop with it.
    _workers: Option<mnemo::JobWorkers>,
}

/// Mem0's message forms: a string (one user message), a dict, or a list of dicts with `role`
/// and `content` (and an optional `name`, the speaker; other keys are ignored, as Mem0 does).
fn messages_of(obj: &Bound<'_, PyAny>) -> PyResult<AddInput> {
    if let Ok(s) = obj.cast::<PyString>() {
        return Ok(AddInput::Text(s.to_cow()?.into_owned()));
    }
    if obj.is_instance_of::<PyDict>() {
        return Ok(AddInput::Messages(vec![message_of(0, obj)?]));
    }
    if obj.is_instance_of::<PyList>() || obj.is_instance_of::<PyTuple>() {
        let mut out = Vec::new();
        for (i, item) in obj.try_iter()?.enumerate() {
            out.push(message_of(i, &item?)?);
        }
        return Ok(AddInput::Messages(out));
    }
    Err(PyTypeError::new_err(format!(
        "messages must be a str, a dict or a list of dicts, not {}",
        type_name(obj)
    )))
}

fn message_of(i: usize, obj: &Bound<'_, PyAny>) -> PyResult<InputMessage> {
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
                Ok(s) => Ok(Some(s.to_cow()?.into_owned())),
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
    Ok(InputMessage {
        role,
        content: text("content", true)?.unwrap_or_default(),
        name: text("name", false)?,
    })
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

/// A number the library keeps as `f32`.
fn f32_of(v: Option<f64>) -> Option<f32> {
    v.map(|v| v as f32)
}

#[pymethods]
impl Engine {
    /// Opens the store the settings name (a dict of `mnemo.toml`'s shape); the embedder loads
    /// on first use.
    #[staticmethod]
    fn open(py: Python<'_>, settings: &Bound<'_, PyAny>) -> PyResult<Self> {
        let value = dict_arg("config", Some(settings))?.unwrap_or_default();
        let settings: mnemo::Settings = serde_json::from_value(value)
            .map_err(|e| Failure::invalid("config", e.to_string()).to_py(py))?;
        let config = settings
            .memory_config()
            .map_err(|e| Failure::from(e).to_py(py))?;
        let opened = py.detach(move || {
            runtime().block_on(async move {
                runtime()
                    .spawn(mnemo::Memory::open(config))
                    .await
                    .map_err(|e| Failure::internal(format!("opening the store failed: {e}")))?
                    .map_err(Failure::from)
            })
        });
        let mem = opened.map_err(|f| f.to_py(py))?;
        let n = mem.job_config().workers;
        let workers = (n > 0).then(|| {
            let _entered = runtime().enter();
            mem.start_workers(n)
        });
        Ok(Self {
            mem,
            _workers: workers,
        })
    }

    /// A background job (an add queued with `async_mode=True`) as a dict with its `status`.
    fn job(&self, id: String) -> Pending {
        Pending::new(records::job(self.mem.clone(), id))
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
            // History names each memory's speaker (a message's `name`), as the library does.
            actor: None,
        };
        k.finish()?;
        Ok(Pending::new(records::add(
            self.mem.clone(),
            parts,
            req,
            async_mode,
        )))
    }

    #[pyo3(signature = (query, **kw))]
    fn search(&self, query: String, kw: Option<&Bound<'_, PyDict>>) -> PyResult<Pending> {
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
                include_expired: k.bool("include_expired")?.unwrap_or(false),
                include_inactive: k.bool("include_inactive")?.unwrap_or(false),
                as_of: k.time("as_of")?,
                ..ReadOptions::default()
            },
            expand_links: k.count("expand_links")?.unwrap_or(0),
        };
        k.finish()?;
        Ok(Pending::new(records::search(self.mem.clone(), parts, s)))
    }

    #[pyo3(signature = (memory_id, **kw))]
    fn get(&self, memory_id: String, kw: Option<&Bound<'_, PyDict>>) -> PyResult<Pending> {
        let mut k = Kw::new(kw);
        let parts = k.parts()?;
        let detail = k.bool("detail")?.unwrap_or(false);
        let expired = k.bool("include_expired")?.unwrap_or(false);
        k.finish()?;
        let work = records::get(self.mem.clone(), parts, memory_id, detail, expired);
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
            include_expired: k.bool("include_expired")?.unwrap_or(false),
            as_of: k.time("as_of")?,
        };
        k.finish()?;
        let mem = self.mem.clone();
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
        memory_id: String,
        data: Option<String>,
        kw: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Pending> {
        let mut k = Kw::new(kw);
        let parts = k.parts()?;
        let req = UpdateRequest {
            text: data,
            metadata: k.dict("metadata")?,
            expires_at: k.time("expires_at")?.map(Some),
        };
        k.finish()?;
        let work = records::update(self.mem.clone(), parts, memory_id, req);
        Ok(Pending::new(work))
    }

    #[pyo3(signature = (memory_id, **kw))]
    fn delete(&self, memory_id: String, kw: Option<&Bound<'_, PyDict>>) -> PyResult<Pending> {
        let mut k = Kw::new(kw);
        let parts = k.parts()?;
        k.finish()?;
        Ok(Pending::new(records::delete(
            self.mem.clone(),
            parts,
            memory_id,
        )))
    }

    #[pyo3(signature = (**kw))]
    fn delete_all(&self, kw: Option<&Bound<'_, PyDict>>) -> PyResult<Pending> {
        let mut k = Kw::new(kw);
        let parts = k.parts()?;
        k.finish()?;
        Ok(Pending::new(records::delete_all(self.mem.clone(), parts)))
    }

    #[pyo3(signature = (memory_id, **kw))]
    fn history(&self, memory_id: String, kw: Option<&Bound<'_, PyDict>>) -> PyResult<Pending> {
        let mut k = Kw::new(kw);
        let parts = k.parts()?;
        k.finish()?;
        Ok(Pending::new(records::history(
            self.mem.clone(),
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
            self.mem.clone(),
            op,
            parts,
            args,
        )))
    }

    fn reset(&self) -> Pending {
        Pending::new(records::reset(self.mem.clone()))
    }

    #[pyo3(signature = (query, **kw))]
    fn context(&self, query: String, kw: Option<&Bound<'_, PyDict>>) -> PyResult<Pending> {
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
        let work = extra::context(self.mem.clone(), parts, query, budget, options);
        Ok(Pending::new(work))
    }

    #[pyo3(signature = (memory_id=None, **kw))]
    fn erase(
        &self,
        memory_id: Option<String>,
        kw: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Pending> {
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
        Ok(Pending::new(extra::erase(
            self.mem.clone(),
            parts,
            target,
            reason,
        )))
    }

    #[pyo3(signature = (memory_id, **kw))]
    fn links(&self, memory_id: String, kw: Option<&Bound<'_, PyDict>>) -> PyResult<Pending> {
        let mut k = Kw::new(kw);
        let parts = k.parts()?;
        k.finish()?;
        Ok(Pending::new(extra::links(
            self.mem.clone(),
            parts,
            memory_id,
        )))
    }

    #[pyo3(signature = (from_id, to_id, **kw))]
    fn add_link(
        &self,
        from_id: String,
        to_id: String,
        kw: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Pending> {
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
        Ok(Pending::new(extra::add_link(self.mem.clone(), parts, spec)))
    }

    #[pyo3(signature = (from_id, to_id, **kw))]
    fn remove_link(
        &self,
        from_id: String,
        to_id: String,
        kw: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Pending> {
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
        Ok(Pending::new(extra::remove_link(
            self.mem.clone(),
            parts,
            spec,
        )))
    }

    #[pyo3(signature = (**kw))]
    fn profile(&self, kw: Option<&Bound<'_, PyDict>>) -> PyResult<Pending> {
        let mut k = Kw::new(kw);
        let parts = k.parts()?;
        k.finish()?;
        Ok(Pending::new(extra::profile(self.mem.clone(), parts)))
    }

    #[pyo3(signature = (**kw))]
    fn refresh_profile(&self, kw: Option<&Bound<'_, PyDict>>) -> PyResult<Pending> {
        let mut k = Kw::new(kw);
        let parts = k.parts()?;
        let instructions = k.str("instructions")?;
        k.finish()?;
        let work = extra::refresh_profile(self.mem.clone(), parts, instructions);
        Ok(Pending::new(work))
    }

    #[pyo3(signature = (**kw))]
    fn messages(&self, kw: Option<&Bound<'_, PyDict>>) -> PyResult<Pending> {
        let mut k = Kw::new(kw);
        let parts = k.parts()?;
        let session = k.str("session_id")?;
        let limit = k.count("limit")?.unwrap_or(DEFAULT_LIMIT);
        k.finish()?;
        let work = extra::messages(self.mem.clone(), parts, session, limit);
        Ok(Pending::new(work))
    }

    fn export(&self) -> Pending {
        Pending::new(extra::export(self.mem.clone()))
    }

    fn import_(&self, records: &Bound<'_, PyAny>) -> PyResult<Pending> {
        if !(records.is_instance_of::<PyList>() || records.is_instance_of::<PyTuple>()) {
            return Err(PyTypeError::new_err(format!(
                "records must be a list of dicts, not {}",
                type_name(records)
            )));
        }
        let value = py_to_json("records", records)?;
        Ok(Pending::new(extra::import(self.mem.clone(), value)))
    }
}
