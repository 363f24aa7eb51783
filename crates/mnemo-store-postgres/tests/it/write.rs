//! The write path under faults and concurrency: an add that fails at any step writes nothing,
//! and concurrent writers of one scope neither lose nor duplicate anything (idempotent retries,
//! entities, retirements, read counters).

use crate::fresh_schema;
use mnemo_core::entity::EntityMention;
use mnemo_core::*;
use mnemo_store_postgres::{testing, PgStore};
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

fn note(context: &str) -> NoteFields {
    NoteFields {
        keywords: vec!["trip".into()],
        tags: vec![],
        context: context.into(),
    }
}

/// A batch that passes every write step: a message, a retirement, a memory with an entity and
/// a relation, a link, a note evolution and an idempotency key.
fn full_batch(s: &Scope, old: MemoryId, target: MemoryId, noted: MemoryId) -> WriteBatch {
    let mut b = batch(s, "Caroline moved to Oslo", json!({"n": 1}));
    let new = b.memories[0].id;
    b.memories[0].entities = vec![EntityMention::new("Caroline", "person")];
    b.relations = vec![NewRelation {
        memory: new,
        candidate: mnemo_testkit::contract::triple("Caroline", "lives_in", "Oslo"),
    }];
    b.changes = vec![Supersession {
        old,
        by: Some(new),
        state: MemoryState::Superseded,
        valid_until: chrono::Utc::now(),
        reason: Some("moved".into()),
    }];
    b.links = vec![Link {
        from: new,
        to: target,
        kind: LinkKind::Related,
        strength: 0.5,
        author: Author::Caller,
        created_at: chrono::Utc::now(),
        reason: None,
    }];
    let fields = note("after the move");
    let enriched = mnemo_core::note::enriched_text("a note on trips", &fields);
    b.evolutions = vec![Evolution {
        id: noted,
        note: fields,
        index_text: enriched.clone(),
        vector: HashEmbedder::vector(&enriched),
        reason: Some("new context".into()),
    }];
    b.idempotency = Some(Idempotency {
        key: "k1".into(),
        request_hash: "h1".into(),
    });
    b
}

#[test]
fn an_add_failing_at_any_step_writes_nothing() {
    let store = store("steps");
    let s = scope("carla");
    let old = put(store.as_ref(), &s, "Caroline lives in Bergen", json!({}));
    let target = put(store.as_ref(), &s, "Oslo is in Norway", json!({}));
    let mut nb = batch(&s, "a note on trips", json!({}));
    nb.memories[0].kind = MemoryKind::Note;
    nb.memories[0].note = Some(note("before"));
    let noted = store.write(vec![nb]).expect("note")[0].results[0].id;
    let read = ReadOptions::default();
    let idem = Idempotency {
        key: "k1".into(),
        request_hash: "h1".into(),
    };
    for &step in WriteStep::RECORDS {
        testing::fail_at(&store, Some(step));
        let err = store
            .write(vec![full_batch(&s, old, target, noted)])
            .expect_err(step.as_str());
        assert!(err.to_string().contains(step.as_str()), "{step}: {err}");
        testing::fail_at(&store, None);
        assert_eq!(store.integrity().expect("integrity").memories, 3, "{step}");
        assert_eq!(
            store.messages(&s, None, 100).expect("log").len(),
            3,
            "{step}"
        );
        let o = store.get(&s, old, &read).expect("old memory");
        assert_eq!(o.state, MemoryState::Active, "{step}");
        let n = store.get(&s, noted, &read).expect("note");
        assert_eq!(n.note, Some(note("before")), "{step}");
        assert_eq!(
            store
                .history(&HistoryQuery::new(&s, noted, read))
                .expect("h")
                .len(),
            1
        );
        assert!(store.links(&s, target).expect("links").is_empty(), "{step}");
        assert!(store.replay(&s, &idem).expect("replay").is_none(), "{step}");
    }
    let out = store
        .write(vec![full_batch(&s, old, target, noted)])
        .expect("write");
    let new = out[0].results[0].id;
    assert_eq!(out[0].results[0].previous_id, Some(old));
    assert_eq!(
        store.get(&s, noted, &read).expect("note").note,
        Some(note("after the move"))
    );
    assert_eq!(store.links(&s, target).expect("links").len(), 1);
    // Caroline, and Oslo as the end of the relation the memory states.
    assert_eq!(store.entities_of(&s, new).expect("entities").len(), 2);
    let edges = store.relations_of(&s, "Caroline", EdgeView::Current, 10);
    assert_eq!(edges.expect("relations").len(), 1);
    let replayed = store.replay(&s, &idem).expect("replay").expect("stored");
    assert!(replayed.replayed);
    assert_eq!(replayed.results, out[0].results);
}

#[test]
fn concurrent_retries_of_one_key_write_once() {
    let store = store("retries");
    let s = scope("rita");
    let mut b = batch(&s, "Rita keeps bees", json!({}));
    b.idempotency = Some(Idempotency {
        key: "same".into(),
        request_hash: "same".into(),
    });
    let outcomes: Vec<AddOutcome> = (0..8)
        .map(|_| {
            let (store, b) = (store.clone(), b.clone());
            std::thread::spawn(move || store.write(vec![b]).expect("write").remove(0))
        })
        .collect::<Vec<_>>()
        .into_iter()
        .map(|h| h.join().expect("thread"))
        .collect();
    assert_eq!(outcomes.iter().filter(|o| !o.replayed).count(), 1);
    assert!(outcomes.iter().all(|o| o.results == outcomes[0].results));
    assert_eq!(store.integrity().expect("integrity").memories, 1);
}

#[test]
fn concurrent_writers_of_one_scope_share_their_entities() {
    let store = store("entities");
    let s = scope("eli");
    let ids: Vec<MemoryId> = (0..8)
        .map(|t| {
            let (store, s) = (store.clone(), s.clone());
            std::thread::spawn(move || {
                (0..5)
                    .map(|i| {
                        let mut b = batch(&s, &format!("Caroline said {t}.{i}"), json!({}));
                        b.memories[0].entities = vec![EntityMention::new("Caroline", "person")];
                        store.write(vec![b]).expect("write")[0].results[0].id
                    })
                    .collect::<Vec<_>>()
            })
        })
        .collect::<Vec<_>>()
        .into_iter()
        .flat_map(|h| h.join().expect("thread"))
        .collect();
    assert_eq!(ids.len(), 40);
    let mut entities: Vec<EntityId> = ids
        .iter()
        .flat_map(|id| store.entities_of(&s, *id).expect("entities"))
        .map(|e| e.id)
        .collect();
    assert_eq!(entities.len(), 40, "every memory is linked");
    entities.sort();
    entities.dedup();
    assert_eq!(entities.len(), 1, "one entity, never created twice");
}

#[test]
fn a_memory_is_retired_by_one_writer_only() {
    let store = store("retire");
    let s = scope("otto");
    let old = put(store.as_ref(), &s, "Otto lives in Graz", json!({}));
    let results: Vec<Result<Vec<AddOutcome>>> = (0..8)
        .map(|t| {
            let (store, s) = (store.clone(), s.clone());
            std::thread::spawn(move || {
                let mut b = batch(&s, &format!("Otto lives in city {t}"), json!({}));
                b.changes = vec![Supersession {
                    old,
                    by: Some(b.memories[0].id),
                    state: MemoryState::Superseded,
                    valid_until: chrono::Utc::now(),
                    reason: None,
                }];
                store.write(vec![b])
            })
        })
        .collect::<Vec<_>>()
        .into_iter()
        .map(|h| h.join().expect("thread"))
        .collect();
    assert_eq!(results.iter().filter(|r| r.is_ok()).count(), 1);
    for r in results.iter().filter_map(|r| r.as_ref().err()) {
        assert_eq!(r.kind(), ErrorKind::Conflict, "{r}");
    }
    let read = ReadOptions::default();
    let events = store
        .history(&HistoryQuery::new(&s, old, read))
        .expect("history");
    let retired = events
        .iter()
        .filter(|e| e.event == HistoryKind::Supersede)
        .count();
    assert_eq!(retired, 1);
    assert_eq!(store.integrity().expect("integrity").memories, 2);
}

#[test]
fn concurrent_touches_count_every_read() {
    let store = store("touch");
    let s = scope("tara");
    let a = put(store.as_ref(), &s, "first", json!({}));
    let b = put(store.as_ref(), &s, "second", json!({}));
    let handles: Vec<_> = (0..8)
        .map(|t| {
            let (store, s) = (store.clone(), s.clone());
            // Half the threads list the ids the other way round.
            let ids = if t % 2 == 0 {
                vec![a, b, a]
            } else {
                vec![b, a, a]
            };
            std::thread::spawn(move || {
                for _ in 0..10 {
                    assert_eq!(store.touch(&s, &ids, chrono::Utc::now()).expect("touch"), 3);
                }
            })
        })
        .collect();
    for h in handles {
        h.join().expect("thread");
    }
    let read = ReadOptions::default();
    assert_eq!(store.get(&s, a, &read).expect("a").access_count, 160);
    assert_eq!(store.get(&s, b, &read).expect("b").access_count, 80);
}

#[test]
fn batch_updates_in_opposite_orders_all_commit() {
    let store = store("updates");
    let s = scope("uma");
    let a = put(store.as_ref(), &s, "first", json!({}));
    let b = put(store.as_ref(), &s, "second", json!({}));
    let handles: Vec<_> = (0..8)
        .map(|t| {
            let (store, s) = (store.clone(), s.clone());
            let ids = if t % 2 == 0 { [a, b] } else { [b, a] };
            std::thread::spawn(move || {
                for i in 0..10 {
                    let patch = |id: MemoryId| {
                        let mut metadata = Metadata::new();
                        metadata.insert("by".into(), json!(format!("{t}.{i}")));
                        (
                            s.clone(),
                            id,
                            MemoryPatch {
                                metadata: Some(metadata),
                                ..MemoryPatch::default()
                            },
                        )
                    };
                    let updates =
                        Updates::new(ids.iter().map(|id| patch(*id)).collect()).expect("updates");
                    store
                        .update_many(&updates, &WritePlan::default())
                        .expect("update_many");
                }
            })
        })
        .collect();
    for h in handles {
        h.join().expect("thread");
    }
    let read = ReadOptions::default();
    for id in [a, b] {
        let updates = store
            .history(&HistoryQuery::new(&s, id, read))
            .expect("history")
            .iter()
            .filter(|e| e.event == HistoryKind::Update)
            .count();
        assert_eq!(updates, 80);
    }
}

/// An add waiting for its scope's lock row while an erase of the whole scope deletes that row
/// (`write::lock_scopes`, `write::drop_scope_locks`): when the erase commits the add finds no
/// row to lock, makes it again and locks it, and two such adds still run one after the other
/// (one key, written once). Here the erase's transaction is played on an admin connection.
#[test]
fn adds_waiting_on_a_lock_row_an_erase_deletes_lock_it_again() {
    let (schema, url) = fresh_schema("relock");
    let store = PgStore::connect(&url, 8).expect("connect");
    store
        .bind_embedder(&Binding::new(HashEmbedder::MODEL_ID, HashEmbedder::DIM).unwrap())
        .expect("bind");
    let store = Arc::new(store);
    let s = scope("rosa");
    put(store.as_ref(), &s, "Rosa keeps goats", json!({}));
    let rows = format!("{schema}.scope_locks");
    let mut eraser = crate::admin();
    let pid: i32 = eraser
        .query_one("SELECT pg_backend_pid()", &[])
        .unwrap()
        .get(0);
    let mut tx = eraser.transaction().unwrap();
    let held = tx
        .query(
            &format!("SELECT 1 FROM {rows} WHERE scope_key = $1 FOR UPDATE"),
            &[&s.key()],
        )
        .unwrap();
    assert_eq!(held.len(), 1, "the first add made the row");

    let mut b = batch(&s, "Rosa sold a goat", json!({}));
    b.idempotency = Some(Idempotency {
        key: "sale".into(),
        request_hash: "sale".into(),
    });
    let adds: Vec<_> = (0..2)
        .map(|_| {
            let (store, b) = (store.clone(), b.clone());
            std::thread::spawn(move || store.write(vec![b]).map(|mut o| o.remove(0)))
        })
        .collect();
    // Both wait: on the eraser's lock, or on the add queued before them for it.
    let mut watch = crate::admin();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        let waiting: i64 = watch
            .query_one(
                "WITH a AS (SELECT pid FROM pg_stat_activity WHERE $1 = ANY(pg_blocking_pids(pid))) \
                 SELECT COUNT(*) FROM pg_stat_activity \
                 WHERE pg_blocking_pids(pid) && (ARRAY[$1] || ARRAY(SELECT pid FROM a))",
                &[&pid],
            )
            .unwrap()
            .get(0);
        if waiting >= 2 {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the adds never waited"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    tx.execute(
        &format!("DELETE FROM {rows} WHERE scope_key = $1"),
        &[&s.key()],
    )
    .unwrap();
    tx.commit().unwrap();

    let outcomes: Vec<AddOutcome> = adds
        .into_iter()
        .map(|h| h.join().expect("thread").expect("add"))
        .collect();
    assert_eq!(outcomes.iter().filter(|o| !o.replayed).count(), 1);
    assert_eq!(outcomes[0].results, outcomes[1].results);
    assert_eq!(store.integrity().expect("integrity").memories, 2);
    let remade: i64 = watch
        .query_one(
            &format!("SELECT COUNT(*) FROM {rows} WHERE scope_key = $1"),
            &[&s.key()],
        )
        .unwrap()
        .get(0);
    assert_eq!(remade, 1, "the adds locked a row they made again");
}
