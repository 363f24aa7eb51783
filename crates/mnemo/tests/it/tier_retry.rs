//! Re-planning on a stale snapshot: a store that lets another writer (here: segment visits)
//! change every segment between the plan's snapshot and its write, a given number of times.

use mnemo::core::*;
use mnemo::{AddInput, AddRequest, Memory};
use mnemo_testkit::engines;
use mnemo_testkit::HashEmbedder;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// The run's store, except that each of the first `races` writes is preceded by a visit to
/// every active segment of its scopes (which moves their versions past the plan's).
struct Racing {
    inner: Arc<dyn Store>,
    races: AtomicUsize,
    writes: AtomicUsize,
}

impl mnemo::core::RecordWrites for Racing {
    fn write(&self, batches: Vec<WriteBatch>) -> Result<Vec<AddOutcome>> {
        self.writes.fetch_add(1, Ordering::SeqCst);
        let race = self
            .races
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
            .is_ok();
        if race {
            for b in &batches {
                let counts: Vec<(SegmentId, u32)> = self
                    .inner
                    .segments(&b.scope, true, false)?
                    .iter()
                    .map(|s| (s.id, 1))
                    .collect();
                if let Some(v) = Visits::new(b.scope.clone(), counts, chrono::Utc::now()) {
                    self.inner.record_visits(&v)?;
                }
            }
        }
        self.inner.write(batches)
    }
    fn replay(&self, scope: &Scope, idem: &Idempotency) -> Result<Option<AddOutcome>> {
        self.inner.replay(scope, idem)
    }
    fn update(
        &self,
        s: &Scope,
        id: MemoryId,
        p: MemoryPatch,
        c: &WritePlan,
    ) -> Result<mnemo::core::Memory> {
        self.inner.update(s, id, p, c)
    }
    fn delete(&self, s: &Scope, id: MemoryId, m: DeleteMode, c: &WritePlan) -> Result<()> {
        self.inner.delete(s, id, m, c)
    }
    fn update_many(&self, u: &Updates, c: &WritePlan) -> Result<Vec<mnemo::core::Memory>> {
        self.inner.update_many(u, c)
    }
    fn delete_many(&self, d: &Deletes, c: &WritePlan) -> Result<u64> {
        self.inner.delete_many(d, c)
    }
    fn delete_all(&self, s: &Scope, m: DeleteMode, c: &WritePlan) -> Result<u64> {
        self.inner.delete_all(s, m, c)
    }
    fn touch(&self, s: &Scope, ids: &[MemoryId], at: Timestamp) -> Result<u64> {
        self.inner.touch(s, ids, at)
    }
}

impl mnemo::core::Records for Racing {
    fn get(&self, scope: &Scope, id: MemoryId, read: &ReadOptions) -> Result<mnemo::core::Memory> {
        self.inner.get(scope, id, read)
    }
    fn list(&self, query: &ListQuery) -> Result<Page> {
        self.inner.list(query)
    }
    fn history(&self, q: &HistoryQuery<'_>) -> Result<Vec<HistoryEvent>> {
        self.inner.history(q)
    }
    fn find_by_hash(&self, s: &Scope, h: &[String]) -> Result<Vec<(String, MemoryId)>> {
        self.inner.find_by_hash(s, h)
    }
    fn owner_of(&self, id: MemoryId) -> Result<Scope> {
        self.inner.owner_of(id)
    }
    fn owners(&self) -> Result<Vec<(Scope, u64)>> {
        self.inner.owners()
    }
}

impl mnemo::core::Retrieval for Racing {
    fn dense_candidates(&self, q: &CandidateQuery<'_>, v: &[f32]) -> Result<Vec<Candidate>> {
        self.inner.dense_candidates(q, v)
    }
    fn lexical_candidates(&self, q: &CandidateQuery<'_>, t: &[String]) -> Result<Vec<Candidate>> {
        self.inner.lexical_candidates(q, t)
    }
    fn vector_scores(&self, q: &ScoreQuery<'_>) -> Result<Vec<Candidate>> {
        self.inner.vector_scores(q)
    }
    fn fetch(&self, q: &CandidateQuery<'_>, k: &[i64]) -> Result<Vec<(i64, mnemo::core::Memory)>> {
        self.inner.fetch(q, k)
    }
    fn entity_candidates(&self, q: &EntityQuery<'_>) -> Result<Vec<Candidate>> {
        self.inner.entity_candidates(q)
    }
}

impl mnemo::core::Timeline for Racing {
    fn timeline(&self, q: &TimelineQuery) -> Result<Page> {
        self.inner.timeline(q)
    }
    fn event_candidates(
        &self,
        q: &CandidateQuery<'_>,
        r: &EventRange,
        pooled: &[i64],
    ) -> Result<Vec<Candidate>> {
        self.inner.event_candidates(q, r, pooled)
    }
}

impl mnemo::core::Graph for Racing {
    fn links(&self, s: &Scope, id: MemoryId) -> Result<Vec<Link>> {
        self.inner.links(s, id)
    }
    fn add_links(&self, s: &Scope, l: &[Link]) -> Result<()> {
        self.inner.add_links(s, l)
    }
    fn remove_link(&self, s: &Scope, k: &LinkKey) -> Result<bool> {
        self.inner.remove_link(s, k)
    }
    fn linked(&self, q: &LinkedQuery<'_>) -> Result<Vec<LinkedMemory>> {
        self.inner.linked(q)
    }
    fn entities_of(&self, s: &Scope, id: MemoryId) -> Result<Vec<Entity>> {
        self.inner.entities_of(s, id)
    }
}

impl mnemo::core::Relations for Racing {
    fn find_entities(&self, s: &Scope, name: &str, limit: usize) -> Result<Vec<Entity>> {
        self.inner.find_entities(s, name, limit)
    }
    fn edges(&self, q: &mnemo::core::EdgeQuery<'_>) -> Result<Vec<mnemo::core::Relation>> {
        self.inner.edges(q)
    }
    fn relation(&self, s: &Scope, id: mnemo::core::RelationId) -> Result<mnemo::core::Relation> {
        self.inner.relation(s, id)
    }
}

impl mnemo::core::Messages for Racing {
    fn messages_by_id(&self, s: &Scope, ids: &[MessageId]) -> Result<Vec<Message>> {
        self.inner.messages_by_id(s, ids)
    }
    fn raw_of_messages(&self, s: &Scope, ids: &[MessageId]) -> Result<Vec<mnemo::core::Memory>> {
        self.inner.raw_of_messages(s, ids)
    }
    fn messages(&self, s: &Scope, session: Option<&str>, limit: usize) -> Result<Vec<Message>> {
        self.inner.messages(s, session, limit)
    }
    fn sessions(&self, s: &Scope, q: &SessionQuery<'_>) -> Result<Vec<SessionInfo>> {
        self.inner.sessions(s, q)
    }
    fn session_messages(&self, q: &SessionLogQuery<'_>) -> Result<Vec<Message>> {
        self.inner.session_messages(q)
    }
    fn session_memories(&self, s: &Scope, session: &str) -> Result<Vec<MemoryId>> {
        self.inner.session_memories(s, session)
    }
}

impl mnemo::core::Erasure for Racing {
    fn erase(&self, m: &EraseMemory<'_>, c: &WritePlan) -> Result<EraseReport> {
        self.inner.erase(m, c)
    }
    fn erase_log(&self, l: &EraseLog<'_>, c: &WritePlan) -> Result<EraseLogReport> {
        self.inner.erase_log(l, c)
    }
}

impl mnemo::core::Tiers for Racing {
    fn pages(&self, q: &PageQuery) -> Result<Vec<StoredPage>> {
        self.inner.pages(q)
    }
    fn segments(&self, s: &Scope, exact: bool, evicted: bool) -> Result<Vec<Segment>> {
        self.inner.segments(s, exact, evicted)
    }
    fn record_visits(&self, v: &Visits) -> Result<u64> {
        self.inner.record_visits(v)
    }
}

impl mnemo::core::Transfer for Racing {
    fn export(&self, sink: &mut dyn FnMut(ExportRecord) -> Result<()>) -> Result<()> {
        self.inner.export(sink)
    }
    fn import(&self, r: Vec<(ExportRecord, Option<Vec<f32>>)>) -> Result<u64> {
        self.inner.import(r)
    }
}

impl mnemo::core::Blocks for Racing {
    fn create_block(&self, n: &NewBlock, l: &BlockLimits) -> Result<MemoryBlock> {
        self.inner.create_block(n, l)
    }
    fn block(&self, s: &Scope, l: &BlockLabel) -> Result<Option<MemoryBlock>> {
        self.inner.block(s, l)
    }
    fn list_blocks(&self, q: &BlockQuery) -> Result<BlockPage> {
        self.inner.list_blocks(q)
    }
    fn edit_block(&self, e: &BlockEdit) -> Result<MemoryBlock> {
        self.inner.edit_block(e)
    }
    fn delete_block(
        &self,
        s: &Scope,
        l: &BlockLabel,
        a: &BlockActor,
        r: Option<&str>,
    ) -> Result<MemoryBlock> {
        self.inner.delete_block(s, l, a, r)
    }
    fn block_history(&self, s: &Scope, l: &BlockLabel, n: usize) -> Result<Vec<BlockEvent>> {
        self.inner.block_history(s, l, n)
    }
    fn pinned_blocks(&self, s: &Scope) -> Result<Vec<MemoryBlock>> {
        self.inner.pinned_blocks(s)
    }
}

impl mnemo::core::Admin for Racing {
    fn bind_embedder(&self, b: &Binding) -> Result<()> {
        self.inner.bind_embedder(b)
    }
    fn rebind_embedder(&self, r: &Rebind, e: &mut EmbedBatch<'_>) -> Result<u64> {
        self.inner.rebind_embedder(r, e)
    }
    fn reset(&self) -> Result<()> {
        self.inner.reset()
    }
    fn integrity(&self) -> Result<IntegrityReport> {
        self.inner.integrity()
    }
    fn stats(&self) -> Result<StoreStats> {
        self.inner.stats()
    }
}

/// A wrapper for one test keeps no API keys and no job queue of its own.
impl mnemo::core::SideTables for Racing {
    fn api_keys(&self) -> Option<&dyn ApiKeyStore> {
        None
    }
    fn jobs(&self) -> Option<&dyn JobStore> {
        None
    }
}

fn tea(n: usize) -> AddRequest {
    let mut req = AddRequest::text(Scope::user("lena").unwrap(), "");
    req.input = AddInput::Messages(vec![InputMessage {
        role: Role::User,
        content: format!("green jasmine tea from the new kettle, cup {n}"),
        name: Some("Lena".into()),
    }]);
    req.session_id = Some("s1".into());
    req
}

/// An engine whose window holds one page, with two tea pages already added (one of them in a
/// segment), and `races` stale-snapshot writes to come.
async fn engine(races: usize) -> (Memory, Arc<Racing>, engines::TestStore) {
    let dir = engines::fresh_store();
    let store = Arc::new(Racing {
        inner: dir.store(),
        races: AtomicUsize::new(0),
        writes: AtomicUsize::new(0),
    });
    let m = Memory::from_parts(store.clone(), Arc::new(HashEmbedder), RankParams::default())
        .unwrap()
        .with_tier_config(TierConfig {
            short_term_capacity: 1,
            ..TierConfig::default()
        });
    m.add(tea(1)).await.unwrap();
    m.add(tea(2)).await.unwrap();
    store.races.store(races, Ordering::SeqCst);
    store.writes.store(0, Ordering::SeqCst);
    (m, store, dir)
}

#[tokio::test]
async fn a_stale_segment_version_is_planned_again_and_the_add_succeeds() {
    let (m, store, _dir) = engine(2).await;
    m.add(tea(3)).await.unwrap();
    assert_eq!(
        store.writes.load(Ordering::SeqCst),
        3,
        "two refused, the third written"
    );
    let segments =
        engines::off_runtime(|| store.segments(&Scope::user("lena").unwrap(), true, false))
            .unwrap();
    assert_eq!(segments.len(), 1);
    assert_eq!(
        segments[0].page_count, 2,
        "the second page joined the same segment"
    );
    assert_eq!(segments[0].visits, 2, "the racing visits were kept");
}

#[tokio::test]
async fn a_write_still_stale_after_sixteen_plans_is_retryable_and_writes_nothing() {
    let (m, store, dir) = engine(18).await;
    let rows = dir.row_counts();
    let err = m.add(tea(3)).await.unwrap_err();
    // Other writers kept winning: nothing is wrong with the request, so a client may retry.
    assert_eq!(err.kind(), ErrorKind::Unavailable, "{err}");
    assert!(err.kind().is_retryable());
    assert!(err.to_string().contains("retry the add"), "{err}");
    assert_eq!(store.writes.load(Ordering::SeqCst), 16);
    let after = dir.row_counts();
    // Only the racing visits changed anything (segment rows are updated in place).
    assert_eq!(after, rows);
}
