//! Fixtures of the hierarchy's store contract (`contract_tiers`, `contract_tier_lifecycle`):
//! batches that open pages, new segments, tier writes, and reads of a scope's window, a page
//! and its memories. Re-exported by `contract`.

use crate::*;
use mnemo_core::*;
use serde_json::json;

/// A batch that logs one message, stores it as a raw memory and opens a page of it in
/// `session`'s window; returns the batch and the page id.
pub fn page_batch(scope: &Scope, session: Option<&str>, text: &str) -> (WriteBatch, PageId) {
    let mut b = batch(scope, text, json!({}));
    b.messages[0].session_id = session.map(str::to_string);
    let page = NewPage {
        id: PageId::new(),
        scope: scope.clone(),
        session_id: session.map(str::to_string),
        message_ids: vec![b.messages[0].id],
        text: format!("user: {text}"),
        tokens: text.split_whitespace().count() as u32 + 2,
        at: b.messages[0].created_at,
        vector: HashEmbedder::vector(text),
        keywords: text
            .split_whitespace()
            .filter(|w| w.len() > 3)
            .map(|w| w.to_lowercase())
            .collect(),
    };
    let id = page.id;
    b.tiers.pages.push(page);
    (b, id)
}

/// Writes one page (with its message and raw memory); returns the page id.
pub fn put_page(store: &dyn Store, scope: &Scope, session: Option<&str>, text: &str) -> PageId {
    let (b, id) = page_batch(scope, session, text);
    store.write(vec![b]).expect("page write succeeds");
    id
}

/// A new segment of `scope` built from `text`.
pub fn new_segment(scope: &Scope, text: &str) -> Segment {
    let now = chrono::Utc::now();
    Segment {
        id: SegmentId::new(),
        scope: scope.clone(),
        summary: text.to_string(),
        summary_author: Author::Rule,
        keywords: vec!["topic".into()],
        vector: HashEmbedder::vector(text),
        page_count: 1,
        length_tokens: 10,
        visits: 0,
        last_visit_at: now,
        created_at: now,
        updated_at: now,
        evicted_at: None,
        version: 0,
        event_time: None,
    }
}

/// A batch of `scope` carrying only hierarchy changes.
pub fn tier_batch(scope: &Scope, tiers: TierWrite) -> WriteBatch {
    let mut b = WriteBatch::new(scope.clone(), Vec::new(), Vec::new());
    b.tiers = tiers;
    b
}

pub(crate) fn window(store: &dyn Store, scope: &Scope, session: Option<&str>) -> Vec<PageId> {
    store
        .pages(&PageQuery {
            scope: Some(scope.clone()),
            exact: true,
            session: Some(session.map(str::to_string)),
            tier: Some(PageTier::Short),
            ..PageQuery::default()
        })
        .expect("pages read")
        .into_iter()
        .map(|p| p.id)
        .collect()
}

/// The stored page `id` (of any scope), which must exist exactly once.
pub fn page(store: &dyn Store, id: PageId) -> StoredPage {
    let mut found = store
        .pages(&PageQuery {
            ids: Some(vec![id]),
            ..PageQuery::default()
        })
        .expect("pages read");
    assert_eq!(found.len(), 1, "page {id} is stored once");
    found.remove(0)
}

/// Moves `pages` into a new segment in one batch; returns the segment.
pub fn move_into_new(store: &dyn Store, scope: &Scope, pages: &[PageId]) -> Segment {
    let seg = new_segment(scope, "a trip to the lake");
    let tiers = TierWrite {
        segments: vec![SegmentWrite {
            segment: seg.clone(),
            expected_version: None,
        }],
        moves: pages
            .iter()
            .map(|p| PageMove {
                page: *p,
                segment: seg.id,
                continues: None,
            })
            .collect(),
        ..TierWrite::default()
    };
    store
        .write(vec![tier_batch(scope, tiers)])
        .expect("move succeeds");
    store
        .segments(scope, true, false)
        .expect("segments read")
        .into_iter()
        .find(|s| s.id == seg.id)
        .expect("the new segment is stored")
}

/// How many memories of `scope` a listing shows.
pub(crate) fn memories_of(store: &dyn Store, scope: &Scope) -> usize {
    crate::contract::list_all(store, scope, 1000).len()
}
