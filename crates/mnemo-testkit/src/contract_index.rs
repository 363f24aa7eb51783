//! Contract cases for the derived vector index: what a search scores is the exact cosine of the
//! stored vectors, however the index keeps them, and a write that fails leaves nothing of
//! itself in the index for the next write (which may get the same row numbers) to meet.
//! Re-exported by `contract`.

use crate::*;
use mnemo_core::*;
use serde_json::json;

/// More memories than a backend scores exactly without its graph (SQLite: 2,048).
const GRAPH_SIZED: usize = 2100;

/// Dense scores are exact cosines both through the index (a scope too large to score every
/// memory) and in a small scope.
pub fn dense_scores_are_exact_cosines(h: &dyn Harness) {
    let store = h.fresh();
    let big = scope("index-big");
    let text = |i: usize| {
        format!(
            "reef survey {i} counted {} fish and {} crabs",
            i % 41,
            i % 23
        )
    };
    store
        .write(
            (0..GRAPH_SIZED)
                .map(|i| batch(&big, &text(i), json!({})))
                .collect(),
        )
        .expect("the bulk write succeeds");
    let small = scope("index-small");
    put(
        store.as_ref(),
        &small,
        "reef survey counted seals",
        json!({}),
    );
    for (s, query) in [
        (
            &big,
            "reef survey 77 counted 36 fish and 8 crabs".to_string(),
        ),
        (&big, text(GRAPH_SIZED - 1)),
        (&small, "counted seals".to_string()),
    ] {
        let hits = search(store.as_ref(), s, &query, ReadOptions::default());
        assert!(!hits.is_empty(), "{query}: no hits");
        let q = HashEmbedder::vector(&query);
        for h in &hits {
            let exact = embed::dot(&q, &HashEmbedder::vector(&h.memory.text));
            assert!(
                (h.scores.dense - exact).abs() < 1e-3,
                "{query} → {}: dense {} against exact {exact}",
                h.memory.text,
                h.scores.dense
            );
        }
    }
    let last = search(
        store.as_ref(),
        &big,
        &text(GRAPH_SIZED - 1),
        ReadOptions::default(),
    );
    assert_eq!(last[0].memory.text, text(GRAPH_SIZED - 1));
}

/// A planned write whose plan fails (after a moment, so a backend that indexes while the plan
/// is made has begun) leaves the index as it was; the next write is found by its own vectors.
pub fn a_failed_planned_write_leaves_the_index_as_it_was(h: &dyn Harness) {
    let store = h.fresh();
    let s = scope("index-failed");
    let kept = put(
        store.as_ref(),
        &s,
        "a kept memory about lanterns",
        json!({}),
    );
    let before = store.integrity().expect("integrity");
    let n = 24;
    let doomed: Vec<WriteBatch> = (0..n)
        .map(|i| batch(&s, &format!("doomed entry {i} about kites"), json!({})))
        .collect();
    let err = store
        .write_planned(
            doomed,
            Box::new(|| {
                std::thread::sleep(std::time::Duration::from_millis(50));
                Err(Error::Unavailable {
                    component: "planner".into(),
                    reason: "test".into(),
                })
            }),
        )
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Unavailable, "{err}");
    let after = store.integrity().expect("integrity");
    assert!(after.is_consistent(), "{after:?}");
    assert_eq!(
        after.ann_entries, before.ann_entries,
        "the failed write left index entries"
    );

    next_write_is_found_by_its_vectors(store.as_ref(), &s, n, kept, before.ann_entries);
}

/// After a failed write (`entries_before` index entries, `kept` among them): `n` planned
/// batches of `s` (which may get the failed write's row numbers) are each found by their own
/// text at score 1, `kept` still is, and the index holds exactly the new entries more.
pub fn next_write_is_found_by_its_vectors(
    store: &dyn Store,
    s: &Scope,
    n: usize,
    kept: MemoryId,
    entries_before: u64,
) {
    let text = |i: usize| format!("second try {i} with a lighthouse");
    store
        .write_planned(
            (0..n).map(|i| batch(s, &text(i), json!({}))).collect(),
            Box::new(move || Ok(vec![Default::default(); n])),
        )
        .expect("the next planned write succeeds");
    for i in [0, n / 2, n - 1] {
        let hits = search(store, s, &text(i), ReadOptions::default());
        assert_eq!(hits[0].memory.text, text(i));
        assert!(
            (hits[0].scores.dense - 1.0).abs() < 1e-3,
            "{}",
            hits[0].scores.dense
        );
    }
    assert!(search(
        store,
        s,
        "a kept memory about lanterns",
        ReadOptions::default()
    )
    .iter()
    .any(|h| h.memory.id == kept));
    let report = store.integrity().expect("integrity");
    assert!(report.is_consistent(), "{report:?}");
    assert_eq!(report.ann_entries, entries_before + n as u64);
}
