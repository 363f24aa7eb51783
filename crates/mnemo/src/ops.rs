//! Search and the record operations of the facade.

use crate::{run_blocking, Memory};
use mnemo_core::*;
use serde::Serialize;
use std::time::Instant;

#[derive(Debug, Clone, Serialize)]
pub struct SearchResponse {
    pub results: Vec<Hit>,
    /// Milliseconds spent embedding the query (0 when a vector was given).
    pub embed_ms: f64,
    /// Milliseconds spent in retrieval and fusion.
    pub search_ms: f64,
    /// The model calls this search made (the query embedding).
    pub usage: Vec<ModelCall>,
}

#[derive(Debug, Clone)]
pub struct GetRequest {
    pub scope: Scope,
    pub id: MemoryId,
    pub include_expired: bool,
}

#[derive(Debug, Clone)]
pub struct ListRequest {
    pub scope: Scope,
    pub kinds: Option<Vec<MemoryKind>>,
    pub filters: Option<serde_json::Value>,
    pub limit: usize,
    pub cursor: Option<String>,
    pub include_expired: bool,
    /// List what was valid at this instant (see [`ReadOptions::as_of`]).
    pub as_of: Option<Timestamp>,
}

#[derive(Debug, Clone, Default)]
pub struct UpdateRequest {
    pub text: Option<String>,
    pub metadata: Option<serde_json::Value>,
    pub expires_at: Option<Option<Timestamp>>,
}

fn read_opts(include_expired: bool) -> ReadOptions {
    ReadOptions {
        include_expired,
        ..ReadOptions::default()
    }
}

impl Memory {
    /// Hybrid search: embeds the query, then fuses dense and lexical candidates.
    pub async fn search(&self, req: SearchRequest) -> Result<SearchResponse> {
        req.validate()?;
        if req.mode == SearchMode::Lexical {
            return self.search_with_vector(req, Vec::new()).await;
        }
        let embedder = self.embedder().await?;
        let model = embedder.model_id().to_string();
        let (rank, store, scope) = (self.inner.rank, self.store().clone(), req.scope.clone());
        // One hop to the blocking pool: the query is embedded there, beside the lexical side
        // of the search (`hybrid_search_embedding`).
        let (results, embed_ms, total_ms) = run_blocking(move || {
            let t = Instant::now();
            let mut embed_ms = 0.0;
            let embed = || -> Result<Vec<f32>> {
                let e = Instant::now();
                // Exactly one vector, as `Memory::embed` demands: a custom embedder answering
                // with another count is a model error, not a query paired with a stray vector.
                let mut vectors = embedder.embed(&[req.query.as_str()])?;
                let vector = match (vectors.pop(), vectors.is_empty()) {
                    (Some(v), true) => v,
                    (v, _) => {
                        return Err(Error::Model {
                            reason: format!(
                                "the embedder returned {} vectors for the query",
                                vectors.len() + usize::from(v.is_some())
                            ),
                        })
                    }
                };
                embed_ms = e.elapsed().as_secs_f64() * 1e3;
                Ok(vector)
            };
            let results = hybrid_search_embedding(store.as_ref(), &req, embed, &rank)?;
            Ok((results, embed_ms, t.elapsed().as_secs_f64() * 1e3))
        })
        .await?;
        self.record_search(&scope, results.iter().map(|h| &h.memory));
        Ok(SearchResponse {
            results,
            embed_ms,
            // The retrieval that did not overlap the embedding.
            search_ms: (total_ms - embed_ms).max(0.0),
            usage: vec![ModelCall {
                purpose: "embed".into(),
                model,
                prompt_tokens: 0,
                completion_tokens: 0,
                ms: embed_ms,
                failed: false,
            }],
        })
    }

    /// Hybrid search with a query vector the caller already has.
    pub async fn search_with_vector(
        &self,
        req: SearchRequest,
        vector: Vec<f32>,
    ) -> Result<SearchResponse> {
        let rank = self.inner.rank;
        let store = self.store().clone();
        let scope = req.scope.clone();
        let resp = run_blocking(move || {
            let t = Instant::now();
            let results = hybrid_search(store.as_ref(), &req, &vector, &rank)?;
            Ok(SearchResponse {
                results,
                embed_ms: 0.0,
                search_ms: t.elapsed().as_secs_f64() * 1e3,
                usage: Vec::new(),
            })
        })
        .await?;
        self.record_search(&scope, resp.results.iter().map(|h| &h.memory));
        Ok(resp)
    }

    /// The blocking form of `search_with_vector`, for callers that measure without a runtime hop.
    pub fn search_with_vector_blocking(
        &self,
        req: &SearchRequest,
        vector: &[f32],
    ) -> Result<Vec<Hit>> {
        crate::cancel::check_cancelled("the search")?;
        hybrid_search(self.store().as_ref(), req, vector, &self.inner.rank)
    }

    pub async fn get(&self, req: GetRequest) -> Result<MemoryRecord> {
        let scope = req.scope.clone();
        let m = self
            .with_store(move |s| s.get(&req.scope, req.id, &read_opts(req.include_expired)))
            .await?;
        self.record_reads(&scope, [&m]);
        Ok(m)
    }

    /// The scope that owns a memory, for callers allowed to address any memory by id (admins).
    pub async fn owner_of(&self, id: MemoryId) -> Result<Scope> {
        self.with_store(move |s| s.owner_of(id)).await
    }

    /// Every scope that owns visible memories, with their count.
    pub async fn owners(&self) -> Result<Vec<(Scope, u64)>> {
        self.with_store(|s| s.owners()).await
    }

    pub async fn list(&self, req: ListRequest) -> Result<Page> {
        let q = list_query(req)?;
        let scope = q.scope.clone();
        let page = self.with_store(move |s| s.list(&q)).await?;
        self.record_reads(&scope, &page.results);
        Ok(page)
    }

    /// Links a caller adds (author `caller` is kept as given): see [`Graph::add_links`].
    pub async fn add_links(&self, scope: Scope, links: Vec<Link>) -> Result<()> {
        self.with_store(move |s| s.add_links(&scope, &links)).await
    }

    /// Removes one link; `false` when there was none.
    pub async fn remove_link(
        &self,
        scope: Scope,
        from: MemoryId,
        to: MemoryId,
        kind: LinkKind,
    ) -> Result<bool> {
        self.with_store(move |s| s.remove_link(&scope, from, to, kind))
            .await
    }

    /// A memory's links, both directions.
    pub async fn links(&self, scope: Scope, id: MemoryId) -> Result<Vec<Link>> {
        self.with_store(move |s| s.links(&scope, id)).await
    }

    /// How many memories a listing holds and the cursor after its first `skip`, for callers
    /// that address pages by number; `req.limit` and `req.cursor` are ignored.
    pub async fn locate(&self, req: ListRequest, skip: u64) -> Result<ListPosition> {
        let q = list_query(req)?;
        self.with_store(move |s| s.locate(&q, skip)).await
    }

    /// Changes text and/or metadata; a new text is re-embedded. Identity keys in metadata are
    /// ignored with a warning.
    pub async fn update(
        &self,
        scope: Scope,
        id: MemoryId,
        req: UpdateRequest,
        ctx: WriteContext,
    ) -> Result<MemoryRecord> {
        let mut patches = self.patches(vec![(scope, id, req)]).await?;
        let (scope, id, patch) = patches
            .pop()
            .ok_or_else(|| Error::internal("one update, one patch"))?;
        self.with_store(move |s| s.update(&scope, id, patch, &ctx))
            .await
    }

    /// Several updates in one transaction: every one is applied or none is (an unknown id, a
    /// memory another scope owns or one that is no longer active fails the whole call). New texts
    /// are embedded together first.
    pub async fn update_many(
        &self,
        items: Vec<(Scope, MemoryId, UpdateRequest)>,
        ctx: WriteContext,
    ) -> Result<Vec<MemoryRecord>> {
        let patches = self.patches(items).await?;
        self.with_store(move |s| s.update_many(patches, &ctx)).await
    }

    /// Checked patches for updates, the new texts embedded in one batch.
    async fn patches(
        &self,
        items: Vec<(Scope, MemoryId, UpdateRequest)>,
    ) -> Result<Vec<(Scope, MemoryId, MemoryPatch)>> {
        let mut texts = Vec::new();
        let mut checked = Vec::with_capacity(items.len());
        for (scope, id, req) in items {
            scope.validate()?;
            if req.text.is_none() && req.metadata.is_none() && req.expires_at.is_none() {
                return Err(Error::invalid(
                    "update",
                    "give a new text, metadata or expiry",
                ));
            }
            if let Some(m) = &req.metadata {
                mnemo_core::limits::check_json_no_nul("metadata", m)?;
            }
            let metadata = match req.metadata {
                None => None,
                Some(serde_json::Value::Object(mut m)) => {
                    strip_identity_keys(&mut m);
                    Some(m)
                }
                Some(_) => return Err(Error::invalid("metadata", "must be a JSON object")),
            };
            let mut index_text = None;
            if let Some(t) = &req.text {
                mnemo_core::limits::check_text("text", t)?;
                // A note is embedded and indexed by its enriched text, before and after.
                let (s, i) = (scope.clone(), id);
                let current = self
                    .with_store(move |st| st.get(&s, i, &ReadOptions::default()))
                    .await?;
                let embedded = match &current.note {
                    Some(n) => {
                        let e = mnemo_core::note::enriched_text(t, n);
                        index_text = Some(e.clone());
                        e
                    }
                    None => t.clone(),
                };
                texts.push(embedded);
            }
            if let Some(Some(t)) = req.expires_at {
                mnemo_core::limits::check_timestamp("expires_at", t)?;
            }
            checked.push((scope, id, req.text, index_text, metadata, req.expires_at));
        }
        let wanted = texts.len();
        let mut vectors = if texts.is_empty() {
            Vec::new()
        } else {
            self.embed(texts).await?
        };
        if vectors.len() != wanted {
            return Err(Error::Model {
                reason: format!(
                    "the embedder returned {} vectors for {wanted} texts",
                    vectors.len()
                ),
            });
        }
        vectors.reverse();
        Ok(checked
            .into_iter()
            .map(|(scope, id, text, index_text, metadata, expires_at)| {
                let vector = text.as_ref().and_then(|_| vectors.pop());
                let patch = MemoryPatch {
                    text,
                    index_text,
                    vector,
                    metadata,
                    expires_at,
                };
                (scope, id, patch)
            })
            .collect())
    }

    /// Deletes several memories in one transaction: all or none.
    pub async fn delete_many(
        &self,
        items: Vec<(Scope, MemoryId)>,
        mode: DeleteMode,
        ctx: WriteContext,
    ) -> Result<u64> {
        self.with_store(move |s| s.delete_many(&items, mode, &ctx))
            .await
    }

    pub async fn delete(
        &self,
        scope: Scope,
        id: MemoryId,
        mode: DeleteMode,
        ctx: WriteContext,
    ) -> Result<()> {
        self.with_store(move |s| s.delete(&scope, id, mode, &ctx))
            .await
    }

    /// Erases a memory (any state): its text leaves every copy the store keeps — record,
    /// indexes, history, neighbours' context windows, stored idempotent results — and, with
    /// `sources`, the messages it came from. The id, scope, kind and times stay, with an `ERASE`
    /// history event carrying `ctx` (actor, reason). See [`Erasure::erase`].
    pub async fn erase(
        &self,
        scope: Scope,
        id: MemoryId,
        sources: bool,
        ctx: WriteContext,
    ) -> Result<EraseReport> {
        if let Some(r) = &ctx.reason {
            mnemo_core::limits::check_no_nul("reason", r)?;
        }
        self.with_store(move |s| {
            let _turns = crate::scope_lock::take_erase_turn(&scope);
            s.erase(&scope, id, sources, &ctx)
        })
        .await
    }

    /// Erases a whole session of the scope in one transaction (see
    /// [`mnemo_core::Erasure::erase_log`]): every memory with a source message in it (raw turns
    /// and what was derived from them), the content of every message, its pages' texts and the
    /// summaries of the segments they joined. `invalid_input` naming `session_id` for a session
    /// the scope has no message in.
    pub async fn erase_session(
        &self,
        scope: Scope,
        session_id: String,
        ctx: WriteContext,
    ) -> Result<EraseLogReport> {
        mnemo_core::limits::check_no_nul("session_id", &session_id)?;
        if let Some(r) = &ctx.reason {
            mnemo_core::limits::check_no_nul("reason", r)?;
        }
        self.with_store(move |s| {
            let _turns = crate::scope_lock::take_erase_turn(&scope);
            s.erase_log(&scope, EraseTarget::Session(&session_id), &ctx)
        })
        .await
    }

    /// Erases everything the scope covers ("forget this user"): every memory, message, page and
    /// segment summary, in one transaction; ids, counts and `ERASE` events remain. `confirm`
    /// must be true (`invalid_input` naming `confirm` otherwise, and nothing is written).
    pub async fn erase_scope(
        &self,
        scope: Scope,
        confirm: bool,
        ctx: WriteContext,
    ) -> Result<EraseLogReport> {
        scope.validate()?;
        if !confirm {
            return Err(Error::invalid(
                "confirm",
                "erasing a whole scope needs an explicit confirmation",
            ));
        }
        if let Some(r) = &ctx.reason {
            mnemo_core::limits::check_no_nul("reason", r)?;
        }
        self.with_store(move |s| {
            let _turns = crate::scope_lock::take_erase_turn(&scope);
            s.erase_log(&scope, EraseTarget::Scope, &ctx)
        })
        .await
    }

    pub async fn delete_all(
        &self,
        scope: Scope,
        mode: DeleteMode,
        ctx: WriteContext,
    ) -> Result<u64> {
        self.with_store(move |s| s.delete_all(&scope, mode, &ctx))
            .await
    }

    /// The history of a memory and of every memory it superseded, transitively (its lineage),
    /// oldest event first. Each event names the memory it belongs to.
    pub async fn history(&self, scope: Scope, id: MemoryId) -> Result<Vec<HistoryEvent>> {
        self.with_store(move |s| {
            let mut events = s.history(&scope, id, &ReadOptions::default())?;
            // The memory itself follows the default read; the ones it superseded are part of its
            // story in any state, expired included (they are only reached through it).
            let read = ReadOptions {
                include_expired: true,
                include_inactive: true,
                ..ReadOptions::default()
            };
            let mut seen = vec![id];
            let mut frontier = vec![id];
            while let Some(current) = frontier.pop() {
                let links = match s.links(&scope, current) {
                    Ok(l) => l,
                    // A hard-deleted memory has history but no row and no links.
                    Err(e) if e.kind() == ErrorKind::NotFound => continue,
                    Err(e) => return Err(e),
                };
                for l in links {
                    if l.kind == LinkKind::Supersedes && l.from == current && !seen.contains(&l.to)
                    {
                        seen.push(l.to);
                        frontier.push(l.to);
                        events.extend(s.history(&scope, l.to, &read)?);
                    }
                }
            }
            events.sort_by_key(|e| e.id);
            Ok(events)
        })
        .await
    }

    /// What a memory is linked to: its links (both directions) and its entities.
    pub async fn graph(&self, scope: Scope, id: MemoryId) -> Result<(Vec<Link>, Vec<Entity>)> {
        self.with_store(move |s| Ok((s.links(&scope, id)?, s.entities_of(&scope, id)?)))
            .await
    }

    /// The audit view of one memory in any state: the record, the messages it came from, its
    /// links and its entities.
    pub async fn inspect(&self, scope: Scope, id: MemoryId) -> Result<MemoryDetail> {
        self.with_store(move |s| {
            let read = ReadOptions {
                include_expired: true,
                include_inactive: true,
                ..ReadOptions::default()
            };
            let memory = s.get(&scope, id, &read)?;
            // The audit view sees every state; an erased message's blank is still left out.
            let sources = s.messages_by_id(&scope, &memory.sources)?;
            Ok(MemoryDetail {
                source_messages: mnemo_core::visible_messages(s, &scope, sources, &read)?,
                links: s.links(&scope, id)?,
                entities: s.entities_of(&scope, id)?,
                memory,
            })
        })
        .await
    }

    /// Deletes everything in the store. `confirm` must be exactly `"reset"`.
    pub async fn reset(&self, confirm: &str) -> Result<()> {
        if confirm != "reset" {
            return Err(Error::invalid(
                "confirm",
                "reset deletes every memory; pass the confirmation \"reset\"",
            ));
        }
        self.with_store(|s| s.reset()).await?;
        // The reset store forgets its embedding model; a running engine keeps writing with the
        // one it has, so bind it again.
        if let Some(e) = self.inner.embedder.get().cloned() {
            self.with_store(move |s| s.bind_embedder(e.model_id(), e.dimension()))
                .await?;
        }
        Ok(())
    }

    /// Streams every memory and message as export records.
    pub async fn export(&self) -> Result<Vec<ExportRecord>> {
        self.with_store(|s| {
            let mut out = Vec::new();
            s.export(&mut |r| {
                out.push(r);
                Ok(())
            })?;
            Ok(out)
        })
        .await
    }

    /// Writes exported records back in one transaction, embedding the memories that need it.
    pub async fn import_records(&self, records: Vec<ExportRecord>) -> Result<u64> {
        mnemo_core::store::check_records(&records)?;
        // A memory is embedded from its index text when the export carries one (a turn's
        // context window), else from its text (or a note's enriched text); a page from its text.
        let index_texts: std::collections::HashMap<MemoryId, &str> = records
            .iter()
            .filter_map(|r| match r {
                ExportRecord::IndexText {
                    memory_id,
                    index_text,
                } => Some((*memory_id, index_text.as_str())),
                _ => None,
            })
            .collect();
        let texts: Vec<String> = records
            .iter()
            .filter_map(|r| match r {
                ExportRecord::Memory(m) if m.state != MemoryState::Deleted => {
                    Some(match (index_texts.get(&m.id), &m.note) {
                        (Some(t), None) => mnemo_core::text::collapse_repeated_lines(t),
                        (_, Some(n)) => mnemo_core::note::enriched_text(&m.text, n),
                        (None, None) => m.text.clone(),
                    })
                }
                ExportRecord::Page(p) => Some(p.text.clone()),
                _ => None,
            })
            .collect();
        let mut vectors = if texts.is_empty() {
            Vec::new()
        } else {
            self.embed(texts).await?
        }
        .into_iter();
        let paired: Vec<(ExportRecord, Option<Vec<f32>>)> = records
            .into_iter()
            .map(|r| {
                let v = match &r {
                    ExportRecord::Memory(m) if m.state != MemoryState::Deleted => vectors.next(),
                    ExportRecord::Page(_) => vectors.next(),
                    _ => None,
                };
                (r, v)
            })
            .collect();
        self.with_store(move |s| s.import(paired)).await
    }
}

/// A memory with its provenance and graph, as `inspect` returns it.
#[derive(Debug, Clone, Serialize)]
pub struct MemoryDetail {
    #[serde(flatten)]
    pub memory: MemoryRecord,
    pub source_messages: Vec<Message>,
    pub links: Vec<Link>,
    pub entities: Vec<Entity>,
}

/// The stored memory record (named apart from the `Memory` engine).
pub type MemoryRecord = mnemo_core::Memory;

fn list_query(req: ListRequest) -> Result<ListQuery> {
    if let Some(t) = req.as_of {
        mnemo_core::limits::check_timestamp("as_of", t)?;
    }
    let filter = match &req.filters {
        Some(f) => Filter::from_json(f)?,
        None => None,
    };
    Ok(ListQuery {
        scope: req.scope,
        kinds: req.kinds,
        filter,
        limit: req.limit,
        cursor: req.cursor,
        read: ReadOptions {
            as_of: req.as_of,
            ..read_opts(req.include_expired)
        },
    })
}
