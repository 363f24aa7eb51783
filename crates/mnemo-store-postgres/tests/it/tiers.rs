//! The hierarchy and transfer under faults and concurrency: a tier write failing at any step
//! writes nothing, racing plans for one page or one segment commit once (visits racing a
//! rewrite are all kept), and an imported store keeps its history ids and writes on after them.

use crate::fresh_schema;
use mnemo_core::tier::{Eviction, PageMove, SegmentWrite};
use mnemo_core::*;
use mnemo_store_postgres::{testing, PgStore};
use mnemo_testkit::contract::{
    export_lines, move_into_new, new_segment, page, page_batch, put_page, tier_batch, with_vectors,
};
use mnemo_testkit::{batch, put, scope, HashEmbedder};
use serde_json::json;
use std::sync::Arc;

fn store(tag: &str) -> Arc<PgStore> {
    let (_, url) = fresh_schema(tag);
    let store = PgStore::connect(&url, 8).expect("connect");
    store
        .bind_embedder(&Binding::new(HashEmbedder::MODEL_ID, HashEmbedder::DIM).unwrap())
        .expect("bind");
    Arc::new(store)
}

fn tier_of(store: &PgStore, id: PageId) -> (PageTier, bool) {
    let p = page(store, id);
    (p.tier, p.analysed)
}

#[test]
fn a_tier_write_failing_at_any_step_writes_nothing() {
    let store = store("tier_steps");
    let s = scope("tina");
    let a = put_page(store.as_ref(), &s, Some("s"), "a walk by the sea");
    let b = put_page(store.as_ref(), &s, Some("s"), "a swim in the sea");
    let c = put_page(store.as_ref(), &s, Some("s"), "a dinner by the sea");
    let cold = move_into_new(store.as_ref(), &s, &[c]);
    let full = || {
        let (mut add, new_page) = page_batch(&s, Some("s"), "a boat on the sea");
        let seg = new_segment(&s, "the sea");
        add.tiers.segments.push(SegmentWrite {
            segment: seg.clone(),
            expected_version: None,
        });
        add.tiers.moves.push(PageMove {
            page: a,
            segment: seg.id,
            continues: None,
        });
        add.tiers.evictions.push(Eviction {
            segment: cold.id,
            expected_version: cold.version,
            reason: "coldest".into(),
        });
        add.tiers.analysed.push(b);
        (add, new_page)
    };
    for &step in WriteStep::TIERS {
        testing::fail_at(&store, Some(step));
        let (add, new_page) = full();
        let err = store.write(vec![add]).expect_err(step.as_str());
        assert!(err.to_string().contains(step.as_str()), "{step}: {err}");
        testing::fail_at(&store, None);
        let report = store.integrity().expect("integrity");
        assert_eq!((report.memories, report.pages), (3, 3), "{step}");
        assert_eq!(tier_of(&store, a), (PageTier::Short, false), "{step}");
        assert_eq!(tier_of(&store, b), (PageTier::Short, false), "{step}");
        assert_eq!(tier_of(&store, c), (PageTier::Mid, false), "{step}");
        let segs = store.segments(&s, true, true).expect("segments");
        assert_eq!(segs.len(), 1, "{step}");
        assert!(segs[0].evicted_at.is_none(), "{step}");
        // No EVICT event: the segment has no history at all.
        let events = store.history(&HistoryQuery::new(
            &s,
            MemoryId(cold.id.0),
            ReadOptions::default(),
        ));
        assert!(
            matches!(&events, Err(e) if e.kind() == ErrorKind::NotFound),
            "{step}: {events:?}"
        );
        assert!(store
            .pages(&PageQuery {
                ids: Some(vec![new_page]),
                ..PageQuery::default()
            })
            .expect("pages")
            .is_empty());
    }
    let (add, new_page) = full();
    store.write(vec![add]).expect("the whole batch");
    assert_eq!(tier_of(&store, a).0, PageTier::Mid);
    assert_eq!(tier_of(&store, b), (PageTier::Short, true));
    assert_eq!(tier_of(&store, c).0, PageTier::Evicted);
    assert_eq!(tier_of(&store, new_page).0, PageTier::Short);
    assert!(store.integrity().expect("integrity").is_consistent());
}

#[test]
fn racing_plans_for_one_page_commit_once() {
    let store = store("tier_race_page");
    let s = scope("rita");
    let a = put_page(store.as_ref(), &s, Some("s"), "the first exchange");
    let results: Vec<Result<Vec<AddOutcome>>> = std::thread::scope(|t| {
        let handles: Vec<_> = (0..4)
            .map(|i| {
                let (store, s) = (store.clone(), s.clone());
                t.spawn(move || {
                    let seg = new_segment(&s, &format!("plan {i}"));
                    let tiers = TierWrite {
                        segments: vec![SegmentWrite {
                            segment: seg.clone(),
                            expected_version: None,
                        }],
                        moves: vec![PageMove {
                            page: a,
                            segment: seg.id,
                            continues: None,
                        }],
                        ..TierWrite::default()
                    };
                    store.write(vec![tier_batch(&s, tiers)])
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("join"))
            .collect()
    });
    assert_eq!(results.iter().filter(|r| r.is_ok()).count(), 1);
    for e in results.iter().filter_map(|r| r.as_ref().err()) {
        assert_eq!(e.kind(), ErrorKind::Conflict, "{e}");
    }
    // The losers' segments were rolled back with their moves.
    let segs = store.segments(&s, true, true).expect("segments");
    assert_eq!(segs.len(), 1);
    let page = store
        .pages(&PageQuery {
            ids: Some(vec![a]),
            ..PageQuery::default()
        })
        .expect("pages")
        .remove(0);
    assert_eq!(page.segment, Some(segs[0].id));
}

#[test]
fn racing_rewrites_of_one_segment_commit_once_and_keep_every_visit() {
    let store = store("tier_race_segment");
    let s = scope("rosa");
    let a = put_page(store.as_ref(), &s, None, "a trip to the hills");
    let seg = move_into_new(store.as_ref(), &s, &[a]);
    let rewrites: Vec<Result<Vec<AddOutcome>>> = std::thread::scope(|t| {
        for _ in 0..4 {
            let (store, s) = (store.clone(), s.clone());
            t.spawn(move || {
                store
                    .record_visits(&Visits::new(s, vec![(seg.id, 1)], chrono::Utc::now()).unwrap())
                    .expect("visit")
            });
        }
        let handles: Vec<_> = (0..4)
            .map(|i| {
                let (store, s, mut next) = (store.clone(), s.clone(), seg.clone());
                next.summary = format!("rewrite {i}");
                t.spawn(move || {
                    let tiers = TierWrite {
                        segments: vec![SegmentWrite {
                            segment: next,
                            expected_version: Some(seg.version),
                        }],
                        ..TierWrite::default()
                    };
                    store.write(vec![tier_batch(&s, tiers)])
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("join"))
            .collect()
    });
    // Visits first can make every rewrite stale; never more than one commits.
    let won = rewrites.iter().filter(|r| r.is_ok()).count();
    assert!(won <= 1, "{won} rewrites of one version committed");
    for e in rewrites.iter().filter_map(|r| r.as_ref().err()) {
        assert_eq!(e.kind(), ErrorKind::Conflict, "{e}");
    }
    let now = &store.segments(&s, true, false).expect("segments")[0];
    assert_eq!(now.visits, 4, "a rewrite never drops a visit");
    assert_eq!(now.version, seg.version + 4 + won as u64);
}

#[test]
fn an_imported_store_keeps_history_ids_and_writes_on() {
    let src = store("import_src");
    let s = scope("ida");
    let old = put(src.as_ref(), &s, "Ida lives in Rome", json!({}));
    src.update(
        &s,
        old,
        MemoryPatch {
            text: Some("Ida lives in Milan".into()),
            vector: Some(HashEmbedder::vector("Ida lives in Milan")),
            ..MemoryPatch::default()
        },
        &WritePlan::default(),
    )
    .expect("update");
    put_page(src.as_ref(), &s, Some("s"), "Ida talked about Milan");
    let lines = export_lines(src.as_ref());
    let dst = store("import_dst");
    dst.import(with_vectors(&lines)).expect("import");
    let before = dst
        .history(&HistoryQuery::new(&s, old, ReadOptions::default()))
        .expect("history");
    assert_eq!(
        before,
        src.history(&HistoryQuery::new(&s, old, ReadOptions::default()))
            .expect("history"),
        "events keep their ids"
    );
    // New events draw ids after the imported ones.
    let more = put(dst.as_ref(), &s, "Ida has a dog", json!({}));
    dst.delete(&s, old, DeleteMode::Soft, &WritePlan::default())
        .expect("delete");
    let after = dst
        .history(&HistoryQuery::new(&s, old, ReadOptions::default()))
        .expect("history");
    assert_eq!(after.len(), before.len() + 1);
    let newest = dst
        .history(&HistoryQuery::new(&s, more, ReadOptions::default()))
        .expect("history");
    let max_imported = before.iter().map(|e| e.id).max().expect("events");
    assert!(newest[0].id > max_imported && after.last().expect("event").id > max_imported);
}

#[test]
fn an_import_with_a_page_of_another_dimension_writes_nothing() {
    let src = store("bad_page_src");
    let s = scope("pia");
    put_page(src.as_ref(), &s, Some("s"), "a page to move");
    let mut records = with_vectors(&export_lines(src.as_ref()));
    for (r, v) in &mut records {
        if matches!(r, ExportRecord::Page(_)) {
            *v = Some(vec![0.5; HashEmbedder::DIM + 1]);
        }
    }
    let dst = store("bad_page_dst");
    let err = dst.import(records).expect_err("a wrong vector");
    assert_eq!(err.kind(), ErrorKind::InvalidInput, "{err}");
    let report = dst.integrity().expect("integrity");
    assert_eq!((report.memories, report.messages, report.pages), (0, 0, 0));
    // A batch of the imported kind still writes (nothing half-done blocks it).
    dst.write(vec![batch(&s, "after the failed import", json!({}))])
        .expect("write");
}
