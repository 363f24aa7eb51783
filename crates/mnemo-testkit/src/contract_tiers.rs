//! The store contract for the hierarchy: pages in the short-term window, move to segments
//! in the add's transaction with snapshot checks, segment rewrites under optimistic versions,
//! continuity links, visits, LFU eviction that keeps messages and lineage, analysed marks, scope
//! isolation, restart, reset, erase and rebind. Re-exported by `contract`.

use crate::*;
use mnemo_core::tier::{Eviction, PageMove, SegmentWrite};
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

fn window(store: &dyn Store, scope: &Scope, session: Option<&str>) -> Vec<PageId> {
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

pub fn pages_enter_the_window_in_order(h: &dyn Harness) {
    let store = h.fresh();
    let s = scope("tiers-window");
    let a = put_page(store.as_ref(), &s, Some("s1"), "we planned the lake trip");
    let b = put_page(store.as_ref(), &s, Some("s1"), "the weather looked fine");
    let other_session = put_page(store.as_ref(), &s, Some("s2"), "a different chat");
    let no_session = put_page(store.as_ref(), &s, None, "a lone note");
    assert_eq!(window(store.as_ref(), &s, Some("s1")), vec![a, b]);
    assert_eq!(window(store.as_ref(), &s, Some("s2")), vec![other_session]);
    assert_eq!(window(store.as_ref(), &s, None), vec![no_session]);
    let p = page(store.as_ref(), a);
    assert_eq!(p.tier, PageTier::Short);
    assert_eq!(p.text, "user: we planned the lake trip");
    assert_eq!(p.session_id.as_deref(), Some("s1"));
    assert_eq!(p.vector, HashEmbedder::vector("we planned the lake trip"));
    assert!(!p.analysed && p.segment.is_none() && p.continues.is_none());
    assert_eq!(p.message_ids.len(), 1);
    let msgs = store.messages_by_id(&s, &p.message_ids).expect("messages");
    assert_eq!(msgs[0].content, "we planned the lake trip");
    // `limit` keeps the newest pages, still oldest first.
    let newest = store
        .pages(&PageQuery {
            scope: Some(s.clone()),
            limit: Some(2),
            ..PageQuery::default()
        })
        .expect("pages");
    let ids: Vec<PageId> = newest.iter().map(|p| p.id).collect();
    assert_eq!(ids, vec![other_session, no_session]);
    assert!(newest[0].seq < newest[1].seq);
    assert_eq!(store.integrity().expect("integrity").pages, 4);
}

pub fn pages_move_into_segments_in_one_transaction(h: &dyn Harness) {
    let store = h.fresh();
    let s = scope("tiers-move");
    let a = put_page(
        store.as_ref(),
        &s,
        Some("s"),
        "first exchange about gardening",
    );
    let b = put_page(
        store.as_ref(),
        &s,
        Some("s"),
        "second exchange about tomatoes",
    );
    let seg = move_into_new(store.as_ref(), &s, &[a]);
    assert_eq!(seg.version, 1, "a new segment starts at version 1");
    let moved = page(store.as_ref(), a);
    assert_eq!(moved.tier, PageTier::Mid);
    assert_eq!(moved.segment, Some(seg.id));
    assert_eq!(window(store.as_ref(), &s, Some("s")), vec![b]);

    // A stale plan (the page already left the window) fails the whole batch: the add's memory,
    // its new page and the new segment are not written either.
    let before = store.integrity().expect("integrity");
    let segments_before = store.segments(&s, true, true).expect("segments").len();
    let (mut add, new_page) = page_batch(&s, Some("s"), "third exchange");
    let stale = new_segment(&s, "stale");
    add.tiers.segments.push(SegmentWrite {
        segment: stale.clone(),
        expected_version: None,
    });
    add.tiers.moves.push(PageMove {
        page: a,
        segment: stale.id,
        continues: None,
    });
    let err = store.write(vec![add]).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Conflict, "{err}");
    let after = store.integrity().expect("integrity");
    assert_eq!(
        (after.memories, after.messages, after.pages),
        (before.memories, before.messages, before.pages)
    );
    assert_eq!(
        store.segments(&s, true, true).expect("segments").len(),
        segments_before
    );
    assert!(store
        .pages(&PageQuery {
            ids: Some(vec![new_page]),
            ..PageQuery::default()
        })
        .expect("pages")
        .is_empty());
    // A move into a segment that does not exist is refused the same way.
    let err = store
        .write(vec![tier_batch(
            &s,
            TierWrite {
                moves: vec![PageMove {
                    page: b,
                    segment: SegmentId::new(),
                    continues: None,
                }],
                ..TierWrite::default()
            },
        )])
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Conflict, "{err}");
    assert_eq!(page(store.as_ref(), b).tier, PageTier::Short);
    assert!(store.integrity().expect("integrity").is_consistent());
}

/// How many memories of `scope` a listing shows.
fn memories_of(store: &dyn Store, scope: &Scope) -> usize {
    crate::contract::list_all(store, scope, 1000).len()
}

/// `Store::write_planned`: the batches come without hierarchy changes and the plan brings
/// them, written in the same transaction. The plan's error, a plan of the wrong length, a bad
/// or stale tier write, or a batch that brings its own tiers: the whole write fails and nothing
/// of it stays (a store that writes the plan last must roll its records back). A replayed
/// batch writes nothing of its plan.
pub fn planned_writes_take_their_tiers_from_the_plan(h: &dyn Harness) {
    let store = h.fresh();
    let s = scope("tiers-planned");
    let st = store.as_ref();
    let planned = |b: WriteBatch, tiers: Vec<TierWrite>| {
        st.write_planned(vec![b], Box::new(move || Ok(tiers)))
    };

    // The plan's page lands in the window with the batch's records.
    let (mut b, a) = page_batch(&s, Some("s"), "we planned the lake trip");
    let tiers = std::mem::take(&mut b.tiers);
    let out = planned(b, vec![tiers]).expect("a planned write succeeds");
    assert_eq!(out.len(), 1);
    assert!(!out[0].replayed);
    assert_eq!(window(st, &s, Some("s")), vec![a]);
    assert_eq!(memories_of(st, &s), 1);

    // A batch that brings its own tiers is refused.
    let (b, _) = page_batch(&s, Some("s"), "a batch with its own page");
    let err = planned(b, vec![TierWrite::default()]).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidInput, "{err}");

    // The plan's own error is the write's.
    let (mut b, _) = page_batch(&s, Some("s"), "the planner fails");
    b.tiers = TierWrite::default();
    let err = st
        .write_planned(
            vec![b],
            Box::new(|| {
                Err(Error::Unavailable {
                    component: "planner".into(),
                    reason: "test".into(),
                })
            }),
        )
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Unavailable, "{err}");

    // A plan with one tier write too many.
    let (mut b, _) = page_batch(&s, Some("s"), "two plans for one batch");
    let tiers = std::mem::take(&mut b.tiers);
    assert!(planned(b, vec![tiers, TierWrite::default()]).is_err());

    // A page whose vector has the wrong dimension.
    let (mut b, _) = page_batch(&s, Some("s"), "a page of the wrong size");
    let mut tiers = std::mem::take(&mut b.tiers);
    tiers.pages[0].vector.push(0.5);
    let err = planned(b, vec![tiers]).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidInput, "{err}");

    // A stale segment rewrite: known only once the records are written.
    let seg = move_into_new(st, &s, &[a]);
    let mut stale = seg.clone();
    stale.summary = "a stale summary".into();
    let (mut b, _) = page_batch(&s, Some("s"), "a plan from an old snapshot");
    let mut tiers = std::mem::take(&mut b.tiers);
    tiers.segments.push(SegmentWrite {
        segment: stale,
        expected_version: Some(seg.version + 5),
    });
    let err = planned(b, vec![tiers]).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Conflict, "{err}");

    // None of the failed writes left a memory, a message or a page.
    assert_eq!(memories_of(st, &s), 1);
    assert_eq!(
        st.messages(&s, Some("s"), 100).expect("messages").len(),
        1,
        "only the first write's message is logged"
    );
    assert!(window(st, &s, Some("s")).is_empty(), "the first page moved");
    assert_eq!(
        st.segments(&s, true, false).expect("segments")[0].summary,
        seg.summary
    );

    // A replay writes nothing of its plan.
    let idem = Idempotency {
        key: "planned-1".into(),
        request_hash: "h".into(),
    };
    let (mut b, _) = page_batch(&s, Some("t"), "a keyed planned add");
    b.idempotency = Some(idem.clone());
    let tiers = std::mem::take(&mut b.tiers);
    let first = planned(b.clone(), vec![tiers.clone()]).expect("first try");
    assert!(!first[0].replayed);
    let mut again = tiers;
    again.pages[0].id = PageId::new();
    let second = planned(b, vec![again]).expect("the retry is replayed");
    assert!(second[0].replayed);
    assert_eq!(
        window(st, &s, Some("t")).len(),
        1,
        "the replay opened no page"
    );
}

pub fn segment_rewrites_check_their_version(h: &dyn Harness) {
    let store = h.fresh();
    let s = scope("tiers-version");
    let a = put_page(store.as_ref(), &s, Some("s"), "hiking in the alps");
    let b = put_page(store.as_ref(), &s, Some("s"), "more hiking in the alps");
    let seg = move_into_new(store.as_ref(), &s, &[a]);
    let mut joined = seg.clone();
    joined.summary = "hiking trips".into();
    joined.page_count = 2;
    let ok = TierWrite {
        segments: vec![SegmentWrite {
            segment: joined.clone(),
            expected_version: Some(seg.version),
        }],
        moves: vec![PageMove {
            page: b,
            segment: seg.id,
            continues: Some(a),
        }],
        ..TierWrite::default()
    };
    store
        .write(vec![tier_batch(&s, ok)])
        .expect("a current rewrite succeeds");
    let now = &store.segments(&s, true, false).expect("segments")[0];
    assert_eq!((now.version, now.page_count), (2, 2));
    assert_eq!(now.summary, "hiking trips");
    // The continuity link is kept on the page.
    assert_eq!(page(store.as_ref(), b).continues, Some(a));

    // The same rewrite again is stale.
    let stale = TierWrite {
        segments: vec![SegmentWrite {
            segment: joined,
            expected_version: Some(seg.version),
        }],
        ..TierWrite::default()
    };
    let err = store.write(vec![tier_batch(&s, stale)]).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Conflict, "{err}");
    assert_eq!(
        store.segments(&s, true, false).expect("segments")[0].version,
        2
    );

    // A continuity link to a page that is not the scope's is invalid input.
    let c = put_page(store.as_ref(), &s, Some("s"), "yet another hike");
    let bad = TierWrite {
        moves: vec![PageMove {
            page: c,
            segment: seg.id,
            continues: Some(PageId::new()),
        }],
        ..TierWrite::default()
    };
    let err = store.write(vec![tier_batch(&s, bad)]).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidInput, "{err}");
    assert_eq!(page(store.as_ref(), c).tier, PageTier::Short);
}

pub fn visits_warm_segments_of_the_scope_only(h: &dyn Harness) {
    let store = h.fresh();
    let s = scope("tiers-visits");
    let other = scope("tiers-visits-other");
    let a = put_page(store.as_ref(), &s, None, "cooking pasta at home");
    let seg = move_into_new(store.as_ref(), &s, &[a]);
    let later = seg.last_visit_at + chrono::Duration::hours(1);
    assert_eq!(
        store
            .record_visits(&Visits::new(s.clone(), vec![(seg.id, 2)], later).unwrap())
            .expect("visits"),
        1
    );
    // Another scope cannot warm it; an unknown segment is skipped.
    assert_eq!(
        store
            .record_visits(
                &Visits::new(
                    other.clone(),
                    vec![(seg.id, 5), (SegmentId::new(), 1)],
                    later
                )
                .unwrap()
            )
            .expect("visits"),
        0
    );
    // An earlier visit does not move the last visit back.
    store
        .record_visits(&Visits::new(s.clone(), vec![(seg.id, 1)], seg.last_visit_at).unwrap())
        .expect("visits");
    let now = &store.segments(&s, true, false).expect("segments")[0];
    assert_eq!(now.visits, 3);
    assert_eq!(
        now.last_visit_at.timestamp_millis(),
        later.timestamp_millis()
    );
    assert_eq!(
        now.version,
        seg.version + 2,
        "each visit batch is a new version"
    );
    let w = HeatWeights::default();
    assert!(tier::heat(now, &w, later) > tier::heat(&seg, &w, later));
}

pub fn eviction_keeps_messages_and_lineage(h: &dyn Harness) {
    let store = h.fresh();
    let s = scope("tiers-evict");
    let (b, a) = page_batch(&s, Some("s"), "I adopted a cat named Miso");
    let fact_source = b.messages[0].id;
    let raw_id = store.write(vec![b]).expect("write")[0].results[0].id;
    let seg = move_into_new(store.as_ref(), &s, &[a]);
    let evict = TierWrite {
        evictions: vec![Eviction {
            segment: seg.id,
            expected_version: seg.version,
            reason: "coldest of 2 segments".into(),
        }],
        ..TierWrite::default()
    };
    store
        .write(vec![tier_batch(&s, evict.clone())])
        .expect("eviction succeeds");
    assert!(store
        .segments(&s, true, false)
        .expect("segments")
        .is_empty());
    let all = store.segments(&s, true, true).expect("segments");
    assert_eq!(all.len(), 1);
    assert!(all[0].evicted_at.is_some());
    assert_eq!(page(store.as_ref(), a).tier, PageTier::Evicted);
    let events = store
        .history(&HistoryQuery::new(
            &s,
            MemoryId(seg.id.0),
            ReadOptions::default(),
        ))
        .expect("segment history");
    assert_eq!(events.len(), 1);
    assert_eq!(events[0].event, HistoryKind::Evict);
    assert_eq!(events[0].reason.as_deref(), Some("coldest of 2 segments"));
    // The message and the memory derived from it, with its provenance, stay.
    let m = store
        .get(&s, raw_id, &ReadOptions::default())
        .expect("the derived memory stays");
    assert_eq!(m.sources, vec![fact_source]);
    let msgs = store.messages_by_id(&s, &m.sources).expect("sources");
    assert_eq!(msgs[0].content, "I adopted a cat named Miso");
    // Evicting twice is a conflict; visits to an evicted segment are skipped.
    let err = store.write(vec![tier_batch(&s, evict)]).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Conflict, "{err}");
    assert_eq!(
        store
            .record_visits(&Visits::new(s.clone(), vec![(seg.id, 1)], chrono::Utc::now()).unwrap())
            .expect("visits"),
        0
    );
    assert!(store.integrity().expect("integrity").is_consistent());
}

pub fn tiers_are_isolated_by_scope(h: &dyn Harness) {
    let store = h.fresh();
    let alice = scope("tiers-alice");
    let bob = scope("tiers-bob");
    let a = put_page(store.as_ref(), &alice, Some("s"), "alice likes jazz");
    let b = put_page(store.as_ref(), &bob, Some("s"), "bob likes metal");
    move_into_new(store.as_ref(), &alice, &[a]);
    let bob_pages = store
        .pages(&PageQuery {
            scope: Some(bob.clone()),
            ..PageQuery::default()
        })
        .expect("pages");
    assert_eq!(bob_pages.iter().map(|p| p.id).collect::<Vec<_>>(), vec![b]);
    assert!(store
        .segments(&bob, false, true)
        .expect("segments")
        .is_empty());
    // Bob's batch cannot move Alice's page, even into his own segment.
    let seg = new_segment(&bob, "bob");
    let err = store
        .write(vec![tier_batch(
            &bob,
            TierWrite {
                segments: vec![SegmentWrite {
                    segment: seg.clone(),
                    expected_version: None,
                }],
                moves: vec![PageMove {
                    page: put_page(store.as_ref(), &alice, Some("s"), "alice again"),
                    segment: seg.id,
                    continues: None,
                }],
                ..TierWrite::default()
            },
        )])
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Conflict, "{err}");
    // A page or segment carrying another scope than its batch is invalid input.
    let (mut mixed, _) = page_batch(&bob, Some("s"), "bob writes");
    mixed.tiers.pages[0].scope = alice.clone();
    assert_eq!(
        store.write(vec![mixed]).unwrap_err().kind(),
        ErrorKind::InvalidInput
    );
    // A user's covering scope sees the pages of the user's agents; an exact read does not.
    let alice_agent = Scope::from_parts(Some("tiers-alice"), Some("helper"), None).expect("scope");
    put_page(store.as_ref(), &alice_agent, Some("s"), "agent side");
    let covering = store
        .pages(&PageQuery {
            scope: Some(alice.clone()),
            ..PageQuery::default()
        })
        .expect("pages");
    assert_eq!(covering.len(), 3);
    let exact = store
        .pages(&PageQuery {
            scope: Some(alice.clone()),
            exact: true,
            ..PageQuery::default()
        })
        .expect("pages");
    assert_eq!(exact.len(), 2);
}

pub fn tiers_survive_reopen_and_reset(h: &dyn Harness) {
    let store = h.fresh();
    let s = scope("tiers-reopen");
    let a = put_page(store.as_ref(), &s, Some("s"), "a page to keep");
    let seg = move_into_new(store.as_ref(), &s, &[a]);
    let store = h.reopen(store);
    assert_eq!(page(store.as_ref(), a).segment, Some(seg.id));
    let segs = store.segments(&s, true, false).expect("segments");
    assert_eq!(segs.len(), 1);
    assert_eq!(segs[0].vector, seg.vector);
    assert_eq!(segs[0].keywords, seg.keywords);
    store.reset().expect("reset");
    store
        .bind_embedder(&Binding::new(HashEmbedder::MODEL_ID, HashEmbedder::DIM).unwrap())
        .expect("bind");
    assert!(store
        .pages(&PageQuery::default())
        .expect("pages")
        .is_empty());
    assert!(store
        .segments(&s, false, true)
        .expect("segments")
        .is_empty());
}

pub fn analysed_marks_are_part_of_the_batch(h: &dyn Harness) {
    let store = h.fresh();
    let s = scope("tiers-analysed");
    let a = put_page(store.as_ref(), &s, None, "I work as a nurse");
    // An unknown page fails the batch, and the memory written with it is rolled back.
    let mut b = batch(&s, "the user is a nurse", json!({}));
    b.tiers.analysed = vec![a, PageId::new()];
    let before = store.integrity().expect("integrity").memories;
    assert_eq!(
        store.write(vec![b]).unwrap_err().kind(),
        ErrorKind::NotFound
    );
    assert_eq!(store.integrity().expect("integrity").memories, before);
    assert!(!page(store.as_ref(), a).analysed);
    let mut b = batch(&s, "the user is a nurse", json!({}));
    b.tiers.analysed = vec![a];
    store.write(vec![b]).expect("write");
    assert!(page(store.as_ref(), a).analysed);
    let unanalysed = store
        .pages(&PageQuery {
            scope: Some(s.clone()),
            analysed: Some(false),
            ..PageQuery::default()
        })
        .expect("pages");
    assert!(unanalysed.is_empty());
    // A page already consumed cannot be consumed again: a second analysis racing the first
    // fails whole (its memory is not written).
    let mut again = batch(&s, "the user is a nurse, again", json!({}));
    again.tiers.analysed = vec![a];
    let before = store.integrity().expect("integrity").memories;
    assert_eq!(
        store.write(vec![again]).unwrap_err().kind(),
        ErrorKind::Conflict
    );
    assert_eq!(store.integrity().expect("integrity").memories, before);
    // Another scope cannot mark it.
    let mut b = batch(&scope("tiers-analysed-2"), "x", json!({}));
    b.tiers.analysed = vec![a];
    assert_eq!(
        store.write(vec![b]).unwrap_err().kind(),
        ErrorKind::NotFound
    );
}

pub fn erase_scrubs_pages_and_summaries(h: &dyn Harness) {
    let store = h.fresh();
    let s = scope("tiers-erase");
    let secret = "my passport number is X1234567";
    let (b, a) = page_batch(&s, Some("s"), secret);
    let id = store.write(vec![b]).expect("write")[0].results[0].id;
    let mut seg = new_segment(&s, &format!("summary: {secret}"));
    seg.summary = format!("the user said {secret}");
    seg.keywords = vec!["X1234567".into(), "travel".into()];
    store
        .write(vec![tier_batch(
            &s,
            TierWrite {
                segments: vec![SegmentWrite {
                    segment: seg,
                    expected_version: None,
                }],
                ..TierWrite::default()
            },
        )])
        .expect("segment");
    let report = store
        .erase(&EraseMemory::new(&s, id, true), &WritePlan::default())
        .expect("erase");
    assert_eq!(report.pages_scrubbed, 2, "{report:?}");
    let p = page(store.as_ref(), a);
    assert!(!p.text.contains("X1234567"), "{}", p.text);
    assert!(
        !p.keywords.iter().any(|k| k.contains("X1234567")),
        "{:?}",
        p.keywords
    );
    let segs = store.segments(&s, true, false).expect("segments");
    assert!(!segs[0].summary.contains("X1234567"), "{}", segs[0].summary);
    assert_eq!(segs[0].keywords, vec!["travel".to_string()]);
}

pub fn rebind_reembeds_pages_and_segments(h: &dyn Harness) {
    let store = h.fresh();
    let s = scope("tiers-rebind");
    let a = put_page(store.as_ref(), &s, None, "sailing on the fjord");
    move_into_new(store.as_ref(), &s, &[a]);
    let dim = HashEmbedder::DIM + 8;
    let mut embed = |texts: &[&str]| -> Result<Vec<Vec<f32>>> {
        Ok(texts
            .iter()
            .map(|t| HashEmbedder::vector_in(t, dim))
            .collect())
    };
    store
        .rebind_embedder(
            &Rebind {
                to: Binding::new("hash-wide", dim).unwrap(),
                batch: 4,
            },
            &mut embed,
        )
        .expect("rebind");
    let p = page(store.as_ref(), a);
    assert_eq!(p.vector, HashEmbedder::vector_in(&p.text, dim));
    let seg = &store.segments(&s, true, false).expect("segments")[0];
    assert_eq!(seg.vector.len(), dim);
    assert!((tier::cosine(&seg.vector, &p.vector) - 1.0).abs() < 1e-5);
}
