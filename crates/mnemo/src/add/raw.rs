//! Raw adds (`infer = false`): the I/O around `mnemo_core::pipeline::raw`. Each add's session
//! window is read from the store, every distinct line of the batch is embedded in one model
//! call, and the memories and pages of all the adds are committed in one transaction.

use super::commit::{write_prepared, Prepared};
use super::{prepare, tiers, AddInput, AddRequest};
use crate::{run_blocking, Memory, WindowIndexing};
use mnemo_core::pipeline::raw::{self, CallIndex, RawInput};
use mnemo_core::*;

impl Memory {
    /// Raw adds embedded together (one model batch) and written in one transaction.
    pub(super) async fn add_raw_many(&self, reqs: Vec<AddRequest>) -> Result<Vec<AddOutcome>> {
        let planner = self.tier_planner(&reqs);
        let prepared = self.prepare_raw(reqs).await?;
        let store = self.store().clone();
        run_blocking(move || write_prepared(store.as_ref(), prepared, &planner)).await
    }

    /// The writes of raw adds, their texts embedded in one model batch. Retries short-circuit
    /// before any model work.
    pub(super) async fn prepare_raw(&self, reqs: Vec<AddRequest>) -> Result<Vec<Prepared>> {
        let now = chrono::Utc::now();
        let mut checked = Vec::with_capacity(reqs.len());
        for req in &reqs {
            checked.push(prepare(req, now)?);
        }
        let mut replays = Vec::with_capacity(reqs.len());
        let mut calls = Vec::with_capacity(reqs.len());
        for (req, (messages, _, _)) in reqs.iter().zip(&checked) {
            let (idem, replay) = self.replayed(req).await?;
            calls.push(match replay {
                Some(_) => None,
                None => Some(self.call_index(req, messages).await?),
            });
            replays.push((idem, replay));
        }
        let lines = raw::distinct_lines(&calls.iter().map(Option::as_ref).collect::<Vec<_>>());
        let (line_vectors, embed_call) = self.embed_lines(lines.texts).await?;
        let mut out = Vec::with_capacity(reqs.len());
        for ((((req, (messages, metadata, warnings)), (idem, replay)), call), slots) in reqs
            .into_iter()
            .zip(checked)
            .zip(replays)
            .zip(calls)
            .zip(&lines.slots)
        {
            if let Some(replay) = replay {
                out.push(Prepared::Replayed(replay));
                continue;
            }
            let call = call.ok_or_else(|| Error::internal("a raw add without its index"))?;
            // A page's vector pools its turns' own-line vectors: no text is embedded twice.
            let own = raw::own_lines(&call, slots, &line_vectors);
            let pages = tiers::drafts(&messages, |r| {
                tiers::pooled(own[r].iter().flatten().copied())
            });
            let input = RawInput {
                scope: &req.scope,
                messages: &messages,
                metadata: &metadata,
                expires_at: req.expires_at,
            };
            let memories = raw::raw_memories(&input, &call, slots, &line_vectors);
            let relations = match self.relation_config().rules {
                true => mnemo_core::pipeline::relations::rule_relations(&memories),
                false => Vec::new(),
            };
            let context = WritePlan {
                actor: req.actor.clone(),
                request_id: req.request_id.clone(),
                ..WritePlan::default()
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
                    context,
                    relations,
                }),
                warnings,
                // One embedding call serves every request of the batch.
                usage: embed_call.clone().into_iter().collect(),
                pages,
            });
        }
        Ok(out)
    }

    /// The context windows of one raw add's messages. Context belongs to conversations: a plain
    /// text is indexed alone, and the stored log is consulted only for a named session
    /// (unrelated adds are not context).
    async fn call_index(&self, req: &AddRequest, messages: &[Message]) -> Result<CallIndex> {
        let indexing = match req.input {
            AddInput::Text(_) => WindowIndexing::plain(),
            AddInput::Messages(_) | AddInput::Parts(_) => self.inner.indexing,
        };
        let prior = match &req.session_id {
            Some(session) if indexing.before > 0 => {
                let (scope, n, session) = (req.scope.clone(), indexing.before, session.clone());
                let own = messages.to_vec();
                self.with_store(move |s| {
                    let log = earlier_turns(s, &scope, Some(&session), &own, n)?;
                    visible_messages(s, &scope, log, &ReadOptions::default())
                })
                .await?
            }
            _ => Vec::new(),
        };
        Ok(raw::index_texts_for(messages, &prior, &indexing))
    }

    /// The vectors of `texts` (one model call, none when empty) and the call's record. An
    /// embedder that answers with the wrong number of vectors is a provider failure, not a
    /// reason to pair texts with the wrong vectors.
    async fn embed_lines(&self, texts: Vec<String>) -> Result<(Vec<Vec<f32>>, Option<ModelCall>)> {
        if texts.is_empty() {
            return Ok((Vec::new(), None));
        }
        let wanted = texts.len();
        let started = std::time::Instant::now();
        let vectors = self.embed(texts).await?;
        if vectors.len() != wanted {
            return Err(Error::Model {
                reason: format!(
                    "the embedder returned {} vectors for {wanted} texts",
                    vectors.len()
                ),
            });
        }
        let call = ModelCall {
            purpose: "embed".into(),
            model: self.embedder().await?.model_id().to_string(),
            prompt_tokens: 0,
            completion_tokens: 0,
            ms: started.elapsed().as_secs_f64() * 1e3,
            failed: false,
        };
        Ok((vectors, Some(call)))
    }
}
