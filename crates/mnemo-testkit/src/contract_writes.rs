//! Contract cases for changing memories: updates, deletes and their history, delete-all and
//! reset, supersession, all-or-nothing batches, the embedder binding and re-embedding.
//! Re-exported by `contract`.

use crate::contract::{all, assert_not_found, list_all};
use crate::*;
use mnemo_core::*;
use serde_json::json;

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
    let ctx = WritePlan {
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
    let hist = store
        .history(&HistoryQuery::new(&s, id, all(false)))
        .unwrap();
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
    assert_eq!(
        store
            .history(&HistoryQuery::new(&s, id2, all(false)))
            .unwrap()
            .len(),
        2
    );
    assert_not_found(
        store.history(&HistoryQuery::new(&scope("other"), id2, all(false))),
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
            .delete_all(&a, DeleteMode::Soft, &WritePlan::default())
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

pub fn dimension_mismatch_is_refused(h: &dyn Harness) {
    let store = h.fresh();
    let err = store
        .bind_embedder(&Binding::new("other-model/x", HashEmbedder::DIM + 1).unwrap())
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
    let h = store
        .history(&HistoryQuery::new(&s, old, all(false)))
        .unwrap();
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

pub fn rebind_replaces_every_vector_and_keeps_the_rest(h: &dyn Harness) {
    let store = h.fresh();
    let s = scope("vera");
    let keep = put(store.as_ref(), &s, "Vera grows tomatoes", json!({"n": 1}));
    let gone = put(store.as_ref(), &s, "Vera had a boat", json!({}));
    store
        .delete(&s, gone, DeleteMode::Soft, &WritePlan::default())
        .unwrap();
    let history_before = store
        .history(&HistoryQuery::new(&s, keep, all(false)))
        .unwrap();
    let mut seen = Vec::new();
    let n = store
        .rebind_embedder(
            &Rebind {
                to: Binding::new("hash-bow/v2-32", 32).unwrap(),
                batch: 1,
            },
            &mut |texts| {
                seen.extend(texts.iter().map(|t| t.to_string()));
                Ok(texts
                    .iter()
                    .map(|t| HashEmbedder::vector_in(t, 32))
                    .collect())
            },
        )
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
    // The embedded store's graph keeps half-precision vectors: its inner products are within
    // about 1e-3 of the exact ones (a vector of the old model would score far lower).
    assert!((hits[0].score - 1.0).abs() < 1e-3, "{hits:?}");
    assert_eq!(
        store
            .history(&HistoryQuery::new(&s, keep, all(false)))
            .unwrap(),
        history_before
    );
    assert!(store.integrity().unwrap().is_consistent());
    // A failing embedder changes nothing.
    let err = store
        .rebind_embedder(
            &Rebind {
                to: Binding::new("broken/x", 16).unwrap(),
                batch: 8,
            },
            &mut |_| {
                Err(Error::Unavailable {
                    component: "embedder".into(),
                    reason: "down".into(),
                })
            },
        )
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Unavailable);
    assert_eq!(store.stats().unwrap().dimension, Some(32));
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
    let ctx = WritePlan::default();
    let before = (
        store
            .history(&HistoryQuery::new(&s, a, all(false)))
            .unwrap(),
        store.get(&s, b, &all(false)).unwrap().text,
    );
    let updates = Updates::new(vec![
        (s.clone(), a, patch("Vic likes coffee")),
        (s.clone(), b, patch("Vic lives in Braga")),
        (s.clone(), foreign, patch("planted")),
    ])
    .unwrap();
    let err = store.update_many(&updates, &ctx).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::NotFound, "{err}");
    assert_eq!(store.get(&s, a, &all(false)).unwrap().text, "Vic likes tea");
    assert_eq!(
        (
            store
                .history(&HistoryQuery::new(&s, a, all(false)))
                .unwrap(),
            store.get(&s, b, &all(false)).unwrap().text
        ),
        before
    );
    let err = store
        .delete_many(
            &Deletes {
                items: vec![(s.clone(), a), (s.clone(), foreign)],
                mode: DeleteMode::Soft,
            },
            &ctx,
        )
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::NotFound, "{err}");
    assert!(
        store.get(&s, a, &all(false)).is_ok(),
        "the first delete was undone"
    );

    let updates = Updates::new(vec![
        (s.clone(), a, patch("Vic likes coffee")),
        (s.clone(), b, patch("Vic lives in Braga")),
    ])
    .unwrap();
    let out = store.update_many(&updates, &ctx).unwrap();
    assert_eq!(
        out.iter().map(|m| m.text.as_str()).collect::<Vec<_>>(),
        ["Vic likes coffee", "Vic lives in Braga"]
    );
    assert_eq!(
        store
            .delete_many(
                &Deletes {
                    items: vec![(s.clone(), a), (s.clone(), b)],
                    mode: DeleteMode::Soft
                },
                &ctx
            )
            .unwrap(),
        2
    );
    assert!(list_all(store.as_ref(), &s, 10).is_empty());
    assert!(store.integrity().unwrap().is_consistent());
}
