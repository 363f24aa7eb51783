//! Note adds (A-MEM): enriched, embedded in one batch, linked and evolved against the store as
//! it was before the batch (`mnemo_core::pipeline::notes_many`).

use super::commit::Prepared;
use super::{prepare, tiers, AddInput, AddRequest};
use crate::{run_blocking, Memory};
use mnemo_core::pipeline;
use mnemo_core::*;

impl Memory {
    /// Note adds: their model calls (if any) per add, their enriched texts embedded in one
    /// batch, links and evolutions per add against the store as it was before the batch.
    pub(super) async fn prepare_notes(
        &self,
        reqs: Vec<AddRequest>,
    ) -> Result<Vec<(Prepared, Vec<Message>)>> {
        let now = chrono::Utc::now();
        let mut work = Vec::with_capacity(reqs.len());
        let mut out: Vec<Option<(Prepared, Vec<Message>)>> = Vec::with_capacity(reqs.len());
        for req in reqs {
            let (messages, metadata, warnings) = prepare(&req, now)?;
            let (idem, replay) = self.replayed(&req).await?;
            if let Some(o) = replay {
                out.push(Some((Prepared::Replayed(o), messages)));
                continue;
            }
            out.push(None);
            // A conversation's notes are lexically indexed with the turns around them, as raw
            // turns are; the stored log is consulted only for a named session.
            let indexing = match req.input {
                AddInput::Text(_) => None,
                AddInput::Messages(_) | AddInput::Parts(_) => Some(self.inner.indexing),
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
                    let pages = tiers::drafts(&messages, |r| {
                        tiers::pooled(messages[r].iter().filter_map(|m| {
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
                        context: WritePlan {
                            request_id: req.request_id.clone(),
                            actor: req.actor.clone(),
                            ..WritePlan::default()
                        },
                        relations: Vec::new(),
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
}
