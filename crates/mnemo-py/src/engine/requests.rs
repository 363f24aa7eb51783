//! What each `Engine` method reads from its keyword arguments, as the request its work takes.
//! Each reader takes the names in a fixed order (the first wrong one is the error raised) and
//! leaves `Kw::finish`, which names any argument left unread, to the method.

use super::messages::messages_of;
use crate::args::Kw;
use crate::convert::dict_arg;
use crate::errors::Failure;
use crate::ops::blocks::BlockArgs;
use crate::ops::extra::{EraseTarget, LinkSpec};
use crate::ops::graph::GraphRead;
use crate::ops::records::Search;
use crate::ops::timeline::Page;
use mnemo::{AddRequest, ListRequest, UpdateRequest};
use mnemo_core::pack::ContextOptions;
use mnemo_core::{MemoryKind, NoteInput, ReadOptions, Scope};
use pyo3::prelude::*;

/// Mem0's default page and result sizes.
pub(super) const DEFAULT_LIMIT: usize = 100;

/// The most edges a graph read returns unless it asks for another number.
const GRAPH_LIMIT: usize = 50;

/// The author a write records: `python`, or `python:<name>` (1 to 128 characters, no NUL).
pub(super) fn actor_of(py: Python<'_>, actor: Option<String>) -> PyResult<String> {
    match actor {
        None => Ok("python".to_string()),
        Some(a) => {
            mnemo_core::limits::check_no_nul("actor", &a)
                .map_err(|e| Failure::from(e).to_py(py))?;
            if a.trim().is_empty() || a.chars().count() > 128 {
                return Err(Failure::invalid("actor", "must be 1 to 128 characters").to_py(py));
            }
            Ok(format!("python:{a}"))
        }
    }
}

/// The library's configuration from the settings dict (`mnemo.toml`'s shape).
pub(super) fn config_of(
    py: Python<'_>,
    settings: &Bound<'_, PyAny>,
) -> PyResult<mnemo::MemoryConfig> {
    let value = dict_arg("config", Some(settings))?.unwrap_or_default();
    let settings: mnemo::Settings = serde_json::from_value(value)
        .map_err(|e| Failure::invalid("config", e.to_string()).to_py(py))?;
    settings
        .memory_config()
        .map_err(|e| Failure::from(e).to_py(py))
}

/// An add of `messages` and whether it is queued as a job (`async_mode`).
pub(super) fn add_request(
    k: &mut Kw<'_>,
    messages: &Bound<'_, PyAny>,
    actor: &str,
) -> PyResult<(AddRequest, bool)> {
    let py = messages.py();
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
        actor: Some(actor.to_string()),
    };
    Ok((req, async_mode))
}

pub(super) fn search_of(k: &mut Kw<'_>, query: String) -> PyResult<Search> {
    let s = Search {
        query,
        limit: k.count("limit")?.unwrap_or(DEFAULT_LIMIT),
        filters: k.dict("filters")?,
        threshold: f32_of(k.number("threshold")?),
        kinds: k.strs("kinds")?,
        mode: k.str("mode")?,
        read: ReadOptions {
            include_expired: expired_of(k)?,
            include_inactive: k.bool("include_inactive")?.unwrap_or(false),
            as_of: k.time("as_of")?,
            ..ReadOptions::default()
        },
        expand_links: k.count("expand_links")?.unwrap_or(0),
        reference_date: k.time("reference_date")?,
        graph: k.bool("graph")?,
    };
    // Mem0 2.x's `rerank`: mnemo's hybrid ranking always runs, and no second reranker exists
    // to switch on or off, so the flag is read (a bool) and changes nothing.
    k.bool("rerank")?;
    Ok(s)
}

/// A page of memories, and the kinds asked for (names, parsed when the work runs).
pub(super) fn list_request(
    k: &mut Kw<'_>,
    py: Python<'_>,
) -> PyResult<(ListRequest, Option<Vec<String>>)> {
    let kinds = k.strs("kinds")?;
    let req = ListRequest {
        scope: placeholder_scope(py)?,
        kinds: None,
        filters: k.dict("filters")?,
        limit: k.count("limit")?.unwrap_or(DEFAULT_LIMIT),
        cursor: k.str("cursor")?,
        include_expired: expired_of(k)?,
        as_of: k.time("as_of")?,
    };
    Ok((req, kinds))
}

/// An update's new text (`data`, or Mem0 2.x's `text`; both, differing, is ambiguous), metadata
/// and expiry.
pub(super) fn update_request(k: &mut Kw<'_>, data: Option<String>) -> PyResult<UpdateRequest> {
    let text = match (data, k.str("text")?) {
        (Some(a), Some(b)) if a != b => {
            let f = Failure::invalid("text", "given as both data and text, with different values");
            return Err(Python::attach(|py| f.to_py(py)));
        }
        (a, b) => a.or(b),
    };
    Ok(UpdateRequest {
        text,
        metadata: k.dict("metadata")?,
        expires_at: k.time("expires_at")?.map(Some),
    })
}

pub(super) fn block_args(k: &mut Kw<'_>) -> PyResult<BlockArgs> {
    Ok(BlockArgs {
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
    })
}

/// A context pack's token budget (default 1,000) and options.
pub(super) fn context_of(k: &mut Kw<'_>) -> PyResult<(u32, ContextOptions)> {
    let budget = k.count("budget_tokens")?.unwrap_or(1000);
    let options = ContextOptions {
        session_id: k.str("session_id")?,
        no_profile: k.bool("no_profile")?.unwrap_or(false),
        no_blocks: k.bool("no_blocks")?.unwrap_or(false),
        memory_candidates: k.count("memory_candidates")?,
        tokenizer: k.str("tokenizer")?,
    };
    Ok((u32::try_from(budget).unwrap_or(u32::MAX), options))
}

/// What an erase names: one memory (`memory_id`), one session (`session_id`) or the whole
/// scope (`confirm`), and its reason. Both a memory and a session is a typed error, raised when
/// the work runs.
pub(super) fn erase_of(
    k: &mut Kw<'_>,
    memory_id: Option<String>,
) -> PyResult<(Result<EraseTarget, Failure>, Option<String>)> {
    let session = k.str("session_id")?;
    let confirm = k.bool("confirm")?.unwrap_or(false);
    let sources = k.bool("sources")?.unwrap_or(false);
    let reason = k.str("reason")?;
    let target = match (memory_id, session) {
        (Some(id), None) => Ok(EraseTarget::Memory { id, sources }),
        (None, Some(s)) => Ok(EraseTarget::Session(s)),
        (None, None) => Ok(EraseTarget::Scope { confirm }),
        (Some(_), Some(_)) => Err(Failure::invalid(
            "session_id",
            "erase one memory or one session, not both in one call",
        )),
    };
    Ok((target, reason))
}

/// A link from `from` to `to` (`kind`, default `related`); an added one also reads its
/// `strength` (default 1) and `reason`.
pub(super) fn link_of(
    k: &mut Kw<'_>,
    (from, to): (String, String),
    adding: bool,
) -> PyResult<LinkSpec> {
    let kind = k.str("kind")?.unwrap_or_else(|| "related".into());
    let (strength, reason) = if adding {
        (
            f32_of(k.number("strength")?).unwrap_or(1.0),
            k.str("reason")?,
        )
    } else {
        (1.0, None)
    };
    Ok(LinkSpec {
        from,
        to,
        kind,
        strength,
        reason,
    })
}

/// A page of the timeline: `start`, `end`, `limit`, `cursor`.
pub(super) fn timeline_page(k: &mut Kw<'_>) -> PyResult<Page> {
    Ok(Page {
        from: k.time("start")?,
        to: k.time("end")?,
        limit: k.count("limit")?.unwrap_or(DEFAULT_LIMIT),
        cursor: k.str("cursor")?,
    })
}

/// The `as_of` and `limit` of a graph read (default: now, 50 edges).
pub(super) fn graph_read(k: &mut Kw<'_>) -> PyResult<GraphRead> {
    Ok(GraphRead {
        as_of: k.time("as_of")?,
        limit: k.count("limit")?.unwrap_or(GRAPH_LIMIT),
    })
}

/// `include_expired`, or Mem0 2.x's name for it, `show_expired`: either asks for expired ones.
pub(super) fn expired_of(k: &mut Kw<'_>) -> PyResult<bool> {
    let (a, b) = (k.bool("include_expired")?, k.bool("show_expired")?);
    Ok(a.unwrap_or(false) || b.unwrap_or(false))
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
