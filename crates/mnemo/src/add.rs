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
//! and the one transaction, re-planned on a conflict (`crate::add::tiers`).
//!
//! | file | step |
//! |---|---|
//! | [`request`] | the request types and their checks ([`prepare`]) |
//! | [`content`] | content parts: text joined, images described by a vision model |
//! | this file | routing: raw, inferred, note, batch; profile analysis after the write |
//! | [`raw`] | raw adds: context windows, one embedding batch (`mnemo_core::pipeline::raw`) |
//! | [`inferred`] | extraction and reconciliation, procedural summaries |
//! | [`notes`] | note adds |
//! | [`commit`] | gates, turns, window re-check, transaction |
//! | [`tiers`] | pages and their tier plan, retried on conflicts |

mod commit;
mod content;
mod inferred;
mod notes;
mod raw;
mod request;
pub(crate) mod tiers;

use crate::{run_blocking, Memory, WindowIndexing};
use commit::{write_prepared, Prepared};
use mnemo_core::pipeline::raw::index_texts_for;
use mnemo_core::*;
pub(crate) use request::prepare;
pub use request::{AddInput, AddRequest};

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
            AddInput::Text(_) => WindowIndexing::plain(),
            AddInput::Messages(_) | AddInput::Parts(_) => self.inner.indexing,
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
    pub async fn add_many(&self, mut reqs: Vec<AddRequest>) -> Result<Vec<AddOutcome>> {
        // Pages count tokens after the embedding: the first add loads the table beside it.
        tiers::warm_counter();
        let mut described = Vec::with_capacity(reqs.len());
        for r in &mut reqs {
            described.push(self.resolve_parts(r).await?);
        }
        let scopes: Vec<Scope> = reqs.iter().map(|r| r.scope.clone()).collect();
        let mut out = self.add_many_written(reqs).await?;
        for (o, calls) in out.iter_mut().zip(described) {
            // The image descriptions came first.
            o.usage = calls
                .into_iter()
                .chain(std::mem::take(&mut o.usage))
                .collect();
        }
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
    fn tier_planner(&self, reqs: &[AddRequest]) -> tiers::TierPlanner {
        let model = reqs.iter().all(|r| r.infer != Some(false));
        tiers::TierPlanner {
            config: self.inner.tiers.clone(),
            chat: self.inner.chat.clone().filter(|_| model),
        }
    }

    /// The stored outcome of an earlier add with `req`'s idempotency key, if any, and the
    /// idempotency record its write will carry.
    async fn replayed(
        &self,
        req: &AddRequest,
    ) -> Result<(Option<Idempotency>, Option<AddOutcome>)> {
        let Some(idem) = req.idempotency() else {
            return Ok((None, None));
        };
        let (scope, key) = (req.scope.clone(), idem.clone());
        let replay = self.with_store(move |s| s.replay(&scope, &key)).await?;
        Ok((Some(idem), replay))
    }
}
