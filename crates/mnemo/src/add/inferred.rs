//! The model-driven adds one at a time: extraction and reconciliation, or a procedural
//! summary (`mnemo_core::pipeline`), planned before the scope's turn and committed by
//! [`super::commit`]. A failed model call still logs the messages (a setting).

use super::commit::{write_prepared, Prepared};
use super::{prepare, tiers, AddRequest};
use crate::{run_blocking, Memory};
use mnemo_core::pipeline;
use mnemo_core::*;

impl Memory {
    pub(super) async fn add_inferred(&self, req: AddRequest) -> Result<AddOutcome> {
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
            let planner = tiers::TierPlanner {
                chat: None,
                ..planner_after
            };
            run_blocking(move || write_prepared(store.as_ref(), vec![prepared], &planner)).await?;
        }
        Err(e)
    }

    /// The pages of `messages` with their texts embedded (one call).
    async fn embedded_pages(&self, messages: &[Message]) -> Result<Vec<tiers::PageDraft>> {
        let exchanges = mnemo_core::tier::plan::exchanges(messages);
        let texts = exchanges
            .iter()
            .map(|r| mnemo_core::tier::plan::page_text(&messages[r.clone()]))
            .collect();
        let mut vectors = self.embed(texts).await?.into_iter();
        Ok(tiers::drafts(messages, |_| {
            vectors.next().unwrap_or_default()
        }))
    }

    /// The model work of an inferred add: the write it plans (or the stored outcome of a
    /// retry), and the messages it would append.
    pub(super) async fn prepare_inferred(
        &self,
        req: AddRequest,
    ) -> Result<(Prepared, Vec<Message>)> {
        let now = chrono::Utc::now();
        let (messages, metadata, warnings) = prepare(&req, now)?;
        let (idem, replay) = self.replayed(&req).await?;
        if let Some(o) = replay {
            return Ok((Prepared::Replayed(o), messages));
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
        let ask_relations = self.relation_config().model;
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
            let mut warnings: Vec<String> = warnings.into_iter().chain(plan.warnings).collect();
            // Only facts carry relations: a procedural summary states none.
            let relations = if ask_relations {
                pipeline::relations::ask_model(
                    chat.as_ref(),
                    &cfg,
                    &plan.memories,
                    &mut log,
                    &mut warnings,
                )?
            } else {
                Vec::new()
            };
            let ctx = WritePlan {
                actor: req.actor.clone(),
                role: None,
                reason: None,
                request_id: req.request_id.clone(),
            };
            // The pages' vectors: their texts, embedded in one call (the facts' vectors are of
            // other texts).
            let exchanges = mnemo_core::tier::plan::exchanges(&messages);
            let texts: Vec<String> = exchanges
                .iter()
                .map(|r| mnemo_core::tier::plan::page_text(&messages[r.clone()]))
                .collect();
            let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
            let mut vectors = log.embed(embedder.as_ref(), &refs)?.into_iter();
            let pages = tiers::drafts(&messages, |_| vectors.next().unwrap_or_default());
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
                relations,
            };
            let prepared = Prepared::Write {
                batch: Box::new(batch),
                warnings,
                usage: std::mem::take(&mut log.calls),
                pages,
            };
            Ok((prepared, messages))
        })
        .await
    }
}
