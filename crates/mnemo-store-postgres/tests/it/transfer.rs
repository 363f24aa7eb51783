//! Moving a store between backends: an embedded store's export imported into PostgreSQL
//! exports the same records, and the reverse. Records compare as JSON values, so an object's
//! key order (JSONB keeps its own) does not count, while every value, type and record order
//! does.

use crate::fresh_schema;
use mnemo_core::entity::EntityMention;
use mnemo_core::tier::{Eviction, PageMove, SegmentWrite};
use mnemo_core::*;
use mnemo_store_postgres::PgStore;
use mnemo_store_sqlite::SqliteStore;
use mnemo_testkit::contract::{
    export_lines, new_segment, page_batch, put_note, tier_batch, with_vectors,
};
use mnemo_testkit::{batch, put, scope, HashEmbedder};
use serde_json::{json, Value};

fn pg(tag: &str) -> PgStore {
    let (_, url) = fresh_schema(tag);
    let store = PgStore::connect(&url, 2).expect("connect");
    store
        .bind_embedder(&Binding::new(HashEmbedder::MODEL_ID, HashEmbedder::DIM).unwrap())
        .expect("bind");
    store
}

fn lite() -> SqliteStore {
    let store = SqliteStore::open_in_memory().expect("open sqlite");
    store
        .bind_embedder(&Binding::new(HashEmbedder::MODEL_ID, HashEmbedder::DIM).unwrap())
        .expect("bind");
    store
}

/// Writes one of every record kind: messages, memories with typed metadata, an entity, an
/// index text, a supersession, a link, a soft delete, read counters, a note, pages moved
/// into a segment, an evicted segment, a visit and an idempotency result.
fn populate(store: &dyn Store) {
    let s = Scope::from_parts(Some("mover"), Some("bot"), None).expect("scope");
    let (mut b, first) = page_batch(&s, Some("s1"), "Ines moved to Porto in May");
    b.memories[0].index_text = Some("Ines moved to Porto in May\nshe loves the river".into());
    b.memories[0].entities = vec![EntityMention::new("Porto", "place")];
    b.memories[0].metadata = json!({"zip": "0012", "n": 12, "x": 2.5, "flag": true})
        .as_object()
        .cloned()
        .expect("object");
    b.idempotency = Some(Idempotency {
        key: "turn-1".into(),
        request_hash: "h1".into(),
    });
    let turn = store.write(vec![b]).expect("write")[0].results[0].id;
    let old = put(store, &s, "Ines lives in Lisbon", json!({}));
    let mut upd = batch(&s, "Ines lives in Porto", json!({"a": [1, "b"]}));
    upd.changes = vec![Supersession {
        old,
        by: Some(upd.memories[0].id),
        state: MemoryState::Superseded,
        valid_until: chrono::Utc::now(),
        reason: Some("she moved".into()),
    }];
    let new = store.write(vec![upd]).expect("update")[0].results[0].id;
    store
        .add_links(
            &s,
            &[Link {
                from: turn,
                to: new,
                kind: LinkKind::Related,
                strength: 0.7,
                author: Author::Caller,
                created_at: chrono::Utc::now(),
                reason: Some("same move".into()),
            }],
        )
        .expect("link");
    let gone = put(store, &s, "a passing remark", json!({}));
    store
        .delete(&s, gone, DeleteMode::Soft, &WritePlan::default())
        .expect("delete");
    store.touch(&s, &[turn], chrono::Utc::now()).expect("touch");
    put_note(
        store,
        &scope("mover-notes"),
        "Pack the tent",
        NoteFields {
            keywords: vec!["tent".into()],
            tags: vec!["trip".into()],
            context: "camping plans".into(),
        },
    );
    let (b, second) = page_batch(&s, Some("s1"), "the river walk was lovely");
    store.write(vec![b]).expect("page");
    let kept = new_segment(&s, "moving to Porto");
    let cold = new_segment(&s, "an old topic");
    let segments = [&kept, &cold].map(|seg| SegmentWrite {
        segment: seg.clone(),
        expected_version: None,
    });
    store
        .write(vec![tier_batch(
            &s,
            TierWrite {
                segments: segments.to_vec(),
                moves: vec![
                    PageMove {
                        page: first,
                        segment: kept.id,
                        continues: None,
                    },
                    PageMove {
                        page: second,
                        segment: cold.id,
                        continues: Some(first),
                    },
                ],
                ..TierWrite::default()
            },
        )])
        .expect("move");
    store
        .write(vec![tier_batch(
            &s,
            TierWrite {
                evictions: vec![Eviction {
                    segment: cold.id,
                    expected_version: 1,
                    reason: "coldest".into(),
                }],
                ..TierWrite::default()
            },
        )])
        .expect("evict");
    store
        .record_visits(&Visits::new(s.clone(), vec![(kept.id, 2)], chrono::Utc::now()).unwrap())
        .expect("visits");
}

fn values(lines: &[String]) -> Vec<Value> {
    lines
        .iter()
        .map(|l| serde_json::from_str(l).expect("json"))
        .collect()
}

/// Exports `from`, imports into `to`, and checks `to` exports the same records.
fn moves_losslessly(from: &dyn Store, to: &dyn Store) {
    let lines = export_lines(from);
    assert!(lines.len() > 20, "{} records", lines.len());
    assert!(to.import(with_vectors(&lines)).expect("import") > 0);
    let again = export_lines(to);
    assert_eq!(values(&again), values(&lines));
    assert_eq!(to.import(with_vectors(&lines)).expect("again"), 0);
    assert!(to.integrity().expect("integrity").is_consistent());
}

#[test]
fn an_embedded_store_moves_to_postgresql_losslessly() {
    let src = lite();
    populate(&src);
    moves_losslessly(&src, &pg("from_lite"));
}

#[test]
fn a_postgresql_store_moves_to_an_embedded_store_losslessly() {
    let src = pg("to_lite");
    populate(&src);
    moves_losslessly(&src, &lite());
}
