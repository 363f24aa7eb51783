//! The store contract for the hierarchy, lifecycle: visits, LFU eviction that keeps messages
//! and lineage, scope isolation, restart and reset, analysed marks, erase and rebind.
//! Re-exported by `contract`.

use crate::contract_tier_fixtures::*;
use crate::*;
use mnemo_core::tier::{Eviction, PageMove, SegmentWrite};
use mnemo_core::*;
use serde_json::json;

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
