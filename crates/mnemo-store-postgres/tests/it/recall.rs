//! Binding the embedder (the recorded model, the typed vector columns, the HNSW index) and the
//! recall of HNSW dense candidates against exact search.

use crate::{admin, fresh_schema};
use mnemo_core::{ErrorKind, Store};
use mnemo_store_postgres::PgStore;
use mnemo_testkit::HashEmbedder;

#[test]
fn bind_records_the_model_and_types_the_columns_once() {
    let (schema, url) = fresh_schema("bind");
    let store = PgStore::connect(&url, 2).expect("connect");
    store
        .bind_embedder(HashEmbedder::MODEL_ID, HashEmbedder::DIM)
        .expect("bind");
    // Binding again (every connect does) is fine, a new revision of the same model too.
    store
        .bind_embedder(HashEmbedder::MODEL_ID, HashEmbedder::DIM)
        .expect("bind again");
    let other = store
        .bind_embedder("other-model/x", HashEmbedder::DIM + 1)
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
        index.contains("hnsw") && index.contains("vector_cosine_ops"),
        "{index}"
    );
}
