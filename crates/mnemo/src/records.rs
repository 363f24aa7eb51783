//! The record operations: get, list, update, delete, history, inspect.

use crate::Memory;
use mnemo_core::*;
use serde::Serialize;

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
        ctx: WritePlan,
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
        ctx: WritePlan,
    ) -> Result<Vec<MemoryRecord>> {
        let updates = Updates::new(self.patches(items).await?)?;
        self.with_store(move |s| s.update_many(&updates, &ctx))
            .await
    }

    /// Checked patches for updates, the new texts embedded in one batch.
    async fn patches(
        &self,
        items: Vec<(Scope, MemoryId, UpdateRequest)>,
    ) -> Result<Vec<(Scope, MemoryId, MemoryPatch)>> {
        let mut texts = Vec::new();
        let mut checked = Vec::with_capacity(items.len());
        for (scope, id, req) in items {
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
        ctx: WritePlan,
    ) -> Result<u64> {
        self.with_store(move |s| s.delete_many(&Deletes { items, mode }, &ctx))
            .await
    }

    pub async fn delete(
        &self,
        scope: Scope,
        id: MemoryId,
        mode: DeleteMode,
        ctx: WritePlan,
    ) -> Result<()> {
        self.with_store(move |s| s.delete(&scope, id, mode, &ctx))
            .await
    }

    pub async fn delete_all(&self, scope: Scope, mode: DeleteMode, ctx: WritePlan) -> Result<u64> {
        self.with_store(move |s| s.delete_all(&scope, mode, &ctx))
            .await
    }

    /// The history of a memory and of every memory it superseded, transitively (its lineage),
    /// oldest event first. Each event names the memory it belongs to.
    pub async fn history(&self, scope: Scope, id: MemoryId) -> Result<Vec<HistoryEvent>> {
        self.with_store(move |s| {
            let mut events = s.history(&HistoryQuery::new(&scope, id, ReadOptions::default()))?;
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
                        events.extend(s.history(&HistoryQuery::new(&scope, l.to, read))?);
                    }
                }
            }
            events.sort_by_key(|e| e.id);
            Ok(events)
        })
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
    Ok(ListQuery::new(req.scope, req.limit)
        .with_kinds(req.kinds)
        .with_filter(filter)
        .with_cursor(req.cursor)
        .with_read(ReadOptions {
            as_of: req.as_of,
            ..read_opts(req.include_expired)
        }))
}
