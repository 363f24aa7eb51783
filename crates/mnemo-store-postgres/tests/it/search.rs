//! Search candidates beyond the contract suite: the full-text side's BM25 ranking, stemming and
//! words that look like text-search syntax, and filtered dense queries that still fill their
//! limit through pgvector's iterative index scan.

use crate::fresh_schema;
use mnemo_core::filter::Op;
use mnemo_core::Admin;
use mnemo_core::RecordWrites;
use mnemo_core::Retrieval;
use mnemo_core::{Binding, CandidateQuery, Filter, ReadOptions, Rebind, ScoreQuery};
use mnemo_store_postgres::PgStore;
use mnemo_testkit::{batch, candidates, put, scope, HashEmbedder};
use serde_json::json;
use std::collections::HashMap;

fn store(tag: &str) -> PgStore {
    let (_, url) = fresh_schema(tag);
    let store = PgStore::connect(&url, 2).expect("connect");
    store
        .bind_embedder(&Binding::new(HashEmbedder::MODEL_ID, HashEmbedder::DIM).unwrap())
        .expect("bind");
    store
}

fn words(terms: &[&str]) -> Vec<String> {
    terms.iter().map(|t| t.to_string()).collect()
}

#[test]
fn lexical_ranks_by_bm25_with_stemming_and_quotes_every_word() {
    let store = store("lexical");
    let s = scope("maya");
    let hiking = put(&store, &s, "Maya went hiking in the Alps", json!({}));
    let market = put(&store, &s, "Tom went to the market", json!({}));
    let markets = put(&store, &s, "Maya likes markets", json!({}));
    let irish = put(
        &store,
        &s,
        r"Dr. O'Brien's notes on C:\temp & co",
        json!({}),
    );
    put(&store, &scope("other"), "hiking hiking hiking", json!({}));
    let q = candidates(&s, ReadOptions::default());
    let ids = |terms: &[&str]| -> Vec<mnemo_core::MemoryId> {
        let hits = store
            .lexical_candidates(&q, &words(terms))
            .expect("lexical");
        assert!(hits.iter().all(|h| h.score > 0.0), "{hits:?}");
        assert!(
            hits.windows(2).all(|w| w[0].score >= w[1].score),
            "{hits:?}"
        );
        let keys: Vec<i64> = hits.iter().map(|h| h.key).collect();
        let by_key: HashMap<i64, _> = store
            .fetch(&q, &keys)
            .expect("fetch")
            .into_iter()
            .map(|(k, m)| (k, m.id))
            .collect();
        keys.iter().map(|k| by_key[k]).collect()
    };
    // The rare word outranks the common one; another scope's memory is never a candidate.
    assert_eq!(ids(&["hiking", "went"]), [hiking, market]);
    // Stemming: "market" finds "markets" too.
    let found = ids(&["market"]);
    assert_eq!(found.len(), 2);
    assert!(found.contains(&market) && found.contains(&markets));
    // Quotes, backslashes and tsquery operators are words, not syntax.
    assert_eq!(ids(&["O'Brien's"]), [irish]);
    assert!(ids(&["'", "\\", "&", "|", "!", ":*", "<->", "(", "the"]).is_empty());
    assert_eq!(ids(&[r"C:\temp", "zzz"]), [irish]);
    assert!(ids(&[]).is_empty());
}

/// Every connection of this store stops an iterative index scan after about 20 tuples (and
/// never sorts when an index can order), far fewer than a filter 12 of 3,000 memories pass
/// needs: the store must notice the short answer and scan exactly.
#[test]
fn filtered_dense_queries_fill_their_limit() {
    let (_, url) = fresh_schema("dense_filter");
    let url = format!("{url}%20-c%20hnsw.max_scan_tuples%3D20%20-c%20enable_sort%3Doff");
    let store = PgStore::connect(&url, 2).expect("connect");
    store
        .bind_embedder(&Binding::new(HashEmbedder::MODEL_ID, HashEmbedder::DIM).unwrap())
        .expect("bind");
    let s = scope("filtered");
    let batches: Vec<_> = (0..3000)
        .map(|i| {
            let text = format!("note {i} about topic{} and item{}", i % 7, i % 13);
            batch(&s, &text, json!({ "tag": i % 250 }))
        })
        .collect();
    for chunk in batches.chunks(500) {
        store.write(chunk.to_vec()).expect("write");
    }
    let filter = Filter::Meta {
        key: "tag".into(),
        op: Op::Eq,
        value: json!(3),
    };
    let q = CandidateQuery {
        filter: Some(&filter),
        limit: 10,
        ..candidates(&s, ReadOptions::default())
    };
    // 12 memories carry tag 3; a query near none of them in particular still finds 10.
    let hits = store
        .dense_candidates(&q, &HashEmbedder::vector("note about topic1 and item2"))
        .expect("dense");
    assert_eq!(hits.len(), 10, "{hits:?}");
    let keys: Vec<i64> = hits.iter().map(|h| h.key).collect();
    let fetched = store.fetch(&q, &keys).expect("fetch");
    assert_eq!(fetched.len(), 10);
    assert!(fetched.iter().all(|(_, m)| m.metadata["tag"] == json!(3)));
    // A vector of another dimension is invalid input, not a storage error.
    let err = store.dense_candidates(&q, &[1.0; 3]).unwrap_err();
    assert_eq!(err.kind(), mnemo_core::ErrorKind::InvalidInput);
}

/// A store keeps the bound dimension after reading it once; when another server re-embeds the
/// database with a model of another dimension, a vector of the old one is invalid input on the
/// next search (not a storage error), and a vector of the new one is searched.
#[test]
fn a_rebind_by_another_server_is_seen_by_the_next_search() {
    let (_, url) = fresh_schema("rebind_seen");
    let first = PgStore::connect(&url, 2).expect("connect");
    first
        .bind_embedder(&Binding::new(HashEmbedder::MODEL_ID, HashEmbedder::DIM).unwrap())
        .expect("bind");
    let s = scope("maya");
    put(&first, &s, "Maya walks by the river", json!({}));
    let q = candidates(&s, ReadOptions::default());
    let old = HashEmbedder::vector("river");
    assert_eq!(first.dense_candidates(&q, &old).expect("dense").len(), 1);

    let second = PgStore::connect(&url, 2).expect("connect");
    let dim = HashEmbedder::DIM + 3;
    let mut embed = |texts: &[&str]| -> mnemo_core::Result<Vec<Vec<f32>>> {
        Ok(texts
            .iter()
            .map(|t| {
                let mut v = HashEmbedder::vector(t);
                v.extend([0.0; 3]);
                v
            })
            .collect())
    };
    second
        .rebind_embedder(
            &Rebind {
                to: Binding::new("hash-wide/v1", dim).unwrap(),
                batch: 8,
            },
            &mut embed,
        )
        .expect("rebind");

    for _ in 0..2 {
        let err = first.dense_candidates(&q, &old).unwrap_err();
        assert_eq!(err.kind(), mnemo_core::ErrorKind::InvalidInput, "{err}");
        let err = first
            .vector_scores(&ScoreQuery {
                query: q,
                keys: &[1],
                vector: &old,
            })
            .unwrap_err();
        assert_eq!(err.kind(), mnemo_core::ErrorKind::InvalidInput, "{err}");
    }
    let mut wide = old.clone();
    wide.extend([0.0; 3]);
    assert_eq!(first.dense_candidates(&q, &wide).expect("dense").len(), 1);
}

/// A statement a connection has prepared whose result columns change type under it (another
/// server's migration or rebind altering a column) is refused by PostgreSQL once with 0A000
/// ("cached plan must not change result type"); the pool prepares it again and the read
/// succeeds instead of failing as a storage error.
#[test]
fn a_prepared_statement_refused_after_a_column_type_change_runs_again() {
    let (schema, url) = fresh_schema("reprepare");
    // One connection, so the second read reuses the statement the first one prepared.
    let store = PgStore::connect(&url, 1).expect("connect");
    store
        .bind_embedder(&Binding::new(HashEmbedder::MODEL_ID, HashEmbedder::DIM).unwrap())
        .expect("bind");
    let s = scope("maya");
    put(&store, &s, "Maya walks by the river", json!({}));
    let q = candidates(&s, ReadOptions::default());
    let keys: Vec<i64> = store
        .dense_candidates(&q, &HashEmbedder::vector("river"))
        .expect("dense")
        .iter()
        .map(|c| c.key)
        .collect();
    assert_eq!(store.fetch(&q, &keys).expect("fetch").len(), 1);
    // A column the fetch returns changes type (text to varchar: the same values, another type).
    crate::admin()
        .batch_execute(&format!(
            "ALTER TABLE {schema}.memories ALTER COLUMN actor TYPE varchar"
        ))
        .expect("alter");
    let again = store.fetch(&q, &keys).expect("fetch after the type change");
    assert_eq!(again.len(), 1);
    assert_eq!(again[0].1.text, "Maya walks by the river");
}

/// Dense queries search four times their limit (at least 100) of the graph; an operator's own
/// `hnsw.ef_search` (here in the URL) is the floor, so recall can be raised without a release.
#[test]
fn dense_ef_search_follows_the_limit_and_the_operators_floor() {
    use mnemo_store_postgres::testing::dense_ef_search;
    let plain = store("ef_plain");
    assert_eq!(dense_ef_search(&plain, 10).expect("ef"), 100);
    assert_eq!(dense_ef_search(&plain, 30).expect("ef"), 120);
    assert_eq!(dense_ef_search(&plain, 5000).expect("ef"), 1000);
    let (_, url) = fresh_schema("ef_floor");
    let raised =
        PgStore::connect(&format!("{url}%20-c%20hnsw.ef_search%3D300"), 2).expect("connect");
    assert_eq!(dense_ef_search(&raised, 30).expect("ef"), 300);
    assert_eq!(dense_ef_search(&raised, 100).expect("ef"), 400);
}
