//! The store contract: each function is one promise every backend keeps.

use crate::*;
use mnemo_core::*;
use serde_json::json;
use std::collections::HashSet;

pub use crate::contract_blocks::*;
pub use crate::contract_index::*;
pub use crate::contract_jobs::*;
pub use crate::contract_log::*;
pub use crate::contract_notes::*;
pub use crate::contract_relation_each::*;
pub use crate::contract_relation_fixtures::*;
pub use crate::contract_relation_lifecycle::*;
pub use crate::contract_relations::*;
pub use crate::contract_relations_symmetric::*;
pub use crate::contract_search::*;
pub use crate::contract_segment_time::*;
pub use crate::contract_sessions::*;
pub use crate::contract_tier_fixtures::*;
pub use crate::contract_tier_lifecycle::*;
pub use crate::contract_tiers::*;
pub use crate::contract_timeline::*;
pub use crate::contract_transfer::*;
pub use crate::contract_visibility::*;
pub use crate::contract_writes::*;

pub(crate) fn all(read_expired: bool) -> ReadOptions {
    ReadOptions {
        include_expired: read_expired,
        ..ReadOptions::default()
    }
}

pub(crate) fn list_all(store: &dyn Store, scope: &Scope, limit: usize) -> Vec<mnemo_core::Memory> {
    let mut out = Vec::new();
    let mut cursor = None;
    loop {
        let page = store
            .list(
                &ListQuery::new(scope.clone(), limit)
                    .with_cursor(cursor)
                    .with_read(all(false)),
            )
            .expect("list succeeds");
        out.extend(page.results);
        match page.next_cursor {
            Some(c) => cursor = Some(c),
            None => return out,
        }
    }
}

pub(crate) fn assert_not_found<T: std::fmt::Debug>(r: Result<T>, what: &str) {
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
    let hist = store
        .history(&HistoryQuery::new(&s, id, all(false)))
        .unwrap();
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
    assert_not_found(
        store.history(&HistoryQuery::new(&b, id, all(true))),
        "history",
    );
    assert_not_found(
        store.update(
            &b,
            id,
            MemoryPatch {
                metadata: Some(Metadata::new()),
                ..Default::default()
            },
            &WritePlan::default(),
        ),
        "update",
    );
    assert_not_found(
        store.delete(&b, id, DeleteMode::Soft, &WritePlan::default()),
        "delete",
    );
    assert_eq!(
        store
            .delete_all(&b, DeleteMode::Soft, &WritePlan::default())
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
            &WritePlan::default(),
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
    assert_not_found(store.history(&HistoryQuery::new(&s, id, hidden)), "history");
    assert_not_found(
        store.update(
            &s,
            id,
            MemoryPatch {
                metadata: Some(Metadata::new()),
                ..Default::default()
            },
            &WritePlan::default(),
        ),
        "update",
    );
    assert_not_found(
        store.delete(&s, id, DeleteMode::Soft, &WritePlan::default()),
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
            .list(
                &ListQuery::new(s.clone(), 7)
                    .with_cursor(cursor)
                    .with_read(all(false)),
            )
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
        .list(
            &ListQuery::new(s, 7)
                .with_cursor("garbage".to_string())
                .with_read(all(false)),
        )
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
        .delete(&s, deleted, DeleteMode::Soft, &WritePlan::default())
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
