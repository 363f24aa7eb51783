//! `add`: the raw pipeline (`infer = false`: each non-system message becomes one `raw` memory
//! whose provenance is that message) and the model-driven ones (`infer = true`: extraction and
//! reconciliation, or a procedural summary), all ending in one store transaction that also
//! appends the messages to the scope's log. Model work runs before that transaction; when it
//! fails, the messages are still logged (a setting) and the error is returned.
//!
//! The commit (`write_prepared`) keeps one order, so an erase and the adds it covers never
//! interleave and a stale plan never lands: the shared erase gates of the scope's parts
//! (`u=…`, `a=…`, `r=…`; an erase takes its own scope's gates exclusively), then the scope's
//! in-process turn (`crate::scope_lock`), a cancellation check, the window re-check
//! (`recheck_window`: index-text lines of turns hidden since they were read are dropped), the
//! store's cross-process turn where it keeps one (`Store::plan_turn`), and last the tier plan
//! and the one transaction, re-planned on a conflict (`crate::tiers`).

use crate::{run_blocking, ContextIndexing, Memory};
use mnemo_core::pipeline;
use mnemo_core::*;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::collections::HashMap;

/// What to remember: a plain text (one user message) or a conversation.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(untagged)]
pub enum AddInput {
    Text(String),
    Messages(Vec<InputMessage>),
}

#[derive(Debug, Clone)]
pub struct AddRequest {
    pub scope: Scope,
    pub input: AddInput,
    /// Must be a JSON object when given; identity keys inside it are dropped with a warning.
    pub metadata: Option<serde_json::Value>,
    pub expires_at: Option<Timestamp>,
    /// Back-dates the messages and memories (imports); defaults to now.
    pub timestamp: Option<Timestamp>,
    pub idempotency_key: Option<String>,
    /// `None`: infer when a chat model is configured, else raw.
    pub infer: Option<bool>,
    /// `Some(Procedural)` summarises an agent's steps into one procedural memory (needs an
    /// `agent_id` and a chat model). `Some(Note)` stores each message as a note (keywords,
    /// tags, context, links; by the chat model when one is configured and `infer` is not false,
    /// else by rules). `None` or `Fact`: the usual add.
    pub memory_type: Option<MemoryKind>,
    /// A note's fields as the caller gives them (kept as given); only for `memory_type = note`.
    pub note: NoteInput,
    /// Extra extraction instructions for this call.
    pub instructions: Option<String>,
    pub session_id: Option<String>,
    pub request_id: Option<String>,
    /// Who asks (e.g. `api-key:<id>` on the server), recorded as the actor of every history
    /// event the add writes; `None`: each memory's speaker (a conversation's `name`) is.
    pub actor: Option<String>,
}

impl AddRequest {
    pub fn text(scope: Scope, text: impl Into<String>) -> Self {
        Self {
            scope,
            input: AddInput::Text(text.into()),
            metadata: None,
            expires_at: None,
            timestamp: None,
            idempotency_key: None,
            infer: Some(false),
            memory_type: None,
            note: NoteInput::default(),
            instructions: None,
            session_id: None,
            request_id: None,
            actor: None,
        }
    }

    /// A note: `text` stored as given, with these fields (`None`: made by the model or rules).
    pub fn note(scope: Scope, text: impl Into<String>, note: NoteInput) -> Self {
        Self {
            memory_type: Some(MemoryKind::Note),
            infer: None,
            note,
            ..Self::text(scope, text)
        }
    }

    fn request_hash(&self) -> String {
        let body = serde_json::json!({
            "scope": self.scope.key(),
            "input": self.input,
            "metadata": self.metadata,
            "expires_at": self.expires_at,
            "timestamp": self.timestamp,
            "session_id": self.session_id,
            "infer": self.infer,
            "memory_type": self.memory_type.map(|k| k.as_str()),
            "note": self.note,
            "instructions": self.instructions,
        });
        hex::encode(Sha256::digest(body.to_string().as_bytes()))
    }
}

/// Checks an add and turns it into the messages and metadata it will write.
pub(crate) fn prepare(
    req: &AddRequest,
    now: Timestamp,
) -> Result<(Vec<Message>, Metadata, Vec<String>)> {
    req.scope.validate()?;
    if let Some(k) = &req.idempotency_key {
        if k.trim().is_empty() || k.len() > 256 {
            return Err(Error::invalid(
                "idempotency_key",
                "must be 1 to 256 characters",
            ));
        }
        limits::check_no_nul("idempotency_key", k)?;
    }
    if let Some(m) = &req.metadata {
        limits::check_json_no_nul("metadata", m)?;
    }
    if let Some(s) = &req.session_id {
        limits::check_no_nul("session_id", s)?;
    }
    let mut metadata = match &req.metadata {
        None | Some(serde_json::Value::Null) => Metadata::new(),
        Some(serde_json::Value::Object(m)) => m.clone(),
        Some(_) => return Err(Error::invalid("metadata", "must be a JSON object")),
    };
    let dropped = strip_identity_keys(&mut metadata);
    let warnings = dropped
        .iter()
        .map(|k| format!("metadata key {k:?} ignored: scope is set only by explicit parameters"))
        .collect();
    if let Some(exp) = req.expires_at {
        limits::check_timestamp("expires_at", exp)?;
        if exp <= now {
            return Err(Error::invalid("expires_at", "is in the past"));
        }
    }
    // Message times are `at` plus their index in milliseconds; the year bound keeps that sum
    // far from the end of chrono's range.
    let at = match req.timestamp {
        Some(t) => limits::check_timestamp("timestamp", t)?,
        None => now,
    };
    let inputs: Vec<InputMessage> = match &req.input {
        AddInput::Text(t) => vec![InputMessage {
            role: Role::User,
            content: t.clone(),
            name: None,
        }],
        AddInput::Messages(ms) => ms.clone(),
    };
    if inputs.is_empty() {
        return Err(Error::invalid("messages", "must not be empty"));
    }
    if inputs.len() > limits::MAX_MESSAGES_PER_ADD {
        return Err(Error::invalid(
            "messages",
            format!(
                "{} messages in one add; the limit is {} (split the conversation over several adds)",
                inputs.len(),
                limits::MAX_MESSAGES_PER_ADD
            ),
        ));
    }
    let mut messages = Vec::new();
    for (i, m) in inputs.into_iter().enumerate() {
        if m.role == Role::System {
            continue;
        }
        limits::check_text(&format!("messages[{i}].content"), &m.content)?;
        if let Some(name) = &m.name {
            limits::check_no_nul(&format!("messages[{i}].name"), name)?;
        }
        // Keep the order of a conversation even when all turns share one timestamp.
        let mut message = Message::new(
            &req.scope,
            m.role,
            m.name.filter(|n| !n.trim().is_empty()),
            m.content,
            at + chrono::Duration::milliseconds(i as i64),
        );
        message.session_id = req.session_id.clone();
        if let Some(key) = &req.idempotency_key {
            // A retry of a failed add logs the same messages once, not twice.
            message.id = message_id_for(&req.scope, key, i);
        }
        messages.push(message);
    }
    Ok((messages, metadata, warnings))
}

/// The id of message `index` of an add with an idempotency key: the same on every retry.
fn message_id_for(scope: &Scope, key: &str, index: usize) -> MessageId {
    let digest = Sha256::digest(format!("{}\u{0}{key}\u{0}{index}", scope.key()).as_bytes());
    let mut bytes = [0u8; 16];
    bytes.copy_from_slice(&digest[..16]);
    MessageId(uuid::Builder::from_random_bytes(bytes).into_uuid())
}

impl Memory {
    /// Remembers a text or a conversation. With an idempotency key, a retry returns the first
    /// outcome and writes nothing.
    pub async fn add(&self, req: AddRequest) -> Result<AddOutcome> {
        let mut out = self.add_many(vec![req]).await?;
        out.pop()
            .ok_or_else(|| Error::internal("add_many returned no outcome"))
    }

    /// The texts a raw add of `req` hands the embedder when the stored log holds no earlier turns
    /// of its session: each distinct line once (a turn with its speaker, under the default
    /// context indexing). For measuring the embedder alone on an add's work.
    pub fn raw_embedding_texts(&self, req: &AddRequest) -> Result<Vec<String>> {
        let (messages, _, _) = prepare(req, chrono::Utc::now())?;
        let indexing = match req.input {
            AddInput::Text(_) => ContextIndexing::plain(),
            AddInput::Messages(_) => self.inner.indexing,
        };
        let mut seen = std::collections::HashSet::new();
        Ok(index_texts_for(&messages, &[], &indexing)
            .lines
            .into_iter()
            .filter(|l| seen.insert(l.clone()))
            .collect())
    }

    /// Whether an add runs a model pipeline; asking for one without a chat model is an error.
    pub(crate) fn infers(&self, req: &AddRequest) -> Result<bool> {
        let has_chat = self.inner.chat.is_some();
        let procedural = req.memory_type == Some(MemoryKind::Procedural);
        if let Some(k) = req.memory_type {
            if !matches!(
                k,
                MemoryKind::Procedural | MemoryKind::Fact | MemoryKind::Note
            ) {
                return Err(Error::invalid(
                    "memory_type",
                    format!("{k} memories are not written by add; use fact, note or procedural, or leave it out"),
                ));
            }
        }
        if req.memory_type != Some(MemoryKind::Note) && req.note != NoteInput::default() {
            return Err(Error::invalid(
                "memory_type",
                "keywords, tags and context belong to notes; set memory_type to note",
            ));
        }
        if procedural && req.infer == Some(false) {
            return Err(Error::invalid(
                "memory_type",
                "a procedural summary is written by a model; it cannot be combined with infer=false",
            ));
        }
        let infer = procedural || req.infer.unwrap_or(has_chat);
        if infer && !has_chat {
            return Err(Error::invalid(
                "infer",
                "an inferred add needs a chat model and none is configured (set one up, e.g. --llm-base-url and --llm-model); infer=false stores the messages as raw memories",
            ));
        }
        Ok(infer)
    }

    /// Several adds. Raw adds are embedded together (one model batch) and written in one
    /// transaction; inferred adds run their pipelines one after another, each its own transaction.
    pub async fn add_many(&self, reqs: Vec<AddRequest>) -> Result<Vec<AddOutcome>> {
        let scopes: Vec<Scope> = reqs.iter().map(|r| r.scope.clone()).collect();
        let mut out = self.add_many_written(reqs).await?;
        // Long-term memory: after the add is written, each scope's hot segments are analysed
        // into the profile and knowledge (a chat model and a threshold needed). A failure there
        // is a warning on the outcome and the pages wait for the next add; the add stands.
        let threshold = self.inner.tiers.profile_heat_threshold;
        if self.inner.chat.is_some() && threshold.is_some() {
            let mut seen = std::collections::HashSet::new();
            for (i, scope) in scopes.iter().enumerate() {
                if out.get(i).is_none_or(|o| o.replayed) || !seen.insert(scope.key()) {
                    continue;
                }
                let (warnings, usage) = self
                    .profile_after_add(scope, threshold, &self.inner.tiers.heat)
                    .await;
                if let Some(o) = out.get_mut(i) {
                    o.warnings.extend(warnings);
                    o.usage.extend(usage);
                }
            }
        }
        Ok(out)
    }

    /// [`Memory::add_many`] up to its commit.
    async fn add_many_written(&self, reqs: Vec<AddRequest>) -> Result<Vec<AddOutcome>> {
        let planner = self.tier_planner(&reqs);
        let flags = reqs
            .iter()
            .map(|r| self.infers(r))
            .collect::<Result<Vec<bool>>>()?;
        let notes: Vec<bool> = reqs
            .iter()
            .map(|r| r.memory_type == Some(MemoryKind::Note))
            .collect();
        if !flags.iter().any(|f| *f) && !notes.iter().any(|n| *n) {
            return self.add_raw_many(reqs).await;
        }
        if reqs.len() == 1 {
            let req = reqs
                .into_iter()
                .next()
                .ok_or_else(|| Error::internal("one request"))?;
            return Ok(vec![self.add_inferred(req).await?]);
        }
        // A batch: every model call first, then one transaction for all of it. Each inferred
        // item (and each note) is reconciled against the store as it was before the batch, not
        // against the batch's other items; two items retiring the same memory fail the batch as
        // a conflict.
        let mut prepared = Vec::with_capacity(reqs.len());
        // Note adds are prepared together (one embedding batch), then put back in order.
        let (note_reqs, others): (Vec<_>, Vec<_>) = reqs
            .into_iter()
            .zip(flags)
            .zip(notes)
            .enumerate()
            .partition(|(_, (_, note))| *note);
        let mut note_prepared = self
            .prepare_notes(note_reqs.iter().map(|(_, ((r, _), _))| r.clone()).collect())
            .await?
            .into_iter()
            .map(|(p, _)| p);
        let mut slots: Vec<Option<Prepared>> = Vec::new();
        slots.resize_with(note_reqs.len() + others.len(), || None);
        for (i, _) in &note_reqs {
            slots[*i] = note_prepared.next();
        }
        for (i, ((req, infer), _)) in others {
            slots[i] = Some(if infer {
                self.prepare_inferred(req).await?.0
            } else {
                let mut p = self.prepare_raw(vec![req]).await?;
                p.pop()
                    .ok_or_else(|| Error::internal("no preparation for a raw add"))?
            });
        }
        for p in slots {
            prepared.push(p.ok_or_else(|| Error::internal("every add is prepared"))?);
        }
        let store = self.store().clone();
        run_blocking(move || write_prepared(store.as_ref(), prepared, &planner)).await
    }

    /// The hierarchy planner of a write of `reqs`: the chat model writes summaries and judges
    /// continuity unless one of them turned inference off (then rules do, for all of them).
    fn tier_planner(&self, reqs: &[AddRequest]) -> crate::tiers::TierPlanner {
        let model = reqs.iter().all(|r| r.infer != Some(false));
        crate::tiers::TierPlanner {
            config: self.inner.tiers.clone(),
            chat: self.inner.chat.clone().filter(|_| model),
        }
    }

    async fn add_inferred(&self, req: AddRequest) -> Result<AddOutcome> {
        let (scope, request_id) = (req.scope.clone(), req.request_id.clone());
        let messages = prepare(&req, chrono::Utc::now())?.0;
        let log_on_failure = self.inner.infer.log_messages_on_failure;
        let planner = self.tier_planner(std::slice::from_ref(&req));
        let planner_after = planner.clone();
        let keyed = req.idempotency_key.is_some();
        let store = self.store().clone();
        let written = match self.prepare_inferred(req).await {
            Ok((prepared, _)) => {
                let store = store.clone();
                run_blocking(move || write_prepared(store.as_ref(), vec![prepared], &planner))
                    .await
                    .and_then(|mut o| o.pop().ok_or_else(|| Error::internal("no outcome")))
            }
            Err(e) => Err(e),
        };
        let Err(e) = written else {
            return written;
        };
        // The error's message may quote the model's answer: only its kind is logged.
        tracing::warn!(
            error_kind = e.kind().as_str(),
            "inferred add failed; no memory written"
        );
        if log_on_failure && e.kind() != ErrorKind::InvalidInput {
            // The logged messages still become pages (by rules: the model just failed), so no
            // exchange is left in neither tier. A retry with the same key logs the same
            // messages again and makes their pages then, so a keyed add logs them alone.
            let pages = if keyed {
                Vec::new()
            } else {
                self.embedded_pages(&messages).await.unwrap_or_default()
            };
            let mut batch = WriteBatch::new(scope, messages, Vec::new());
            batch.context.request_id = request_id;
            let prepared = Prepared::Write {
                batch: Box::new(batch),
                warnings: Vec::new(),
                usage: Vec::new(),
                pages,
            };
            let planner = crate::tiers::TierPlanner {
                chat: None,
                ..planner_after
            };
            run_blocking(move || write_prepared(store.as_ref(), vec![prepared], &planner)).await?;
        }
        Err(e)
    }

    /// The pages of `messages` with their texts embedded (one call).
    async fn embedded_pages(&self, messages: &[Message]) -> Result<Vec<crate::tiers::PageDraft>> {
        let exchanges = mnemo_core::tier_plan::exchanges(messages);
        let texts = exchanges
            .iter()
            .map(|r| mnemo_core::tier_plan::page_text(&messages[r.clone()]))
            .collect();
        let mut vectors = self.embed(texts).await?.into_iter();
        Ok(crate::tiers::drafts(messages, |_| {
            vectors.next().unwrap_or_default()
        }))
    }

    /// The model work of an inferred add: the write it plans (or the stored outcome of a
    /// retry), and the messages it would append.
    async fn prepare_inferred(&self, req: AddRequest) -> Result<(Prepared, Vec<Message>)> {
        let now = chrono::Utc::now();
        let (messages, metadata, warnings) = prepare(&req, now)?;
        let idem = req.idempotency_key.as_ref().map(|k| Idempotency {
            key: k.clone(),
            request_hash: req.request_hash(),
        });
        if let Some(idem) = &idem {
            let (scope, idem) = (req.scope.clone(), idem.clone());
            if let Some(o) = self.with_store(move |s| s.replay(&scope, &idem)).await? {
                return Ok((Prepared::Replayed(o), messages));
            }
        }
        let embedder = self.embedder().await?;
        if req.memory_type == Some(MemoryKind::Note) {
            let mut out = self.prepare_notes(vec![req]).await?;
            return out
                .pop()
                .ok_or_else(|| Error::internal("one note add, one preparation"));
        }
        let chat = self
            .inner
            .chat
            .clone()
            .ok_or_else(|| Error::internal("checked before: a chat model is configured"))?;
        let (store, cfg, rank) = (
            self.store().clone(),
            self.inner.infer.clone(),
            self.inner.rank,
        );
        run_blocking(move || {
            let mut log = pipeline::CallLog::default();
            let input = pipeline::InferInput {
                scope: &req.scope,
                messages: &messages,
                metadata: &metadata,
                expires_at: req.expires_at,
                instructions: req.instructions.as_deref(),
            };
            let plan = if req.memory_type == Some(MemoryKind::Procedural) {
                pipeline::procedural(embedder.as_ref(), chat.as_ref(), &cfg, &input, &mut log)
            } else {
                pipeline::infer(
                    store.as_ref(),
                    embedder.as_ref(),
                    chat.as_ref(),
                    &cfg,
                    &rank,
                    &input,
                    &mut log,
                )
            }?;
            let ctx = WriteContext {
                actor: req.actor.clone(),
                role: None,
                reason: None,
                request_id: req.request_id.clone(),
            };
            // The pages' vectors: their texts, embedded in one call (the facts' vectors are of
            // other texts).
            let exchanges = mnemo_core::tier_plan::exchanges(&messages);
            let texts: Vec<String> = exchanges
                .iter()
                .map(|r| mnemo_core::tier_plan::page_text(&messages[r.clone()]))
                .collect();
            let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
            let mut vectors = log.embed(embedder.as_ref(), &refs)?.into_iter();
            let pages = crate::tiers::drafts(&messages, |_| vectors.next().unwrap_or_default());
            let batch = WriteBatch {
                scope: req.scope.clone(),
                messages: messages.clone(),
                memories: plan.memories,
                changes: plan.changes,
                links: Vec::new(),
                evolutions: Vec::new(),
                tiers: Default::default(),
                idempotency: idem,
                context: ctx,
            };
            let prepared = Prepared::Write {
                batch: Box::new(batch),
                warnings: warnings.into_iter().chain(plan.warnings).collect(),
                usage: std::mem::take(&mut log.calls),
                pages,
            };
            Ok((prepared, messages))
        })
        .await
    }

    /// Note adds: their model calls (if any) per add, their enriched texts embedded in one
    /// batch, links and evolutions per add against the store as it was before the batch.
    async fn prepare_notes(&self, reqs: Vec<AddRequest>) -> Result<Vec<(Prepared, Vec<Message>)>> {
        let now = chrono::Utc::now();
        let mut work = Vec::with_capacity(reqs.len());
        let mut out: Vec<Option<(Prepared, Vec<Message>)>> = Vec::with_capacity(reqs.len());
        for req in reqs {
            let (messages, metadata, warnings) = prepare(&req, now)?;
            let idem = req.idempotency_key.as_ref().map(|k| Idempotency {
                key: k.clone(),
                request_hash: req.request_hash(),
            });
            if let Some(idem) = &idem {
                let (scope, idem) = (req.scope.clone(), idem.clone());
                if let Some(o) = self.with_store(move |s| s.replay(&scope, &idem)).await? {
                    out.push(Some((Prepared::Replayed(o), messages)));
                    continue;
                }
            }
            out.push(None);
            // A conversation's notes are lexically indexed with the turns around them, as raw
            // turns are; the stored log is consulted only for a named session.
            let indexing = match req.input {
                AddInput::Text(_) => None,
                AddInput::Messages(_) => Some(self.inner.indexing),
            };
            let prior = match (&indexing, &req.session_id) {
                (Some(ix), Some(session)) if ix.before > 0 => {
                    let (scope, n, session) = (req.scope.clone(), ix.before, session.clone());
                    let own = messages.clone();
                    self.with_store(move |s| {
                        let log = earlier_turns(s, &scope, Some(&session), &own, n)?;
                        mnemo_core::visible_messages(s, &scope, log, &ReadOptions::default())
                    })
                    .await?
                }
                _ => Vec::new(),
            };
            work.push((req, messages, metadata, warnings, idem, indexing, prior));
        }
        if work.is_empty() {
            return out
                .into_iter()
                .map(|o| o.ok_or_else(|| Error::internal("replayed")))
                .collect();
        }
        let embedder = self.embedder().await?;
        // Rule mode without a model, or when the caller turns inference off (per batch: a
        // batch mixing both runs in model mode only when every item allows it).
        let chat = if work.iter().any(|(r, ..)| r.infer == Some(false)) {
            None
        } else {
            self.inner.chat.clone()
        };
        let (store, cfg, notes_cfg) = (
            self.store().clone(),
            self.inner.infer.clone(),
            self.inner.notes,
        );
        let prepared = run_blocking(move || {
            let mut log = pipeline::CallLog::default();
            let inputs: Vec<pipeline::NotesInput<'_>> = work
                .iter()
                .map(
                    |(req, messages, metadata, _, _, indexing, prior)| pipeline::NotesInput {
                        scope: &req.scope,
                        messages,
                        metadata,
                        expires_at: req.expires_at,
                        given: &req.note,
                        instructions: req.instructions.as_deref(),
                        window: indexing.map(|ix| pipeline::NoteWindow {
                            prior,
                            before: ix.before,
                            after: ix.after,
                            own_weight: ix.own_weight,
                            speaker: ix.speaker,
                            embed_before: ix.embed_before.min(ix.before),
                            embed_after: ix.embed_after.min(ix.after),
                        }),
                    },
                )
                .collect();
            let plans = pipeline::notes_many(
                store.as_ref(),
                embedder.as_ref(),
                chat.as_deref(),
                &cfg,
                &notes_cfg,
                &inputs,
                &mut log,
            )?;
            drop(inputs);
            let usage = std::mem::take(&mut log.calls);
            Ok(work
                .into_iter()
                .zip(plans)
                .map(|((req, messages, _, warnings, idem, _, _), plan)| {
                    // A page's vector pools its notes' vectors (each note is one message).
                    let pages = crate::tiers::drafts(&messages, |r| {
                        crate::tiers::pooled(messages[r].iter().filter_map(|m| {
                            plan.memories
                                .iter()
                                .find(|n| n.sources.first() == Some(&m.id))
                                .map(|n| (n.vector.as_slice(), m.content.as_str()))
                        }))
                    });
                    let batch = WriteBatch {
                        scope: req.scope.clone(),
                        messages: messages.clone(),
                        memories: plan.memories,
                        changes: Vec::new(),
                        links: plan.links,
                        evolutions: plan.evolutions,
                        tiers: Default::default(),
                        idempotency: idem,
                        context: WriteContext {
                            request_id: req.request_id.clone(),
                            actor: req.actor.clone(),
                            ..WriteContext::default()
                        },
                    };
                    (
                        Prepared::Write {
                            batch: Box::new(batch),
                            warnings: warnings.into_iter().chain(plan.warnings).collect(),
                            usage: usage.clone(),
                            pages,
                        },
                        messages,
                    )
                })
                .collect::<Vec<_>>())
        })
        .await?;
        let mut prepared = prepared.into_iter();
        out.into_iter()
            .map(|o| match o {
                Some(p) => Ok(p),
                None => prepared
                    .next()
                    .ok_or_else(|| Error::internal("one preparation per note add")),
            })
            .collect()
    }

    /// Raw adds embedded together (one model batch) and written in one transaction.
    async fn add_raw_many(&self, reqs: Vec<AddRequest>) -> Result<Vec<AddOutcome>> {
        let planner = self.tier_planner(&reqs);
        let prepared = self.prepare_raw(reqs).await?;
        let store = self.store().clone();
        run_blocking(move || write_prepared(store.as_ref(), prepared, &planner)).await
    }

    /// The writes of raw adds, their texts embedded in one model batch.
    async fn prepare_raw(&self, reqs: Vec<AddRequest>) -> Result<Vec<Prepared>> {
        let now = chrono::Utc::now();
        let mut prepared = Vec::with_capacity(reqs.len());
        for req in &reqs {
            let idem = req.idempotency_key.as_ref().map(|k| Idempotency {
                key: k.clone(),
                request_hash: req.request_hash(),
            });
            prepared.push((prepare(req, now)?, idem));
        }
        // Retries short-circuit before any model work.
        let mut replays: Vec<Option<AddOutcome>> = Vec::with_capacity(reqs.len());
        for (req, (_, idem)) in reqs.iter().zip(&prepared) {
            replays.push(match idem {
                Some(idem) => {
                    let (scope, idem) = (req.scope.clone(), idem.clone());
                    self.with_store(move |s| s.replay(&scope, &idem)).await?
                }
                None => None,
            });
        }
        let mut index_texts: Vec<CallIndex> = Vec::with_capacity(reqs.len());
        for (req, ((messages, _, _), _)) in reqs.iter().zip(&prepared) {
            // Context belongs to conversations: a plain text is indexed alone, and the stored
            // log is consulted only for a named session (unrelated adds are not context).
            let indexing = match req.input {
                AddInput::Text(_) => ContextIndexing::plain(),
                AddInput::Messages(_) => self.inner.indexing,
            };
            let prior = if indexing.before > 0 && req.session_id.is_some() {
                let (scope, n) = (req.scope.clone(), indexing.before);
                let (session, own) = (req.session_id.clone(), messages.clone());
                self.with_store(move |s| {
                    let log = earlier_turns(s, &scope, session.as_deref(), &own, n)?;
                    mnemo_core::visible_messages(s, &scope, log, &ReadOptions::default())
                })
                .await?
            } else {
                Vec::new()
            };
            index_texts.push(index_texts_for(messages, &prior, &indexing));
        }
        // Each distinct line is embedded once for the whole batch; a memory's vector is made
        // from the vectors of the lines in its window. Earlier turns from the stored log are
        // lines too; an embedder with a cache (the default) answers them without model work.
        let mut line_slot: HashMap<&str, usize> = HashMap::new();
        let mut texts: Vec<String> = Vec::new();
        let slots: Vec<Vec<usize>> = index_texts
            .iter()
            .zip(&replays)
            .map(|(call, replay)| {
                if replay.is_some() {
                    return Vec::new();
                }
                call.lines
                    .iter()
                    .map(|l| {
                        *line_slot.entry(l.as_str()).or_insert_with(|| {
                            texts.push(l.clone());
                            texts.len() - 1
                        })
                    })
                    .collect()
            })
            .collect();
        drop(line_slot);
        let mut embed_call = None;
        let wanted = texts.len();
        let line_vectors = if texts.is_empty() {
            Vec::new()
        } else {
            let started = std::time::Instant::now();
            let v = self.embed(texts).await?;
            embed_call = Some(ModelCall {
                purpose: "embed".into(),
                model: self.embedder().await?.model_id().to_string(),
                prompt_tokens: 0,
                completion_tokens: 0,
                ms: started.elapsed().as_secs_f64() * 1e3,
                failed: false,
            });
            v
        };
        // A custom embedder that answers with the wrong number of vectors is a provider
        // failure, not a reason to pair texts with the wrong vectors (or to panic).
        if line_vectors.len() != wanted {
            return Err(Error::Model {
                reason: format!(
                    "the embedder returned {} vectors for {wanted} texts",
                    line_vectors.len()
                ),
            });
        }
        let vectors: Vec<Vec<f32>> = index_texts
            .iter()
            .zip(&slots)
            .zip(&replays)
            .filter(|(_, replay)| replay.is_none())
            .flat_map(|((call, slots), _)| {
                call.texts.iter().map(|t| {
                    window_vector(
                        t.embed
                            .iter()
                            .map(|(at, w)| (&line_vectors[slots[*at]], *w)),
                    )
                })
            })
            .collect();
        let mut vectors = vectors.into_iter();
        let mut out = Vec::with_capacity(reqs.len());
        for ((((req, ((messages, metadata, warnings), idem)), replay), index), slots) in reqs
            .into_iter()
            .zip(prepared)
            .zip(&replays)
            .zip(index_texts)
            .zip(&slots)
        {
            if let Some(r) = replay {
                out.push(Prepared::Replayed(r.clone()));
                continue;
            }
            // A page's vector pools its turns' own-line vectors: no text is embedded twice.
            let own: Vec<Option<(&[f32], &str)>> = index
                .texts
                .iter()
                .map(|t| {
                    let at = t.embed.first()?.0;
                    let v = line_vectors.get(*slots.get(at)?)?;
                    Some((v.as_slice(), index.lines.get(at)?.as_str()))
                })
                .collect();
            let pages = crate::tiers::drafts(&messages, |r| {
                crate::tiers::pooled(own[r].iter().flatten().copied())
            });
            let index = index.texts;
            let memories = messages
                .iter()
                .zip(index)
                .map(|(m, index)| {
                    // Counted above: one vector per text.
                    let vector = vectors.next().unwrap_or_default();
                    let mut memory =
                        NewMemory::raw(m, &req.scope, metadata.clone(), req.expires_at, vector);
                    memory.index_text = Some(index.index).filter(|t| *t != m.content);
                    memory.entities = extract_entities(&m.content);
                    memory
                })
                .collect();
            let ctx = WriteContext {
                actor: req.actor.clone(),
                role: None,
                reason: None,
                request_id: req.request_id.clone(),
            };
            out.push(Prepared::Write {
                batch: Box::new(WriteBatch {
                    scope: req.scope,
                    messages,
                    memories,
                    changes: Vec::new(),
                    links: Vec::new(),
                    evolutions: Vec::new(),
                    tiers: Default::default(),
                    idempotency: idem,
                    context: ctx,
                }),
                warnings,
                // One embedding call serves every request of the batch.
                usage: embed_call.clone().into_iter().collect(),
                pages,
            });
        }
        Ok(out)
    }
}

/// One request's write, ready to commit, or the stored outcome of a retry.
enum Prepared {
    Replayed(AddOutcome),
    Write {
        batch: Box<WriteBatch>,
        warnings: Vec<String>,
        usage: Vec<ModelCall>,
        /// The add's exchanges, planned into `batch.tiers` at write time.
        pages: Vec<crate::tiers::PageDraft>,
    },
}

/// Commits every prepared write in one transaction and returns one outcome per preparation, in
/// order. The hierarchy changes are planned here, just before the transaction, and planned
/// again when the store finds the snapshot they came from stale (see `crate::tiers`).
fn write_prepared(
    store: &dyn Store,
    prepared: Vec<Prepared>,
    planner: &crate::tiers::TierPlanner,
) -> Result<Vec<AddOutcome>> {
    let mut to_write = Vec::new();
    let mut drafts = Vec::new();
    // Per preparation: its outcome already, or what to attach to the next written one.
    let mut slots = Vec::with_capacity(prepared.len());
    for p in prepared {
        match p {
            Prepared::Replayed(o) => slots.push(Ok(o)),
            Prepared::Write {
                batch,
                warnings,
                usage,
                pages,
            } => {
                to_write.push(*batch);
                drafts.push(pages);
                slots.push(Err((warnings, usage)));
            }
        }
    }
    let mut tier_usage: Vec<Vec<ModelCall>> = Vec::new();
    let mut written = if to_write.is_empty() {
        Vec::new()
    } else {
        // Writers of one scope in this process take turns from snapshot to commit (see
        // `crate::scope_lock`); batches without pages plan nothing and need no turn.
        let planned: Vec<String> = to_write
            .iter()
            .zip(&drafts)
            .filter(|(_, d)| !d.is_empty())
            .map(|(b, _)| b.scope.key())
            .collect();
        // Adds of a session take their turn too: an erase (which holds the erase gates of its scope) then cannot
        // commit between the window re-check below and this add's commit.
        let turns: Vec<String> = to_write
            .iter()
            .filter(|b| b.messages.iter().any(|m| m.session_id.is_some()))
            .map(|b| b.scope.key())
            .chain(planned.iter().cloned())
            .collect();
        // The erase gates first (an erase over this scope waits for this add, or this add for
        // it), then the turns; nothing is held while waiting for a gate.
        let _gates = crate::scope_lock::take_add_gates(&turns);
        let _turns = crate::scope_lock::take_turns(&turns);
        // Waiting for the turn may be long: a request abandoned meanwhile writes nothing.
        crate::cancel::check_cancelled("the add")?;
        for b in &mut to_write {
            recheck_window(store, b)?;
        }
        // And across processes, where the store keeps turns (servers on one database).
        let _store_turn = if planned.is_empty() {
            None
        } else {
            store.plan_turn(&planned)?
        };
        let mut attempt = 1;
        loop {
            let mut batches = to_write.clone();
            let calls = planner.plan_all(store, &mut batches, &drafts)?;
            tier_usage.resize_with(calls.len(), Vec::new);
            tier_usage
                .iter_mut()
                .zip(calls)
                .for_each(|(all, c)| all.extend(c));
            let tiers = batches.iter().any(|b| !b.tiers.is_empty());
            match store.write(batches) {
                Err(e)
                    if attempt < crate::tiers::MAX_ATTEMPTS
                        && crate::tiers::retry_worthy(&e, tiers) =>
                {
                    attempt += 1;
                    crate::tiers::backoff(attempt);
                }
                Err(e) if crate::tiers::retry_worthy(&e, tiers) => {
                    return Err(crate::tiers::exhausted(e))
                }
                other => break other?,
            }
        }
    }
    .into_iter();
    let mut tier_usage = tier_usage.into_iter();
    slots
        .into_iter()
        .map(|slot| match slot {
            Ok(o) => Ok(o),
            Err((warnings, usage)) => {
                let mut o = written
                    .next()
                    .ok_or_else(|| Error::internal("store returned too few outcomes"))?;
                let tiers = tier_usage.next().unwrap_or_default();
                if !o.replayed {
                    o.warnings = warnings;
                    o.usage = usage.into_iter().chain(tiers).collect();
                }
                Ok(o)
            }
        })
        .collect()
}

/// Earlier turns of a session an add's window re-check reads (windows reach a few turns back).
const WINDOW_RECHECK: usize = 256;

/// Under the scope's turn, just before the commit: the add read its session's earlier turns
/// for its raw memories' index texts before it embedded; a delete or erase that committed
/// since must not be quoted by them. Lines that are neither one of the add's own turns nor a
/// turn the log still shows are dropped.
fn recheck_window(store: &dyn Store, b: &mut WriteBatch) -> Result<()> {
    let Some(session) = b.messages.iter().find_map(|m| m.session_id.clone()) else {
        return Ok(());
    };
    if !b
        .memories
        .iter()
        .any(|m| m.kind == MemoryKind::Raw && m.index_text.is_some())
    {
        return Ok(());
    }
    let log = store.messages(&b.scope, Some(&session), WINDOW_RECHECK)?;
    let total = log.len();
    let visible = visible_messages(store, &b.scope, log, &ReadOptions::default())?;
    if visible.len() == total {
        return Ok(());
    }
    let allowed: Vec<String> = visible
        .iter()
        .chain(&b.messages)
        .flat_map(|m| [line(m, true), line(m, false)])
        .collect();
    for n in b.memories.iter_mut().filter(|m| m.kind == MemoryKind::Raw) {
        if let Some(t) = &n.index_text {
            let kept: Vec<&str> = t
                .split('\n')
                .filter(|l| allowed.iter().any(|a| a.contains(l)))
                .collect();
            let kept = kept.join("\n");
            n.index_text = Some(kept).filter(|k| *k != n.text);
        }
    }
    Ok(())
}

/// What one raw memory is indexed and embedded with.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct IndexText {
    /// The lexical index text (stored only when it differs from the memory text).
    pub index: String,
    /// The lines whose vectors make the stored embedding, as (index into
    /// [`CallIndex::lines`], weight): the memory's own line and its embed window.
    pub embed: Vec<(usize, f32)>,
}

/// The indexing of one add call's messages.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct CallIndex {
    /// The line of every turn the call's windows reach: the stored earlier turns first, then
    /// the call's messages. Each is embedded once.
    pub lines: Vec<String>,
    /// One per message of the call, in order.
    pub texts: Vec<IndexText>,
}

fn line(m: &Message, speaker: bool) -> String {
    match (&m.name, speaker) {
        (Some(n), true) => format!("{n}: {}", m.content),
        _ => m.content.clone(),
    }
}

/// Index texts of the messages of one call: each message's own line first, then up to
/// `before` earlier messages (this call first, then `prior`, the scope's stored log) and
/// `after` later ones of this call. The embedding is made from the lines of the embed window.
pub(crate) fn index_texts_for(
    messages: &[Message],
    prior: &[Message],
    cfg: &ContextIndexing,
) -> CallIndex {
    let all: Vec<&Message> = prior.iter().chain(messages).collect();
    let lines: Vec<String> = all.iter().map(|m| line(m, cfg.speaker)).collect();
    let offset = prior.len();
    let (embed_before, embed_after) = (
        cfg.embed_before.min(cfg.before),
        cfg.embed_after.min(cfg.after),
    );
    let texts: Vec<IndexText> = (0..messages.len())
        .map(|i| {
            let at = offset + i;
            let neighbours = |before: usize, after: usize| {
                (at.saturating_sub(before)..at).chain((at + 1..lines.len()).take(after))
            };
            let mut index = lines[at].clone();
            for _ in 1..cfg.own_weight.max(1) {
                index.push('\n');
                index.push_str(&lines[at]);
            }
            for j in neighbours(cfg.before, cfg.after) {
                index.push('\n');
                index.push_str(&lines[j]);
            }
            let embed = std::iter::once(at)
                .chain(neighbours(embed_before, embed_after))
                .map(|j| (j, line_weight(&lines[j])))
                .collect();
            IndexText { index, embed }
        })
        .collect();
    // Only the lines some window reaches need a vector.
    let first = offset.saturating_sub(embed_before);
    let mut call = CallIndex { lines, texts };
    if first > 0 {
        call.lines.drain(..first);
        for t in &mut call.texts {
            t.embed.iter_mut().for_each(|(j, _)| *j -= first);
        }
    }
    call
}

/// A line's share of its window's vector: its length, so the window vector approximates the
/// mean-pooled embedding of the window's text (each token counts once) without embedding the
/// window's text: each turn is embedded once instead of once per window it falls in.
fn line_weight(line: &str) -> f32 {
    line.chars().count().max(1) as f32
}

/// The unit-length weighted sum of unit vectors; a window of one line is that line's vector.
fn window_vector<'a>(parts: impl Iterator<Item = (&'a Vec<f32>, f32)>) -> Vec<f32> {
    let parts: Vec<(&Vec<f32>, f32)> = parts.collect();
    if let [(v, _)] = parts.as_slice() {
        return (*v).clone();
    }
    let mut out = vec![0.0; parts.first().map_or(0, |(v, _)| v.len())];
    for (v, w) in parts {
        out.iter_mut().zip(v).for_each(|(o, x)| *o += w * x);
    }
    mnemo_core::embed::l2_normalize(&mut out);
    out
}
