//! Binding the embedder (the recorded model, the typed vector columns, the HNSW index) and the
//! recall of HNSW dense candidates against exact search.

use crate::{admin, fresh_schema};
use mnemo_core::Admin;
use mnemo_core::RecordWrites;
use mnemo_core::Retrieval;
use mnemo_core::{Binding, CandidateQuery, ErrorKind, MemoryId, ReadOptions};
use mnemo_store_postgres::PgStore;
use mnemo_testkit::{batch, candidates, scope, HashEmbedder};
use serde_json::json;
use std::collections::HashMap;

#[test]
fn bind_records_the_model_and_types_the_columns_once() {
    let (schema, url) = fresh_schema("bind");
    let store = PgStore::connect(&url, 2).expect("connect");
    store
        .bind_embedder(&Binding::new(HashEmbedder::MODEL_ID, HashEmbedder::DIM).unwrap())
        .expect("bind");
    // Binding again (every connect does) is fine, a new revision of the same model too.
    store
        .bind_embedder(&Binding::new(HashEmbedder::MODEL_ID, HashEmbedder::DIM).unwrap())
        .expect("bind again");
    let other = store
        .bind_embedder(&Binding::new("other-model/x", HashEmbedder::DIM + 1).unwrap())
        .unwrap_err();
    assert_eq!(other.kind(), ErrorKind::Conflict);
    assert!(other.to_string().contains("re-embed"), "{other}");

    let mut c = admin();
    let meta: Vec<(String, String)> = c
        .query(
            &format!("SELECT key, value FROM {schema}.mnemo_meta WHERE key IN ('model_id', 'dimension') ORDER BY key"),
            &[],
        )
        .expect("meta")
        .iter()
        .map(|r| (r.get(0), r.get(1)))
        .collect();
    assert_eq!(
        meta,
        [
            ("dimension".to_string(), HashEmbedder::DIM.to_string()),
            ("model_id".to_string(), HashEmbedder::MODEL_ID.to_string())
        ]
    );
    for table in ["memories", "pages", "segments"] {
        let ty: String = c
            .query_one(
                "SELECT format_type(a.atttypid, a.atttypmod) FROM pg_attribute a \
                 WHERE a.attrelid = ($1 || '.' || $2)::regclass AND a.attname = 'embedding'",
                &[&schema, &table],
            )
            .expect("column type")
            .get(0);
        assert_eq!(ty, format!("vector({})", HashEmbedder::DIM), "{table}");
    }
    let index: String = c
        .query_one(
            "SELECT indexdef FROM pg_indexes WHERE schemaname = $1 AND indexname = 'memories_embedding_hnsw'",
            &[&schema],
        )
        .expect("hnsw index")
        .get(0);
    assert!(
        index.contains("hnsw")
            && index.contains("vector_cosine_ops")
            && index.contains("m='16'")
            && index.contains("ef_construction='128'"),
        "{index}"
    );
}

fn hnsw_def(c: &mut postgres::Client, schema: &str) -> Option<String> {
    c.query_opt(
        "SELECT indexdef FROM pg_indexes WHERE schemaname = $1 AND indexname = 'memories_embedding_hnsw'",
        &[&schema],
    )
    .expect("index definition")
    .map(|r| r.get(0))
}

/// A v2 store's HNSW index (pgvector's default build settings) is built again with the
/// current ones when the store opens, its memories still found; a store with no model bound
/// gets no index from the migration (its bind builds it).
#[test]
fn the_v3_migration_rebuilds_the_hnsw_index_of_a_bound_store() {
    let (schema, url) = fresh_schema("hnsw_v3");
    let store = PgStore::connect(&url, 2).expect("connect");
    store
        .bind_embedder(&Binding::new(HashEmbedder::MODEL_ID, HashEmbedder::DIM).unwrap())
        .expect("bind");
    let s = scope("maya");
    mnemo_testkit::put(&store, &s, "Maya walks by the river", json!({}));
    drop(store);
    let mut c = admin();
    c.batch_execute(&format!(
        "SET search_path = {schema}, public; \
         DROP INDEX memories_embedding_hnsw; \
         CREATE INDEX memories_embedding_hnsw ON memories USING hnsw (embedding vector_cosine_ops); \
         UPDATE mnemo_meta SET value = '2' WHERE key = 'schema_version';"
    ))
    .expect("back to v2");
    assert!(!hnsw_def(&mut c, &schema)
        .expect("v2 index")
        .contains("ef_construction"));

    let store = PgStore::connect(&url, 2).expect("connect");
    assert_eq!(
        store.schema_version().expect("version"),
        mnemo_store_postgres::SCHEMA_VERSION
    );
    let def = hnsw_def(&mut c, &schema).expect("v3 index");
    assert!(def.contains("ef_construction='128'"), "{def}");
    let q = candidates(&s, ReadOptions::default());
    let hits = store
        .dense_candidates(&q, &HashEmbedder::vector("Maya walks by the river"))
        .expect("dense");
    assert_eq!(hits.len(), 1, "{hits:?}");

    let (unbound, url) = fresh_schema("hnsw_v3_unbound");
    let store = PgStore::connect(&url, 1).expect("connect");
    drop(store);
    c.batch_execute(&format!(
        "UPDATE {unbound}.mnemo_meta SET value = '2' WHERE key = 'schema_version'"
    ))
    .expect("back to v2");
    let store = PgStore::connect(&url, 1).expect("connect again");
    assert_eq!(
        store.schema_version().expect("version"),
        mnemo_store_postgres::SCHEMA_VERSION
    );
    assert_eq!(hnsw_def(&mut c, &unbound), None);
}

/// A small deterministic generator (xorshift64*), so the data set is the same on every run.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn unit(&mut self) -> f32 {
        ((self.next() >> 40) as f32 + 0.5) / (1u64 << 24) as f32
    }

    /// A random direction: Gaussian coordinates (Box–Muller), normalised.
    fn direction(&mut self, dim: usize) -> Vec<f32> {
        let mut v: Vec<f32> = (0..dim)
            .map(|_| {
                let (a, b) = (self.unit(), self.unit());
                (-2.0 * a.ln()).sqrt() * (std::f32::consts::TAU * b).cos()
            })
            .collect();
        let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        v.iter_mut().for_each(|x| *x /= n);
        v
    }

    fn words(&mut self, n: usize) -> String {
        (0..n)
            .map(|_| format!("w{}", self.next() % 400))
            .collect::<Vec<_>>()
            .join(" ")
    }
}

fn cosine(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

/// Users whose memories carry HashEmbedder vectors of random word lists, and users whose
/// memories carry random directions (the harder case for a graph index): the store's dense
/// candidates for a query in one user's scope are compared with an exact ranking of that
/// user's vectors. A hit counts when it is as similar as the exact 10th (ties of equal vectors
/// make keys ambiguous, scores are not).
#[test]
fn hnsw_dense_candidates_recall_exact_search() {
    const USERS: usize = 4;
    const PER_USER: usize = 1000;
    const QUERIES: usize = 25;
    const K: usize = 10;
    let (schema, url) = fresh_schema("recall");
    let store = PgStore::connect(&url, 2).expect("connect");
    store
        .bind_embedder(&Binding::new(HashEmbedder::MODEL_ID, HashEmbedder::DIM).unwrap())
        .expect("bind");
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let hashed = |u: usize| u.is_multiple_of(2);
    let mut vectors: Vec<HashMap<MemoryId, Vec<f32>>> = vec![HashMap::new(); USERS];
    for (u, owned) in vectors.iter_mut().enumerate() {
        let s = scope(&format!("recall-{u}"));
        let mut batches = Vec::with_capacity(PER_USER);
        for _ in 0..PER_USER {
            let text = rng.words(6);
            let mut b = batch(&s, &text, json!({}));
            if !hashed(u) {
                b.memories[0].vector = rng.direction(HashEmbedder::DIM);
            }
            owned.insert(b.memories[0].id, b.memories[0].vector.clone());
            batches.push(b);
        }
        for chunk in batches.chunks(250) {
            store.write(chunk.to_vec()).expect("write");
        }
    }
    admin()
        .batch_execute(&format!("ANALYZE {schema}.memories"))
        .expect("analyze");

    let (mut found, mut asked) = (0usize, 0usize);
    for (u, owned) in vectors.iter().enumerate() {
        let s = scope(&format!("recall-{u}"));
        for _ in 0..QUERIES {
            let query = if hashed(u) {
                HashEmbedder::vector(&rng.words(4))
            } else {
                rng.direction(HashEmbedder::DIM)
            };
            let mut exact: Vec<f32> = owned.values().map(|v| cosine(v, &query)).collect();
            exact.sort_by(|a, b| b.total_cmp(a));
            let tenth = exact[K - 1];
            let q = CandidateQuery {
                limit: K,
                ..candidates(&s, ReadOptions::default())
            };
            let hits = store.dense_candidates(&q, &query).expect("dense");
            assert_eq!(hits.len(), K, "a filtered scan still returns the limit");
            let keys: Vec<i64> = hits.iter().map(|h| h.key).collect();
            let fetched: HashMap<i64, MemoryId> = store
                .fetch(&q, &keys)
                .expect("fetch")
                .into_iter()
                .map(|(k, m)| (k, m.id))
                .collect();
            for h in &hits {
                let v = &owned[&fetched[&h.key]];
                assert!(
                    (cosine(v, &query) - h.score).abs() < 1e-4,
                    "scores are cosine similarity"
                );
                if h.score >= tenth - 1e-5 {
                    found += 1;
                }
            }
            asked += K;
        }
    }
    // The plan of the store's query shape: the HNSW index must be what answers it.
    let mut c = admin();
    let plan: Vec<String> = c
        .query(
            &format!(
                "EXPLAIN SELECT m.seq, m.embedding <=> $1 FROM {schema}.memories m \
                 WHERE m.user_id = 'recall-1' AND m.state = 'active' \
                 AND (m.expires_at IS NULL OR m.expires_at > 0) AND m.embedding IS NOT NULL \
                 ORDER BY m.embedding <=> $1 LIMIT 10"
            ),
            &[&pgvector::Vector::from(vec![0.125f32; HashEmbedder::DIM])],
        )
        .expect("explain")
        .iter()
        .map(|r| r.get(0))
        .collect();
    let plan = plan.join("\n");
    assert!(plan.contains("memories_embedding_hnsw"), "{plan}");
    let recall = found as f64 / asked as f64;
    println!("HNSW recall@{K} against exact search: {recall:.4} ({found}/{asked})");
    assert!(recall >= 0.95, "recall@{K} {recall:.4} is under 0.95");
}
