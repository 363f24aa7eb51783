//! What the erase of a whole scope leaves under the scope's ids in PostgreSQL's tables: only
//! the records the erasure contract keeps (the erased memories' and messages' ids, times and
//! `ERASE` events, each filed under its owner, and stored add results without the erased text)
//! — no write-lock row, gate row, entity, block or lexical statistic naming the scope.

use mnemo_core::*;
use mnemo_store_postgres::PgStore;
use mnemo_testkit::{
    put, scope_erase_fixture, HashEmbedder, SCOPE_ERASE_ERASED, SCOPE_ERASE_KEPT,
    SCOPE_ERASE_KEPT_TABLES,
};
use serde_json::json;

#[test]
fn a_scope_erase_leaves_its_ids_only_in_the_records_it_keeps() {
    let (schema, url) = super::fresh_schema("erase_rows");
    let store = PgStore::connect(&url, 4).expect("connect");
    store
        .bind_embedder(&Binding::new(HashEmbedder::MODEL_ID, HashEmbedder::DIM).unwrap())
        .expect("bind");
    let vera = scope_erase_fixture(&store);
    // As the facade does around a scope erase (`u=…` names the part).
    drop(
        store
            .erase_gate(&[format!("u={SCOPE_ERASE_ERASED}")], true)
            .unwrap(),
    );

    let mut admin = super::admin();
    let before = holding(&mut admin, &schema, SCOPE_ERASE_ERASED);
    for t in ["scope_locks", "entities", "blocks", "memories"] {
        assert!(before.iter().any(|h| h == t), "{t} not in {before:?}");
    }
    store
        .erase_log(
            &EraseLog::new(&vera, EraseTarget::Scope).unwrap(),
            &WritePlan::default(),
        )
        .expect("erase");

    let after = holding(&mut admin, &schema, SCOPE_ERASE_ERASED);
    assert!(after.iter().any(|t| t == "memories"), "{after:?}");
    let left: Vec<&String> = after
        .iter()
        .filter(|t| !SCOPE_ERASE_KEPT_TABLES.contains(&t.as_str()))
        .collect();
    assert!(left.is_empty(), "{left:?} still name the erased scope");
    // Another scope keeps its lock row, and a new add of the erased one makes its row again.
    assert!(holding(&mut admin, &schema, SCOPE_ERASE_KEPT).contains(&"scope_locks".to_string()));
    put(&store, &vera, "Vera is back", json!({}));
    assert!(holding(&mut admin, &schema, SCOPE_ERASE_ERASED).contains(&"scope_locks".to_string()));
}

/// The tables of `schema` with a row whose text form holds `needle`.
fn holding(admin: &mut postgres::Client, schema: &str, needle: &str) -> Vec<String> {
    let tables: Vec<String> = admin
        .query(
            "SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace \
             WHERE n.nspname = $1 AND c.relkind = 'r' ORDER BY c.relname",
            &[&schema],
        )
        .expect("tables")
        .iter()
        .map(|r| r.get(0))
        .collect();
    assert!(tables.len() > SCOPE_ERASE_KEPT_TABLES.len(), "{tables:?}");
    tables
        .into_iter()
        .filter(|t| {
            let sql = format!(
                "SELECT EXISTS (SELECT 1 FROM {schema}.{t} x WHERE strpos(x::text, $1) > 0)"
            );
            admin.query_one(&sql, &[&needle]).expect("scan").get(0)
        })
        .collect()
}
