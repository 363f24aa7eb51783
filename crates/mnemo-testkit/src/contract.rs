//! The store contract: each function is one promise every backend keeps.

use crate::*;
use mnemo_core::*;
use serde_json::json;
use std::collections::HashSet;

pub use crate::contract_jobs::*;
pub use crate::contract_log::*;
pub use crate::contract_notes::*;
pub use crate::contract_sessions::*;
pub use crate::contract_tiers::*;
pub use crate::contract_transfer::*;

fn all(read_expired: bool) -> ReadOptions {
    ReadOptions {
        include_expired: read_expired,
        ..ReadOptions::default()
    }
}

fn list_all(store: &dyn Store, scope: &Scope, limit: usize) -> Vec<mnemo_core::Memory> {
    let mut out = Vec::new();
    let mut cursor = None;
    loop {
        let page = store
            .list(&ListQuery {
                scope: scope.clone(),
                kinds: None,
                filter: None,
                limit,
                cursor,
                read: all(false),
            })
            .expect("list succeeds");
        out.extend(page.results);
        match page.next_cursor {
            Some(c) => cursor = Some(c),
            None => return out,
        }
    }
}

fn assert_not_found<T: std::fmt::Debug>(r: Result<T>, what: &str) {
    match r {
        Err(e) => assert_eq!(
            e.kind(),
            ErrorKind::NotFound,
            "{what}: expected not found, got {e}"
        ),
        Ok(v) => panic!("{what}: expected not found, got {v:?}"),
    }
}

pub fn round_trip(h: &dyn Harness) {
    let store = h.fresh();
    let s = Scope::from_parts(Some("alice"), Some("planner"), Some("r1")).unwrap();
    let b = batch(&s, "Alice moved to Lisbon in May", json!({"topic": "home"}));
    let msg_id = b.messages[0].id;
    let out = store.write(vec![b]).unwrap();
    assert_eq!(out[0].results.len(), 1);
    assert_eq!(out[0].results[0].event, HistoryKind::Add);
    let id = out[0].results[0].id;
    let m = store.get(&s, id, &all(false)).unwrap();
    assert_eq!(m.text, "Alice moved to Lisbon in May");
    assert_eq!(m.kind, MemoryKind::Raw);
    assert_eq!(m.state, MemoryState::Active);
    assert_eq!(
        (
            m.user_id.as_deref(),
            m.agent_id.as_deref(),
            m.run_id.as_deref()
        ),
        (Some("alice"), Some("planner"), Some("r1"))
    );
    assert_eq!(
        serde_json::Value::Object(m.metadata.clone()),
        json!({"topic": "home"})
    );
    assert_eq!(m.sources, vec![msg_id]);
    assert_eq!(m.hash, content_hash(&m.text));
    // A narrower query scope (user only) sees it; the id alone in another scope does not.
    assert!(store.get(&scope("alice"), id, &all(false)).is_ok());
    // The owner lookup (admin by-id access) names the full scope; an unknown id is not found.
    assert_eq!(store.owner_of(id).unwrap(), s);
    assert_eq!(
        store.owner_of(MemoryId::new()).unwrap_err().kind(),
        mnemo_core::ErrorKind::NotFound
    );
    assert_eq!(store.owners().unwrap(), vec![(s.clone(), 1)]);
    let hist = store.history(&s, id, &all(false)).unwrap();
    assert_eq!(hist.len(), 1);
    assert_eq!(hist[0].event, HistoryKind::Add);
    assert_eq!(
        hist[0].new_memory.as_deref(),
        Some("Alice moved to Lisbon in May")
    );
    assert!(store.integrity().unwrap().is_consistent());
}

pub fn scope_isolation_on_every_read_path(h: &dyn Harness) {
    let store = h.fresh();
    let (a, b) = (scope("alice"), scope("bob"));
    let id = put(
        store.as_ref(),
        &a,
        "alice secret pineapple pizza",
        json!({}),
    );
    put(store.as_ref(), &b, "bob likes hiking", json!({}));
    assert_not_found(store.get(&b, id, &all(true)), "get");
    assert!(
        list_all(store.as_ref(), &b, 10).iter().all(|m| m.id != id),
        "list"
    );
    assert!(
        search(store.as_ref(), &b, "pineapple pizza", all(true))
            .iter()
            .all(|h| h.memory.id != id),
        "search"
    );
    let q = candidates(&b, all(true));
    let dense = store
        .dense_candidates(&q, &HashEmbedder::vector("alice secret pineapple pizza"))
        .unwrap();
    let lexical = store.lexical_candidates(&q, &["pineapple".into()]).unwrap();
    assert!(lexical.is_empty(), "lexical leaked");
    let keys: Vec<i64> = dense.iter().map(|c| c.key).collect();
    let qa = candidates(&a, all(true));
    let a_keys: Vec<i64> = store
        .lexical_candidates(&qa, &["pineapple".into()])
        .unwrap()
        .iter()
        .map(|c| c.key)
        .collect();
    assert_eq!(a_keys.len(), 1);
    assert!(!keys.contains(&a_keys[0]), "dense leaked");
    assert!(
        store.fetch(&q, &a_keys).unwrap().is_empty(),
        "fetch leaked by key"
    );
    assert_not_found(store.history(&b, id, &all(true)), "history");
    assert_not_found(
        store.update(
            &b,
            id,
            MemoryPatch {
                metadata: Some(Metadata::new()),
                ..Default::default()
            },
            &WriteContext::default(),
        ),
        "update",
    );
    assert_not_found(
        store.delete(&b, id, DeleteMode::Soft, &WriteContext::default()),
        "delete",
    );
    assert_eq!(
        store
            .delete_all(&b, DeleteMode::Soft, &WriteContext::default())
            .unwrap(),
        1
    );
    assert!(
        store.get(&a, id, &all(false)).is_ok(),
        "bob's delete_all touched alice"
    );
    // A scope that sets agent_id as well is narrower, never wider.
    let narrower = Scope::from_parts(Some("alice"), Some("other-agent"), None).unwrap();
    assert_not_found(
        store.get(&narrower, id, &all(true)),
        "get with another agent",
    );
    assert!(store
        .messages(&b, None, 100)
        .unwrap()
        .iter()
        .all(|m| m.user_id.as_deref() == Some("bob")));
}

pub fn metadata_fidelity(h: &dyn Harness) {
    let store = h.fresh();
    let s = scope("meta");
    let md = json!({
        "zip": "0012", "n": 12, "neg": -7, "f": 1.5, "whole_float": 2.0, "big": 18446744073709551615u64,
        "t": true, "fa": false, "nothing": null, "list": [1, "two", {"three": 3}], "nested": {"a": {"b": ["c"]}},
        "unicode": "Zürich 🚲", "empty": "", "empty_list": [], "empty_obj": {}
    });
    let id = put(store.as_ref(), &s, "metadata test", md.clone());
    let got = store.get(&s, id, &all(false)).unwrap();
    assert_eq!(serde_json::Value::Object(got.metadata.clone()), md);
    assert_eq!(got.metadata["zip"], json!("0012"));
    assert!(got.metadata["whole_float"].is_f64());
    let listed = list_all(store.as_ref(), &s, 5);
    assert_eq!(serde_json::Value::Object(listed[0].metadata.clone()), md);
    // And through an export record.
    let mut exported = Vec::new();
    store
        .export(&mut |r| {
            exported.push(r);
            Ok(())
        })
        .unwrap();
    let mem = exported
        .iter()
        .find_map(|r| match r {
            ExportRecord::Memory(m) => Some(m),
            _ => None,
        })
        .unwrap();
    let text = serde_json::to_string(mem).unwrap();
    let back: mnemo_core::Memory = serde_json::from_str(&text).unwrap();
    assert_eq!(serde_json::Value::Object(back.metadata), md);
}

pub fn identity_keys_never_set_scope(h: &dyn Harness) {
    let store = h.fresh();
    let s = scope("carol");
    // The pipeline strips identity keys before anything is written.
    let mut md = json!({"user_id": "mallory", "agent_id": "x", "run_id": "y", "actor_id": "z", "keep": "0012"})
        .as_object()
        .cloned()
        .unwrap();
    let dropped = strip_identity_keys(&mut md);
    assert_eq!(dropped.len(), 4);
    let id = put(
        store.as_ref(),
        &s,
        "identity",
        serde_json::Value::Object(md),
    );
    let m = store.get(&s, id, &all(false)).unwrap();
    assert_eq!(m.user_id.as_deref(), Some("carol"));
    assert_eq!(
        serde_json::Value::Object(m.metadata.clone()),
        json!({"keep": "0012"})
    );
    assert_not_found(
        store.get(&scope("mallory"), id, &all(false)),
        "identity key moved scope",
    );
    // An update carrying identity keys changes metadata only, never the scope.
    let mut patch_md = json!({"user_id": "mallory", "k": 1})
        .as_object()
        .cloned()
        .unwrap();
    strip_identity_keys(&mut patch_md);
    let m = store
        .update(
            &s,
            id,
            MemoryPatch {
                metadata: Some(patch_md),
                ..Default::default()
            },
            &WriteContext::default(),
        )
        .unwrap();
    assert_eq!(m.user_id.as_deref(), Some("carol"));
    assert_eq!(serde_json::Value::Object(m.metadata), json!({"k": 1}));
    // A batch whose memory claims another scope is refused.
    let mut b = batch(&s, "sneaky", json!({}));
    b.memories[0].scope = scope("mallory");
    assert_eq!(
        store.write(vec![b]).unwrap_err().kind(),
        ErrorKind::InvalidInput
    );
}

pub fn expiry_on_every_path(h: &dyn Harness) {
    let store = h.fresh();
    let s = scope("dave");
    let now = chrono::Utc::now();
    let past = now - chrono::Duration::seconds(5);
    let b = batch_at(
        &s,
        "expired coupon code zebra",
        json!({}),
        now - chrono::Duration::seconds(60),
        Some(past),
    );
    let id = store.write(vec![b]).unwrap()[0].results[0].id;
    let live = put(store.as_ref(), &s, "live coupon code lion", json!({}));
    let hidden = all(false);
    assert_not_found(store.get(&s, id, &hidden), "get");
    assert!(store.get(&s, id, &all(true)).is_ok(), "get include_expired");
    let listed = list_all(store.as_ref(), &s, 10);
    assert_eq!(
        listed.iter().map(|m| m.id).collect::<Vec<_>>(),
        vec![live],
        "list"
    );
    let hits = search(store.as_ref(), &s, "expired coupon code zebra", hidden);
    assert!(hits.iter().all(|h| h.memory.id != id), "search");
    assert!(
        search(store.as_ref(), &s, "expired coupon code zebra", all(true))
            .iter()
            .any(|h| h.memory.id == id)
    );
    let q = candidates(&s, hidden);
    let lex = store.lexical_candidates(&q, &["zebra".into()]).unwrap();
    assert!(lex.is_empty(), "lexical");
    let q_all = candidates(&s, all(true));
    let keys: Vec<i64> = store
        .lexical_candidates(&q_all, &["zebra".into()])
        .unwrap()
        .iter()
        .map(|c| c.key)
        .collect();
    assert_eq!(keys.len(), 1);
    assert!(store.fetch(&q, &keys).unwrap().is_empty(), "fetch");
    let dense = store
        .dense_candidates(&q, &HashEmbedder::vector("expired coupon code zebra"))
        .unwrap();
    assert!(!dense.iter().any(|c| c.key == keys[0]), "dense");
    assert_not_found(store.history(&s, id, &hidden), "history");
    assert_not_found(
        store.update(
            &s,
            id,
            MemoryPatch {
                metadata: Some(Metadata::new()),
                ..Default::default()
            },
            &WriteContext::default(),
        ),
        "update",
    );
    assert_not_found(
        store.delete(&s, id, DeleteMode::Soft, &WriteContext::default()),
        "delete",
    );
    // Judged against the caller's clock: before expiry it is visible.
    let earlier = ReadOptions {
        now: past - chrono::Duration::seconds(1),
        ..ReadOptions::default()
    };
    assert!(store.get(&s, id, &earlier).is_ok());
}

pub fn pagination_is_complete_under_concurrent_inserts(h: &dyn Harness) {
    let store = h.fresh();
    let s = scope("erin");
    let initial: HashSet<MemoryId> = (0..60)
        .map(|i| {
            put(
                store.as_ref(),
                &s,
                &format!("note number {i}"),
                json!({"i": i}),
            )
        })
        .collect();
    let writer = {
        let store = store.clone();
        let s = s.clone();
        std::thread::spawn(move || {
            (0..60)
                .map(|i| put(store.as_ref(), &s, &format!("late note {i}"), json!({})))
                .collect::<Vec<_>>()
        })
    };
    let mut seen = Vec::new();
    let mut cursor = None;
    loop {
        let page = store
            .list(&ListQuery {
                scope: s.clone(),
                kinds: None,
                filter: None,
                limit: 7,
                cursor,
                read: all(false),
            })
            .unwrap();
        assert!(page.results.len() <= 7);
        seen.extend(page.results.iter().map(|m| m.id));
        std::thread::yield_now();
        match page.next_cursor {
            Some(c) => cursor = Some(c),
            None => break,
        }
    }
    let late = writer.join().unwrap();
    let unique: HashSet<MemoryId> = seen.iter().copied().collect();
    assert_eq!(unique.len(), seen.len(), "a memory was listed twice");
    assert!(
        initial.is_subset(&unique),
        "a memory that existed before listing was skipped"
    );
    assert!(unique
        .iter()
        .all(|id| initial.contains(id) || late.contains(id)));
    // A bad cursor is invalid input, not an empty page.
    let err = store
        .list(&ListQuery {
            scope: s,
            kinds: None,
            filter: None,
            limit: 7,
            cursor: Some("garbage".into()),
            read: all(false),
        })
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidInput);
}

pub fn idempotent_retry(h: &dyn Harness) {
    let store = h.fresh();
    let s = scope("frank");
    let idem = Idempotency {
        key: "req-1".into(),
        request_hash: "h1".into(),
    };
    let mut b = batch(&s, "frank plays the cello", json!({}));
    b.idempotency = Some(idem.clone());
    let first = store.write(vec![b.clone()]).unwrap().remove(0);
    assert!(!first.replayed);
    assert_eq!(
        store.replay(&s, &idem).unwrap().map(|o| o.results),
        Some(first.results.clone())
    );
    // The retry carries fresh ids (as a client retry would); it must write nothing.
    let mut retry = batch(&s, "frank plays the cello", json!({}));
    retry.idempotency = Some(idem.clone());
    let second = store.write(vec![retry]).unwrap().remove(0);
    assert!(second.replayed);
    assert_eq!(second.results, first.results);
    assert_eq!(list_all(store.as_ref(), &s, 10).len(), 1);
    assert_eq!(store.integrity().unwrap().messages, 1);
    let mut other = batch(&s, "something else", json!({}));
    other.idempotency = Some(Idempotency {
        key: "req-1".into(),
        request_hash: "h2".into(),
    });
    assert_eq!(
        store.write(vec![other]).unwrap_err().kind(),
        ErrorKind::Conflict
    );
    // Keys are per scope.
    let mut elsewhere = batch(&scope("gina"), "gina", json!({}));
    elsewhere.idempotency = Some(idem);
    assert!(!store.write(vec![elsewhere]).unwrap()[0].replayed);
}

pub fn reopen_after_close(h: &dyn Harness) {
    let store = h.fresh();
    let s = scope("hana");
    let ids: Vec<MemoryId> = (0..20)
        .map(|i| {
            put(
                store.as_ref(),
                &s,
                &format!("hana fact {i} about gardens"),
                json!({"i": i}),
            )
        })
        .collect();
    let deleted = ids[3];
    store
        .delete(&s, deleted, DeleteMode::Soft, &WriteContext::default())
        .unwrap();
    let store = h.reopen(store);
    for id in ids.iter().filter(|i| **i != deleted) {
        assert!(store.get(&s, *id, &all(false)).is_ok());
    }
    assert_not_found(store.get(&s, deleted, &all(false)), "deleted after reopen");
    let report = store.integrity().unwrap();
    assert!(report.is_consistent(), "{report:?}");
    assert_eq!(report.ann_entries, 19);
    let hits = search(store.as_ref(), &s, "hana fact 7 about gardens", all(false));
    assert_eq!(hits[0].memory.id, ids[7]);
    // Writes after reopen are indexed too.
    let id = put(store.as_ref(), &s, "a brand new orchard", json!({}));
    assert_eq!(
        search(store.as_ref(), &s, "brand new orchard", all(false))[0]
            .memory
            .id,
        id
    );
}

pub fn concurrent_writers(h: &dyn Harness) {
    let store = h.fresh();
    let threads: Vec<_> = (0..4)
        .map(|t| {
            let store = store.clone();
            std::thread::spawn(move || {
                let s = scope(&format!("writer{t}"));
                (0..25)
                    .map(|i| {
                        put(
                            store.as_ref(),
                            &s,
                            &format!("writer {t} item {i}"),
                            json!({"t": t}),
                        )
                    })
                    .collect::<Vec<_>>()
            })
        })
        .collect();
    for (t, th) in threads.into_iter().enumerate() {
        let ids = th.join().unwrap();
        let s = scope(&format!("writer{t}"));
        let listed: HashSet<MemoryId> = list_all(store.as_ref(), &s, 100)
            .iter()
            .map(|m| m.id)
            .collect();
        assert_eq!(listed, ids.into_iter().collect::<HashSet<_>>());
    }
    let report = store.integrity().unwrap();
    assert_eq!(report.memories, 100);
    assert!(report.is_consistent(), "{report:?}");
}

pub fn filters(h: &dyn Harness) {
    let store = h.fresh();
    let s = scope("ivan");
    let a = put(
        store.as_ref(),
        &s,
        "a",
        json!({"zip": "0012", "n": 3, "tags": ["red", "blue"], "flag": true}),
    );
    let b = put(
        store.as_ref(),
        &s,
        "b",
        json!({"zip": 12, "n": 7, "tags": ["green"], "note": "big red barn"}),
    );
    let c = put(store.as_ref(), &s, "c", json!({"n": 10, "flag": false}));
    let run = |f: serde_json::Value| -> Vec<MemoryId> {
        let filter = Filter::from_json(&f).unwrap();
        let page = store
            .list(&ListQuery {
                scope: s.clone(),
                kinds: None,
                filter,
                limit: 100,
                cursor: None,
                read: all(false),
            })
            .unwrap();
        page.results.iter().map(|m| m.id).collect()
    };
    assert_eq!(
        run(json!({"zip": "0012"})),
        vec![a],
        "string never equals number"
    );
    assert_eq!(run(json!({"zip": 12})), vec![b]);
    assert_eq!(run(json!({"zip": {"ne": "0012"}})), vec![b, c]);
    assert_eq!(run(json!({"n": {"in": [3, 10]}})), vec![a, c]);
    assert_eq!(run(json!({"n": {"nin": [3, 10]}})), vec![b]);
    assert_eq!(run(json!({"n": {"gt": 3}})), vec![b, c]);
    assert_eq!(run(json!({"n": {"gte": 3, "lt": 10}})), vec![a, b]);
    assert_eq!(run(json!({"n": {"lte": 7}})), vec![a, b]);
    assert_eq!(run(json!({"tags": {"contains": "red"}})), vec![a]);
    assert_eq!(run(json!({"note": {"contains": "red"}})), vec![b]);
    assert_eq!(run(json!({"flag": true})), vec![a]);
    assert_eq!(
        run(json!({"OR": [{"flag": false}, {"zip": 12}]})),
        vec![b, c]
    );
    assert_eq!(run(json!({"NOT": {"n": {"gt": 5}}})), vec![a]);
    assert_eq!(
        run(json!({"AND": [{"n": {"gt": 1}}, {"NOT": {"flag": true}}]})),
        vec![b, c]
    );
    let later = (chrono::Utc::now() + chrono::Duration::hours(1)).to_rfc3339();
    assert_eq!(run(json!({"created_at": {"lt": later}})).len(), 3);
    assert!(run(json!({"created_at": {"gt": later}})).is_empty());
    // Filters apply to search candidates too.
    let f = Filter::from_json(&json!({"n": 7})).unwrap();
    let q = CandidateQuery {
        scope: &s,
        kinds: None,
        filter: f.as_ref(),
        read: all(false),
        limit: 10,
    };
    let dense = store
        .dense_candidates(&q, &HashEmbedder::vector("a"))
        .unwrap();
    assert_eq!(dense.len(), 1);
    assert_eq!(store.fetch(&q, &[dense[0].key]).unwrap()[0].1.id, b);
}

pub fn hybrid_search_uses_both_sides(h: &dyn Harness) {
    let store = h.fresh();
    let s = scope("jane");
    let exact = put(
        store.as_ref(),
        &s,
        "Jane's passport number is XK42",
        json!({}),
    );
    for i in 0..30 {
        put(
            store.as_ref(),
            &s,
            &format!("filler memory {i} about weather and travel plans"),
            json!({}),
        );
    }
    let hits = search(store.as_ref(), &s, "XK42", all(false));
    assert_eq!(hits[0].memory.id, exact);
    assert!(hits[0].scores.bm25 > 0.0);
    assert!(
        hits[0].scores.dense > 0.0,
        "lexical-only candidates are scored densely too"
    );
    for w in hits.windows(2) {
        assert!(w[0].score >= w[1].score, "hits are sorted by final score");
    }
    let req = SearchRequest {
        threshold: Some(2.0),
        read: all(false),
        ..SearchRequest::new(s.clone(), "weather", 5)
    };
    assert!(
        hybrid_search(
            store.as_ref(),
            &req,
            &HashEmbedder::vector("weather"),
            &RankParams::default()
        )
        .unwrap()
        .is_empty(),
        "threshold"
    );
    let req = SearchRequest {
        kinds: Some(vec![MemoryKind::Fact]),
        threshold: None,
        ..req
    };
    assert!(
        hybrid_search(
            store.as_ref(),
            &req,
            &HashEmbedder::vector("weather"),
            &RankParams::default()
        )
        .unwrap()
        .is_empty(),
        "kinds"
    );
}

pub fn update_delete_and_history(h: &dyn Harness) {
    let store = h.fresh();
    let s = scope("kim");
    let id = put(store.as_ref(), &s, "kim lives in Oslo", json!({"v": 1}));
    let patch = MemoryPatch {
        text: Some("kim lives in Bergen".into()),
        vector: Some(HashEmbedder::vector("kim lives in Bergen")),
        metadata: Some(json!({"v": 2}).as_object().cloned().unwrap()),
        ..Default::default()
    };
    let ctx = WriteContext {
        actor: Some("tester".into()),
        reason: Some("moved".into()),
        ..Default::default()
    };
    let m = store.update(&s, id, patch, &ctx).unwrap();
    assert_eq!(m.text, "kim lives in Bergen");
    assert!(m.updated_at >= m.created_at);
    let hits = search(store.as_ref(), &s, "Bergen", all(false));
    assert_eq!(hits[0].memory.id, id, "re-indexed");
    assert!(
        search(store.as_ref(), &s, "Oslo", all(false))
            .iter()
            .all(|h| h.scores.bm25 == 0.0),
        "old text left the lexical index"
    );
    let no_vector = MemoryPatch {
        text: Some("changed".into()),
        ..Default::default()
    };
    assert_eq!(
        store.update(&s, id, no_vector, &ctx).unwrap_err().kind(),
        ErrorKind::InvalidInput
    );
    store.delete(&s, id, DeleteMode::Soft, &ctx).unwrap();
    assert_not_found(store.get(&s, id, &all(true)), "soft-deleted get");
    let gone = store
        .get(
            &s,
            id,
            &ReadOptions {
                include_inactive: true,
                ..all(true)
            },
        )
        .unwrap();
    assert_eq!(gone.state, MemoryState::Deleted);
    let hist = store.history(&s, id, &all(false)).unwrap();
    let events: Vec<HistoryKind> = hist.iter().map(|e| e.event).collect();
    assert_eq!(
        events,
        vec![HistoryKind::Add, HistoryKind::Update, HistoryKind::Delete]
    );
    assert_eq!(hist[1].old_memory.as_deref(), Some("kim lives in Oslo"));
    assert_eq!(hist[1].new_memory.as_deref(), Some("kim lives in Bergen"));
    assert_eq!(hist[1].reason.as_deref(), Some("moved"));
    assert_eq!(hist[1].actor.as_deref(), Some("tester"));
    // Hard delete removes the record but keeps its history for the owning scope only.
    let id2 = put(store.as_ref(), &s, "temporary", json!({}));
    store.delete(&s, id2, DeleteMode::Hard, &ctx).unwrap();
    assert_not_found(
        store.get(
            &s,
            id2,
            &ReadOptions {
                include_inactive: true,
                ..all(true)
            },
        ),
        "hard-deleted get",
    );
    assert_eq!(store.history(&s, id2, &all(false)).unwrap().len(), 2);
    assert_not_found(
        store.history(&scope("other"), id2, &all(false)),
        "hard-deleted history, other scope",
    );
    assert_not_found(
        store.delete(&s, id2, DeleteMode::Hard, &ctx),
        "delete twice",
    );
    assert!(store.integrity().unwrap().is_consistent());
}

pub fn delete_all_and_reset(h: &dyn Harness) {
    let store = h.fresh();
    let (a, b) = (scope("lena"), scope("mo"));
    for i in 0..5 {
        put(store.as_ref(), &a, &format!("lena {i}"), json!({}));
        put(store.as_ref(), &b, &format!("mo {i}"), json!({}));
    }
    assert_eq!(
        store
            .delete_all(&a, DeleteMode::Soft, &WriteContext::default())
            .unwrap(),
        5
    );
    assert!(list_all(store.as_ref(), &a, 10).is_empty());
    assert_eq!(list_all(store.as_ref(), &b, 10).len(), 5);
    assert!(store.integrity().unwrap().is_consistent());
    store.reset().unwrap();
    assert!(list_all(store.as_ref(), &b, 10).is_empty());
    let report = store.integrity().unwrap();
    assert_eq!(
        (report.memories, report.vectors, report.messages),
        (0, 0, 0)
    );
}

pub fn export_import_round_trip(h: &dyn Harness) {
    let src = h.fresh();
    let s = Scope::from_parts(Some("nora"), Some("bot"), None).unwrap();
    let keep = put(src.as_ref(), &s, "nora keeps bees", json!({"zip": "0012"}));
    let gone = put(src.as_ref(), &s, "nora forgot this", json!({}));
    src.delete(&s, gone, DeleteMode::Soft, &WriteContext::default())
        .unwrap();
    let mut records = Vec::new();
    src.export(&mut |r| {
        records.push(r);
        Ok(())
    })
    .unwrap();
    let dst = h.fresh();
    let lines: Vec<String> = records
        .iter()
        .map(|r| serde_json::to_string(r).unwrap())
        .collect();
    let parsed: Vec<(ExportRecord, Option<Vec<f32>>)> = lines
        .iter()
        .map(|l| {
            let r: ExportRecord = serde_json::from_str(l).unwrap();
            let v = match &r {
                ExportRecord::Memory(m) if m.state != MemoryState::Deleted => {
                    Some(HashEmbedder::vector(&m.text))
                }
                _ => None,
            };
            (r, v)
        })
        .collect();
    assert_eq!(
        dst.import(parsed.clone()).unwrap(),
        7,
        "two messages, two memories and their three history events (two ADD, one DELETE)"
    );
    assert_eq!(
        dst.import(parsed).unwrap(),
        0,
        "importing twice writes nothing"
    );
    let a = src.get(&s, keep, &all(false)).unwrap();
    let b = dst.get(&s, keep, &all(false)).unwrap();
    assert_eq!(a, b);
    let inactive = ReadOptions {
        include_inactive: true,
        ..all(true)
    };
    assert_eq!(
        dst.get(&s, gone, &inactive).unwrap().state,
        MemoryState::Deleted
    );
    assert!(dst.integrity().unwrap().is_consistent());
}

pub fn messages_are_an_ordered_log(h: &dyn Harness) {
    let store = h.fresh();
    let s = scope("olga");
    for i in 0..12 {
        put(store.as_ref(), &s, &format!("turn {i}"), json!({}));
    }
    let recent = store.messages(&s, None, 5).unwrap();
    let texts: Vec<&str> = recent.iter().map(|m| m.content.as_str()).collect();
    assert_eq!(
        texts,
        vec!["turn 7", "turn 8", "turn 9", "turn 10", "turn 11"]
    );
    // Interleaved sessions: a session's window skips the other's messages.
    for i in 0..6 {
        let mut b = batch(&s, &format!("session turn {i}"), json!({}));
        b.messages[0].session_id = Some(if i % 2 == 0 { "even" } else { "odd" }.into());
        store.write(vec![b]).unwrap();
    }
    let even = store.messages(&s, Some("even"), 2).unwrap();
    let texts: Vec<&str> = even.iter().map(|m| m.content.as_str()).collect();
    assert_eq!(texts, vec!["session turn 2", "session turn 4"]);
    assert!(store.messages(&s, Some("none"), 5).unwrap().is_empty());
    assert!(store
        .messages(&scope("nobody"), None, 5)
        .unwrap()
        .is_empty());
}

pub fn dimension_mismatch_is_refused(h: &dyn Harness) {
    let store = h.fresh();
    let err = store
        .bind_embedder("other-model/x", HashEmbedder::DIM + 1)
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Conflict);
    assert!(err.to_string().contains("re-embed"), "{err}");
    let mut b = batch(&scope("pia"), "short vector", json!({}));
    b.memories[0].vector = vec![1.0; 3];
    assert_eq!(
        store.write(vec![b]).unwrap_err().kind(),
        ErrorKind::InvalidInput
    );
    // A failed batch leaves nothing behind: the message of the batch was not written either.
    assert_eq!(store.integrity().unwrap().messages, 0);
}

pub fn supersession_retires_and_links(h: &dyn Harness) {
    let store = h.fresh();
    let s = scope("quinn");
    let old = put(store.as_ref(), &s, "Quinn lives in Berlin", json!({}));
    let mut b = batch(&s, "Quinn lives in Lisbon", json!({}));
    let new = b.memories[0].id;
    let until = chrono::Utc::now();
    b.changes.push(Supersession {
        old,
        by: Some(new),
        state: MemoryState::Superseded,
        valid_until: until,
        reason: Some("moved".into()),
    });
    let out = store.write(vec![b]).unwrap().remove(0);
    assert_eq!(out.results.len(), 1);
    assert_eq!(out.results[0].event, HistoryKind::Update);
    assert_eq!(out.results[0].previous_id, Some(old));
    assert_eq!(
        out.results[0].previous_memory.as_deref(),
        Some("Quinn lives in Berlin")
    );

    assert_not_found(
        store.get(&s, old, &all(false)),
        "a superseded memory is hidden",
    );
    let inactive = ReadOptions {
        include_inactive: true,
        ..all(false)
    };
    let o = store.get(&s, old, &inactive).unwrap();
    assert_eq!(
        (o.state, o.text.as_str()),
        (MemoryState::Superseded, "Quinn lives in Berlin")
    );
    assert_eq!(
        o.valid_until.map(|t| t.timestamp_millis()),
        Some(until.timestamp_millis())
    );
    let h = store.history(&s, old, &all(false)).unwrap();
    let last = h.last().unwrap();
    assert_eq!(
        (last.event, last.reason.as_deref()),
        (HistoryKind::Supersede, Some("moved"))
    );
    let links = store.links(&s, new).unwrap();
    assert_eq!(links.len(), 1);
    assert_eq!(
        (links[0].from, links[0].to, links[0].kind),
        (new, old, LinkKind::Supersedes)
    );
    // Not searchable any more; the store stays consistent.
    let hits = search(store.as_ref(), &s, "Quinn lives Berlin", all(false));
    assert!(hits.iter().all(|h| h.memory.id != old));
    assert!(store.integrity().unwrap().is_consistent());

    // Retiring it again (it changed since it was read) is a conflict and writes nothing.
    let before = store.integrity().unwrap();
    let mut again = batch(&s, "Quinn lives in Porto", json!({}));
    again.changes.push(Supersession {
        old,
        by: None,
        state: MemoryState::Deleted,
        valid_until: until,
        reason: None,
    });
    assert_eq!(
        store.write(vec![again]).unwrap_err().kind(),
        ErrorKind::Conflict
    );
    assert_eq!(store.integrity().unwrap(), before);
    // Another scope cannot retire it either.
    let mut foreign = batch(&scope("mallory"), "x", json!({}));
    foreign.changes.push(Supersession {
        old: new,
        by: None,
        state: MemoryState::Deleted,
        valid_until: until,
        reason: None,
    });
    assert_eq!(
        store.write(vec![foreign]).unwrap_err().kind(),
        ErrorKind::Conflict
    );
    assert_not_found(store.links(&scope("mallory"), new), "links are scoped");
}

fn mention(name: &str, ty: &str) -> EntityMention {
    EntityMention {
        name: name.into(),
        normalized: normalize_entity(name),
        entity_type: ty.into(),
    }
}

pub fn entities_merge_and_find_candidates(h: &dyn Harness) {
    let store = h.fresh();
    let s = scope("rita");
    let mut a = batch(&s, "Caroline went to the support group", json!({}));
    a.memories[0].entities = vec![mention("Caroline", "person")];
    let mut b = batch(&s, "Carolin painted in Lisbon", json!({}));
    b.memories[0].entities = vec![mention("Carolin", "person"), mention("Lisbon", "place")];
    let mut c = batch(&s, "The 2023 trip", json!({}));
    c.memories[0].entities = vec![mention("2023", "date")];
    let mut d = batch(&s, "The 2022 trip", json!({}));
    d.memories[0].entities = vec![mention("2022", "date")];
    let ids: Vec<MemoryId> = [&a, &b, &c, &d].iter().map(|x| x.memories[0].id).collect();
    store.write(vec![a, b, c, d]).unwrap();
    let ea = store.entities_of(&s, ids[0]).unwrap();
    let eb = store.entities_of(&s, ids[1]).unwrap();
    assert_eq!(ea.len(), 1);
    assert!(
        eb.iter().any(|e| e.id == ea[0].id),
        "Carolin merged into Caroline"
    );
    let ec = store.entities_of(&s, ids[2]).unwrap();
    let ed = store.entities_of(&s, ids[3]).unwrap();
    assert_ne!(ec[0].id, ed[0].id, "different years never merge");

    let q = candidates(&s, all(false));
    let found = store
        .entity_candidates(&q, &["caroline".into(), "lisbon".into()], &[])
        .unwrap();
    assert_eq!(found.len(), 2);
    // The memory matching both names comes first. With N = 4 memories, "caroline" (on 2) has
    // idf ln 2 and "lisbon" (on 1) ln(10/3); scores are their sums over ln 5, capped at 1.
    assert_eq!(found[0].score, 1.0);
    let expected = (2f32.ln() / 5f32.ln()).min(1.0);
    assert!((found[1].score - expected).abs() < 1e-4, "{found:?}");
    // A rare name carries more than a common one.
    let rare = store
        .entity_candidates(&q, &["lisbon".into()], &[])
        .unwrap();
    let common = store
        .entity_candidates(&q, &["caroline".into()], &[])
        .unwrap();
    assert!(rare[0].score > common[0].score, "{rare:?} {common:?}");
    let got = store.fetch(&q, &[found[0].key]).unwrap();
    assert_eq!(got[0].1.id, ids[1]);
    // Scoped: another user sees nothing.
    let other = scope("sam");
    assert!(store
        .entity_candidates(&candidates(&other, all(false)), &["caroline".into()], &[])
        .unwrap()
        .is_empty());
}

/// Exact scores keep the query's scope: a key of another owner scores nothing.
pub fn exact_scores_stay_in_the_query_scope(h: &dyn Harness) {
    let store = h.fresh();
    let (mine, theirs) = (scope("maya"), scope("tom"));
    put(store.as_ref(), &mine, "Maya walks by the river", json!({}));
    put(store.as_ref(), &theirs, "Tom walks by the river", json!({}));
    let vector = HashEmbedder::vector("walks by the river");
    let key_of = |s: &Scope| {
        store
            .dense_candidates(&candidates(s, all(false)), &vector)
            .unwrap()[0]
            .key
    };
    let (my_key, their_key) = (key_of(&mine), key_of(&theirs));
    assert_ne!(my_key, their_key);
    let scored = store
        .vector_scores(
            &candidates(&mine, all(false)),
            &[my_key, their_key],
            &vector,
        )
        .unwrap();
    assert_eq!(scored.len(), 1, "{scored:?}");
    assert_eq!(scored[0].key, my_key);
    assert!(scored[0].score > 0.5, "{scored:?}");
}

/// A name on many memories scores the keys the other signals pooled, whatever a backend walks;
/// its weight follows the links that remain after hard deletes.
pub fn common_entities_score_the_pooled_keys(h: &dyn Harness) {
    let store = h.fresh();
    let s = scope("una");
    let mut batches = Vec::new();
    for i in 0..150 {
        let mut b = batch(&s, &format!("Caroline wrote page marker{i}"), json!({}));
        b.memories[0].entities = vec![mention("Caroline", "person")];
        batches.push(b);
    }
    let mut postcard = batch(&s, "A postcard from Lisbon", json!({}));
    postcard.memories[0].entities = vec![mention("Lisbon", "place")];
    batches.push(postcard);
    let ids: Vec<MemoryId> = batches.iter().map(|b| b.memories[0].id).collect();
    store.write(batches).unwrap();
    let mut q = candidates(&s, all(false));
    let key_of = |term: &str| store.lexical_candidates(&q, &[term.into()]).unwrap()[0].key;
    let pooled = vec![key_of("marker7"), key_of("marker140")];
    let weight = |n: f32, df: f32| (1.0 + (n - df + 0.5) / (df + 0.5)).ln() / (1.0 + n).ln();
    let names = ["caroline".to_string(), "lisbon".to_string()];
    let check = |q: &CandidateQuery<'_>, expected: f32| {
        let found = store.entity_candidates(q, &names, &pooled).unwrap();
        assert!(found.len() <= q.limit);
        for k in &pooled {
            let c = found
                .iter()
                .find(|c| c.key == *k)
                .expect("a pooled key is scored");
            assert!(
                (c.score - expected).abs() < 1e-4,
                "{} vs {expected}",
                c.score
            );
        }
        // The rare name's memory is found without being pooled, and ranks first.
        let best = store.fetch(q, &[found[0].key]).unwrap();
        assert_eq!(best[0].1.text, "A postcard from Lisbon");
    };
    // With a limit of 10, Caroline (150 memories) is more than a backend need walk.
    q.limit = 10;
    check(&q, weight(151.0, 150.0));
    // Hard-deleting 100 of Caroline's memories (not the pooled two) leaves her on 50 of 51; a
    // limit of 60 has room for all of them.
    let ctx = WriteContext::default();
    for id in &ids[10..110] {
        store.delete(&s, *id, DeleteMode::Hard, &ctx).unwrap();
    }
    q.limit = 60;
    check(&q, weight(51.0, 50.0));
}

pub fn duplicates_are_found_by_hash_in_the_exact_scope(h: &dyn Harness) {
    let store = h.fresh();
    let s = scope("tom");
    let id = put(store.as_ref(), &s, "Tom has two cats", json!({}));
    let hash = content_hash("Tom has two cats");
    assert_eq!(
        store.find_by_hash(&s, std::slice::from_ref(&hash)).unwrap(),
        vec![(hash.clone(), id)]
    );
    assert!(store
        .find_by_hash(&scope("uma"), std::slice::from_ref(&hash))
        .unwrap()
        .is_empty());
    store
        .delete(&s, id, DeleteMode::Soft, &WriteContext::default())
        .unwrap();
    assert!(
        store.find_by_hash(&s, &[hash]).unwrap().is_empty(),
        "only active memories count"
    );
}

pub fn rebind_replaces_every_vector_and_keeps_the_rest(h: &dyn Harness) {
    let store = h.fresh();
    let s = scope("vera");
    let keep = put(store.as_ref(), &s, "Vera grows tomatoes", json!({"n": 1}));
    let gone = put(store.as_ref(), &s, "Vera had a boat", json!({}));
    store
        .delete(&s, gone, DeleteMode::Soft, &WriteContext::default())
        .unwrap();
    let history_before = store.history(&s, keep, &all(false)).unwrap();
    let mut seen = Vec::new();
    let n = store
        .rebind_embedder("hash-bow/v2-32", 32, 1, &mut |texts| {
            seen.extend(texts.iter().map(|t| t.to_string()));
            Ok(texts
                .iter()
                .map(|t| HashEmbedder::vector_in(t, 32))
                .collect())
        })
        .unwrap();
    assert_eq!(n, 1, "only indexed memories are embedded again");
    assert_eq!(seen, vec!["Vera grows tomatoes".to_string()]);
    let stats = store.stats().unwrap();
    assert_eq!(
        (stats.embedding_model.as_deref(), stats.dimension),
        (Some("hash-bow/v2-32"), Some(32))
    );
    let q = candidates(&s, all(false));
    let hits = store
        .dense_candidates(&q, &HashEmbedder::vector_in("Vera grows tomatoes", 32))
        .unwrap();
    assert!((hits[0].score - 1.0).abs() < 1e-5, "{hits:?}");
    assert_eq!(
        store.history(&s, keep, &all(false)).unwrap(),
        history_before
    );
    assert!(store.integrity().unwrap().is_consistent());
    // A failing embedder changes nothing.
    let err = store
        .rebind_embedder("broken/x", 16, 8, &mut |_| {
            Err(Error::Unavailable {
                component: "embedder".into(),
                reason: "down".into(),
            })
        })
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Unavailable);
    assert_eq!(store.stats().unwrap().dimension, Some(32));
    assert!(store.integrity().unwrap().is_consistent());
}

/// Numbered pages (Mem0's `page`): `locate` counts what a listing matches — scope, filter and
/// visibility applied as `list` applies them — and positions a cursor so that `list` starts
/// right after the first `skip` matches, at any depth; past the end there is no cursor.
pub fn numbered_pages_are_located_by_count_and_cursor(h: &dyn Harness) {
    let store = h.fresh();
    let s = scope("wren");
    let other = scope("xavier");
    let mut ids = Vec::new();
    for i in 0..25 {
        ids.push(put(
            store.as_ref(),
            &s,
            &format!("note {i}"),
            json!({"even": i % 2 == 0}),
        ));
        put(store.as_ref(), &other, &format!("other {i}"), json!({}));
    }
    store
        .delete(&s, ids[3], DeleteMode::Soft, &WriteContext::default())
        .unwrap();
    let visible: Vec<MemoryId> = ids.iter().copied().filter(|id| *id != ids[3]).collect();
    let query = |filter: Option<Filter>| ListQuery {
        scope: s.clone(),
        kinds: None,
        filter,
        limit: 5,
        cursor: Some("ignored".into()),
        read: all(false),
    };
    let q = query(None);
    for skip in [0u64, 1, 5, 23, 24, 25, 1_000_000] {
        let pos = store.locate(&q, skip).unwrap();
        assert_eq!(pos.total, 24, "skip {skip}");
        assert_eq!(pos, locate_by_walking(store.as_ref(), &q, skip).unwrap());
        if skip == 0 || skip >= 24 {
            assert_eq!(pos.cursor, None, "skip {skip}");
            continue;
        }
        let page = store
            .list(&ListQuery {
                cursor: pos.cursor.clone(),
                ..q.clone()
            })
            .unwrap();
        let want: Vec<MemoryId> = visible
            .iter()
            .skip(skip as usize)
            .take(5)
            .copied()
            .collect();
        assert_eq!(
            page.results.iter().map(|m| m.id).collect::<Vec<_>>(),
            want,
            "skip {skip}"
        );
    }
    // A filter is counted as `list` applies it: 13 even notes (the deleted #3 was odd).
    let fq = query(Filter::from_json(&json!({"even": true})).unwrap());
    let pos = store.locate(&fq, 10).unwrap();
    assert_eq!(pos.total, 13);
    let page = store
        .list(&ListQuery {
            cursor: pos.cursor,
            ..fq
        })
        .unwrap();
    assert_eq!(
        page.results.iter().map(|m| m.id).collect::<Vec<_>>(),
        vec![ids[20], ids[22], ids[24]]
    );
}

/// Erasure: every copy of a memory's text goes — its row, lexical and dense entries, history,
/// the context windows of its neighbours, a stored idempotent result, an entity only it named,
/// and (when asked) its source message — in one call, leaving the id, times and an `ERASE`
/// event with who and why. Another scope cannot erase it. (Whether the bytes are gone from the
/// backend's files is each backend's own test.)
pub fn erase_removes_every_copy_of_the_text(h: &dyn Harness) {
    let store = h.fresh();
    let s = scope("yara");
    let secret = "passport QX7741 expires soon";
    let other = "Yara flies to Quito on Friday";
    let now = chrono::Utc::now();
    let m1 = Message::new(&s, Role::User, None, secret.to_string(), now);
    let m2 = Message::new(&s, Role::User, None, other.to_string(), now);
    let mut a = NewMemory::raw(&m1, &s, Metadata::new(), None, HashEmbedder::vector(secret));
    a.index_text = Some(format!("{secret}\n{other}"));
    a.entities = vec![
        EntityMention::new("QX7741", "code"),
        EntityMention::new("Yara", "person"),
    ];
    let mut b = NewMemory::raw(&m2, &s, Metadata::new(), None, HashEmbedder::vector(other));
    b.index_text = Some(format!("{other}\n{secret}"));
    b.entities = vec![EntityMention::new("Yara", "person")];
    let mut w = WriteBatch::new(s.clone(), vec![m1.clone(), m2.clone()], vec![a, b]);
    w.idempotency = Some(Idempotency {
        key: "k-erase".into(),
        request_hash: "h1".into(),
    });
    let out = store.write(vec![w]).unwrap();
    let (id, kept) = (out[0].results[0].id, out[0].results[1].id);
    store
        .update(
            &s,
            id,
            MemoryPatch {
                text: Some(format!("{secret}!")),
                vector: Some(HashEmbedder::vector(secret)),
                ..MemoryPatch::default()
            },
            &WriteContext::default(),
        )
        .unwrap();

    let ctx = WriteContext {
        actor: Some("dpo@example.com".into()),
        reason: Some("erasure request #12".into()),
        ..WriteContext::default()
    };
    assert_not_found(
        store.erase(&scope("zed"), id, true, &ctx),
        "another scope's erase",
    );
    let report = store.erase(&s, id, true, &ctx).unwrap();
    assert_eq!(report.id, id);
    assert_eq!(report.messages_erased, 1);
    assert_eq!(report.neighbours_reindexed, 1);
    assert_eq!(
        report.entities_removed, 1,
        "QX7741 named only the erased memory"
    );
    assert_eq!(report.replays_scrubbed, 1);

    let inactive = ReadOptions {
        include_inactive: true,
        include_expired: true,
        ..ReadOptions::default()
    };
    let m = store.get(&s, id, &inactive).unwrap();
    assert_eq!((m.text.as_str(), m.state), ("", MemoryState::Deleted));
    assert!(m.metadata.is_empty());
    assert_not_found(
        store.get(&s, id, &all(false)),
        "an erased memory by default",
    );
    let events = store.history(&s, id, &inactive).unwrap();
    let last = events.last().unwrap();
    assert_eq!(last.event, HistoryKind::Erase);
    assert_eq!(last.actor.as_deref(), Some("dpo@example.com"));
    assert_eq!(last.reason.as_deref(), Some("erasure request #12"));
    let leaks = |t: &Option<String>| t.as_deref().is_some_and(|t| t.contains("QX7741"));
    assert!(
        !events
            .iter()
            .any(|e| leaks(&e.old_memory) || leaks(&e.new_memory)),
        "{events:?}"
    );
    // Neither index finds it, and its neighbour no longer matches its words.
    let q = candidates(&s, inactive);
    let lexical = store
        .lexical_candidates(&q, &["qx7741".to_string()])
        .unwrap();
    assert!(lexical.is_empty(), "{lexical:?}");
    let dense = store
        .dense_candidates(&q, &HashEmbedder::vector(secret))
        .unwrap();
    let keys: Vec<i64> = dense.iter().map(|c| c.key).collect();
    assert!(store
        .fetch(&q, &keys)
        .unwrap()
        .iter()
        .all(|(_, m)| m.id != id));
    let still = store
        .lexical_candidates(&q, &["quito".to_string()])
        .unwrap();
    assert_eq!(
        still.len(),
        1,
        "the neighbour stays indexed by its own words"
    );
    let n = store.get(&s, kept, &all(false)).unwrap();
    assert_eq!(n.text, other);
    // The source message is blank; the neighbour's is untouched.
    let msgs = store.messages_by_id(&s, &[m1.id, m2.id]).unwrap();
    assert_eq!(msgs.len(), 2);
    assert!(
        msgs.iter().all(|m| !m.content.contains("QX7741")),
        "{msgs:?}"
    );
    assert!(msgs.iter().any(|m| m.content == other));
    // The stored result of the add keeps ids and events, not the text.
    let replay = store
        .replay(
            &s,
            &Idempotency {
                key: "k-erase".into(),
                request_hash: "h1".into(),
            },
        )
        .unwrap()
        .expect("the outcome is still stored");
    assert_eq!(replay.results[0].id, id);
    assert!(!serde_json::to_string(&replay).unwrap().contains("QX7741"));
    assert!(store.entities_of(&s, id).unwrap().is_empty());
    assert!(store.integrity().unwrap().is_consistent());
}

/// `update_many` and `delete_many` commit every item or none: a batch whose last item names a
/// memory the scope does not own (or one already deleted) changes nothing, history included.
pub fn batch_updates_and_deletes_are_all_or_nothing(h: &dyn Harness) {
    let store = h.fresh();
    let s = scope("vic");
    let a = put(store.as_ref(), &s, "Vic likes tea", json!({}));
    let b = put(store.as_ref(), &s, "Vic lives in Porto", json!({}));
    let foreign = put(store.as_ref(), &scope("wes"), "Wes likes jazz", json!({}));
    let patch = |t: &str| MemoryPatch {
        text: Some(t.to_string()),
        vector: Some(HashEmbedder::vector(t)),
        ..MemoryPatch::default()
    };
    let ctx = WriteContext::default();
    let before = (
        store.history(&s, a, &all(false)).unwrap(),
        store.get(&s, b, &all(false)).unwrap().text,
    );
    let err = store
        .update_many(
            vec![
                (s.clone(), a, patch("Vic likes coffee")),
                (s.clone(), b, patch("Vic lives in Braga")),
                (s.clone(), foreign, patch("planted")),
            ],
            &ctx,
        )
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::NotFound, "{err}");
    assert_eq!(store.get(&s, a, &all(false)).unwrap().text, "Vic likes tea");
    assert_eq!(
        (
            store.history(&s, a, &all(false)).unwrap(),
            store.get(&s, b, &all(false)).unwrap().text
        ),
        before
    );
    let err = store
        .delete_many(
            &[(s.clone(), a), (s.clone(), foreign)],
            DeleteMode::Soft,
            &ctx,
        )
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::NotFound, "{err}");
    assert!(
        store.get(&s, a, &all(false)).is_ok(),
        "the first delete was undone"
    );

    let out = store
        .update_many(
            vec![
                (s.clone(), a, patch("Vic likes coffee")),
                (s.clone(), b, patch("Vic lives in Braga")),
            ],
            &ctx,
        )
        .unwrap();
    assert_eq!(
        out.iter().map(|m| m.text.as_str()).collect::<Vec<_>>(),
        ["Vic likes coffee", "Vic lives in Braga"]
    );
    assert_eq!(
        store
            .delete_many(&[(s.clone(), a), (s.clone(), b)], DeleteMode::Soft, &ctx)
            .unwrap(),
        2
    );
    assert!(list_all(store.as_ref(), &s, 10).is_empty());
    assert!(store.integrity().unwrap().is_consistent());
}

/// The visibility rule is written once (`ReadOptions::admits`); every read path of a backend
/// must agree with it, for current-view, inactive, expired and as-of reads: `list`, `get`,
/// `fetch` of search candidates and duplicate detection by hash.
pub fn visibility_follows_the_one_rule_on_every_path(h: &dyn Harness) {
    use chrono::Duration as D;
    let store = h.fresh();
    let s = scope("xena");
    let t0 = chrono::Utc::now() - D::days(400);
    let past = chrono::Utc::now() - D::hours(1);
    // Lived in Oslo from t0, moved to Rome at t0+200d (Oslo superseded then).
    let mut oslo = batch_at(&s, "Xena lives in Oslo", json!({}), t0, None);
    oslo.memories[0].valid_from = Some(t0);
    let oslo_id = oslo.memories[0].id;
    store.write(vec![oslo]).unwrap();
    let moved = t0 + D::days(200);
    let mut rome = batch_at(&s, "Xena lives in Rome", json!({}), moved, None);
    rome.memories[0].valid_from = Some(moved);
    let rome_id = rome.memories[0].id;
    rome.changes.push(Supersession {
        old: oslo_id,
        by: Some(rome_id),
        state: MemoryState::Superseded,
        valid_until: moved,
        reason: None,
    });
    store.write(vec![rome]).unwrap();
    let expired = {
        let b = batch_at(&s, "Xena's coupon code", json!({}), t0, Some(past));
        let id = b.memories[0].id;
        store.write(vec![b]).unwrap();
        id
    };
    let deleted = put(store.as_ref(), &s, "Xena's old phone", json!({}));
    store
        .delete(&s, deleted, DeleteMode::Soft, &WriteContext::default())
        .unwrap();
    let every = ReadOptions {
        include_expired: true,
        include_inactive: true,
        ..ReadOptions::default()
    };
    let ids = [oslo_id, rome_id, expired, deleted];
    let records: Vec<Memory> = ids
        .iter()
        .map(|id| store.get(&s, *id, &every).unwrap())
        .collect();
    let mut reads = Vec::new();
    for include_expired in [false, true] {
        for include_inactive in [false, true] {
            for as_of in [
                None,
                Some(t0 + D::days(100)),
                Some(t0 + D::days(300)),
                Some(t0 - D::days(1)),
            ] {
                reads.push(ReadOptions {
                    include_expired,
                    include_inactive,
                    as_of,
                    ..ReadOptions::default()
                });
            }
        }
    }
    let listed = |read: ReadOptions| -> Vec<Memory> {
        store
            .list(&ListQuery {
                scope: s.clone(),
                kinds: None,
                filter: None,
                limit: 100,
                cursor: None,
                read,
            })
            .unwrap()
            .results
    };
    for read in reads {
        let want: Vec<MemoryId> = records
            .iter()
            .filter(|m| m.visible(&read))
            .map(|m| m.id)
            .collect();
        let listed: Vec<MemoryId> = listed(read).iter().map(|m| m.id).collect();
        assert_eq!(listed, want, "list under {read:?}");
        for m in &records {
            assert_eq!(
                store.get(&s, m.id, &read).is_ok(),
                m.visible(&read),
                "get {} under {read:?}",
                m.text
            );
        }
        let q = candidates(&s, read);
        let mut fetched: Vec<MemoryId> = store
            .lexical_candidates(&q, &["xena".to_string()])
            .unwrap()
            .iter()
            .filter_map(|c| store.fetch(&q, &[c.key]).unwrap().pop().map(|(_, m)| m.id))
            .collect();
        fetched.sort();
        let mut indexed: Vec<MemoryId> = want.iter().copied().filter(|id| *id != deleted).collect();
        indexed.sort();
        assert_eq!(fetched, indexed, "search candidates under {read:?}");
    }
    // As of day 100 Xena lived in Oslo; as of day 300, in Rome.
    let at = |days| {
        listed(ReadOptions {
            as_of: Some(t0 + D::days(days)),
            ..ReadOptions::default()
        })
        .into_iter()
        .map(|m| m.text)
        .filter(|t| t.contains("lives"))
        .collect::<Vec<_>>()
    };
    assert_eq!(at(100), ["Xena lives in Oslo"]);
    assert_eq!(at(300), ["Xena lives in Rome"]);
    // A restated fact whose identical copy has expired is not a duplicate.
    let hash = content_hash("Xena's coupon code");
    assert!(store.find_by_hash(&s, &[hash]).unwrap().is_empty());
}

/// A list cursor is good only for the scope that got it (another scope's, or a changed one, is
/// invalid input, not a way to read from elsewhere), and stays good across a reopen.
pub fn cursors_are_bound_to_their_scope_and_survive_reopen(h: &dyn Harness) {
    let store = h.fresh();
    let (a, b) = (scope("abe"), scope("bea"));
    for i in 0..3 {
        put(store.as_ref(), &a, &format!("abe note {i}"), json!({}));
        put(store.as_ref(), &b, &format!("bea note {i}"), json!({}));
    }
    let page = |store: &dyn Store, s: &Scope, cursor: Option<String>| {
        store.list(&ListQuery {
            scope: s.clone(),
            kinds: None,
            filter: None,
            limit: 1,
            cursor,
            read: all(false),
        })
    };
    let first = page(store.as_ref(), &a, None).unwrap();
    let c = first.next_cursor.clone().expect("more pages");
    let err = page(store.as_ref(), &b, Some(c.clone())).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidInput, "{err}");
    let mut tampered = c.clone().into_bytes();
    let last = tampered.len() - 1;
    tampered[last] = if tampered[last] == b'0' { b'1' } else { b'0' };
    let err = page(
        store.as_ref(),
        &a,
        Some(String::from_utf8(tampered).unwrap()),
    )
    .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidInput, "{err}");
    let store = h.reopen(store);
    let second = page(store.as_ref(), &a, Some(c)).unwrap();
    assert_eq!(second.results[0].text, "abe note 1");
}

/// The ids `filter` admits through `list`, after checking that the candidate reads and the
/// shared hybrid search accept it too.
fn run_filter(store: &dyn Store, scope: &Scope, filter: &Filter) -> Result<Vec<MemoryId>> {
    let q = CandidateQuery {
        filter: Some(filter),
        ..candidates(scope, ReadOptions::default())
    };
    store.dense_candidates(&q, &HashEmbedder::vector("tomatoes"))?;
    store.lexical_candidates(&q, &["tomatoes".to_string()])?;
    let req = SearchRequest {
        filter: Some(filter.clone()),
        ..SearchRequest::new(scope.clone(), "tomatoes", 10)
    };
    hybrid_search(
        store,
        &req,
        &HashEmbedder::vector("tomatoes"),
        &RankParams::default(),
    )?;
    let page = store.list(&ListQuery {
        scope: scope.clone(),
        kinds: None,
        filter: Some(filter.clone()),
        limit: 100,
        cursor: None,
        read: ReadOptions::default(),
    })?;
    Ok(page.results.iter().map(|m| m.id).collect())
}

fn parsed(f: serde_json::Value) -> Filter {
    Filter::from_json(&f).unwrap().unwrap()
}

fn values(prefix: &str, n: usize) -> Vec<String> {
    (0..n).map(|i| format!("{prefix}{i}")).collect()
}

/// Filters at every bound of the parser — alone and together — run on every read path of the
/// backend (wide filters once reached SQLite's expression-depth limit and came back as internal
/// errors).
pub fn filters_at_every_bound_run(h: &dyn Harness) {
    use mnemo_core::filter::{
        MAX_FILTER_CONDITIONS, MAX_FILTER_DEPTH, MAX_FILTER_IN_LIST, MAX_FILTER_KEYS,
    };
    use serde_json::Value;
    let store = h.fresh();
    let s = scope("wanda");
    let hit = put(
        store.as_ref(),
        &s,
        "wanda grows tomatoes",
        json!({"tag": "v7", "tags": ["x7"], "n": 7}),
    );
    put(
        store.as_ref(),
        &s,
        "wanda sells tomatoes",
        json!({"tag": "zz", "tags": ["y"], "n": 8}),
    );
    let contains = |i: usize| json!({"tags": {"contains": format!("x{i}")}});
    let mut keys: serde_json::Map<String, Value> = (0..MAX_FILTER_KEYS - 1)
        .map(|i| (format!("k{i}"), json!({"ne": i})))
        .collect();
    keys.insert("n".into(), json!(7));
    // Every level an OR of fifteen `contains` and the next level; an `in` list at the bottom:
    // the deepest nesting and all the conditions at once.
    let per_level = (MAX_FILTER_CONDITIONS - 16) / MAX_FILTER_DEPTH;
    let bottom = json!({"tag": {"in": values("v", 16)}});
    let deep_and_wide = (0..MAX_FILTER_DEPTH).fold(bottom, |inner, level| {
        let mut items: Vec<Value> = (0..per_level)
            .map(|j| json!({"tags": {"contains": format!("q{level}-{j}")}}))
            .collect();
        items.push(inner);
        json!({"OR": items})
    });
    let not_16 = (0..MAX_FILTER_DEPTH).fold(json!({"n": 7}), |f, _| json!({"NOT": f}));
    for (what, f) in [
        (
            "in list",
            json!({"tag": {"in": values("v", MAX_FILTER_IN_LIST)}}),
        ),
        (
            "nin list",
            json!({"NOT": {"tag": {"nin": values("v", MAX_FILTER_IN_LIST)}}}),
        ),
        (
            "OR of conditions",
            json!({"OR": (0..MAX_FILTER_CONDITIONS).map(contains).collect::<Vec<_>>()}),
        ),
        (
            "AND of conditions",
            json!({"AND": (1..MAX_FILTER_CONDITIONS).map(|i| json!({format!("m{i}"): {"ne": i}})).collect::<Vec<_>>(), "n": 7}),
        ),
        ("keys", Value::Object(keys)),
        ("depth", not_16),
        ("depth and conditions", deep_and_wide),
    ] {
        let got = run_filter(store.as_ref(), &s, &parsed(f.clone()));
        assert_eq!(got.unwrap(), vec![hit], "{what}: {f}");
    }
}

/// Past a bound a filter is invalid input: in the parser, and in the backend for filters built
/// in code (never an internal error from the database).
pub fn filters_past_a_bound_are_invalid_input(h: &dyn Harness) {
    use mnemo_core::filter::{
        Op, MAX_FILTER_CONDITIONS, MAX_FILTER_DEPTH, MAX_FILTER_IN_LIST, MAX_FILTER_KEYS,
    };
    use serde_json::Value;
    let store = h.fresh();
    let s = scope("wanda");
    put(store.as_ref(), &s, "wanda grows tomatoes", json!({"n": 7}));
    let keys: serde_json::Map<String, Value> = (0..=MAX_FILTER_KEYS)
        .map(|i| (format!("k{i}"), json!(i)))
        .collect();
    let leaves = |n: usize| {
        (0..n)
            .map(|i| json!({format!("k{i}"): i}))
            .collect::<Vec<_>>()
    };
    // The probe's shapes (an `in` list of 994, an OR of 1,001, 5,000 keys), then one past each
    // bound.
    for f in [
        json!({"tag": {"in": values("v", 994)}}),
        json!({"OR": leaves(1001)}),
        Value::Object((0..5000).map(|i| (format!("k{i}"), json!(i))).collect()),
        json!({"tag": {"in": values("v", MAX_FILTER_IN_LIST + 1)}}),
        json!({"OR": leaves(MAX_FILTER_CONDITIONS + 1)}),
        json!({"AND": [{"tag": {"in": values("v", MAX_FILTER_IN_LIST)}}, {"n": 7}]}),
        Value::Object(keys),
        (0..=MAX_FILTER_DEPTH).fold(json!({"n": 7}), |f, _| json!({"NOT": f})),
        // A scope id under OR inside a top-level AND, once read as a metadata key.
        json!({"AND": [{"n": 7}, {"OR": [{"user_id": "mallory"}, {"n": 8}]}]}),
    ] {
        let err = Filter::from_json(&f).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidInput, "{f}");
    }
    // Built in code, past the parser: the store refuses it rather than failing in SQLite.
    let leaf = |i: usize| Filter::Meta {
        key: format!("k{i}"),
        op: Op::Eq,
        value: json!(i),
    };
    for f in [
        Filter::Or((0..1001).map(leaf).collect()),
        Filter::And((0..5000).map(leaf).collect()),
        Filter::Meta {
            key: "tag".into(),
            op: Op::In,
            value: json!(values("v", 994)),
        },
        Filter::Meta {
            key: "tag".into(),
            op: Op::In,
            value: json!("not a list"),
        },
        Filter::Or(Vec::new()),
    ] {
        let err = run_filter(store.as_ref(), &s, &f).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidInput, "{f:?}: {err}");
    }
}
