//! Micro-benchmarks of the store's search paths on 20,000 memories in one scope, with the
//! scripted embedder (64 dimensions): hybrid search, and each candidate side alone.
//! End-to-end numbers with the real model come from `mnemo bench` (see BENCHMARKS.md).

use criterion::{criterion_group, criterion_main, Criterion};
use mnemo_core::*;
use mnemo_store_sqlite::SqliteStore;
use mnemo_testkit::{batch, HashEmbedder};
use serde_json::json;

const WORDS: &[&str] = &[
    "maya", "tom", "lisbon", "berlin", "cello", "marathon", "dog", "pottery", "novel", "tomatoes",
    "bicycle", "chess", "sunset", "weekend", "summer", "friday", "friend", "coworker", "market",
    "library",
];

fn text(i: usize) -> String {
    (0..8)
        .map(|j| WORDS[(i * 7 + j * 13 + i / 3) % WORDS.len()])
        .collect::<Vec<_>>()
        .join(" ")
        + &format!(" item{i}")
}

fn bench(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = SqliteStore::open(dir.path().join("mnemo.db")).expect("open");
    store
        .bind_embedder(&Binding::new(HashEmbedder::MODEL_ID, HashEmbedder::DIM).expect("binding"))
        .expect("bind");
    let scope = Scope::user("bench").expect("scope");
    for chunk in (0..20_000).collect::<Vec<_>>().chunks(500) {
        store
            .write(
                chunk
                    .iter()
                    .map(|i| batch(&scope, &text(*i), json!({})))
                    .collect(),
            )
            .expect("write");
    }
    let query = "what did maya do in lisbon last weekend";
    let vector = HashEmbedder::vector(query);
    let req = SearchRequest::new(scope.clone(), query, 10);
    let cq = CandidateQuery {
        scope: &scope,
        kinds: None,
        filter: None,
        read: ReadOptions::default(),
        limit: 30,
    };
    let terms = text::query_terms(query);
    c.bench_function("hybrid_search_20k", |b| {
        b.iter(|| hybrid_search(&store, &req, &vector, &RankParams::default()).expect("search"))
    });
    c.bench_function("dense_candidates_20k", |b| {
        b.iter(|| store.dense_candidates(&cq, &vector).expect("dense"))
    });
    let keys: Vec<i64> = store
        .dense_candidates(&cq, &vector)
        .expect("dense")
        .iter()
        .take(10)
        .map(|c| c.key)
        .collect();
    c.bench_function("fetch_10_20k", |b| {
        b.iter(|| store.fetch(&cq, &keys).expect("fetch"))
    });
    c.bench_function("vector_scores_30_20k", |b| {
        let scoring = ScoreQuery {
            query: cq,
            keys: &keys,
            vector: &vector,
        };
        b.iter(|| store.vector_scores(&scoring).expect("scores"))
    });
    c.bench_function("lexical_candidates_20k", |b| {
        b.iter(|| store.lexical_candidates(&cq, &terms).expect("lexical"))
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
