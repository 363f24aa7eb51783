//! The lexical statistics and postings of schema v2: exact after every kind of write (compared
//! with a recount from the memories' `tsvector`s), kept by the migration from v1, ranking equal
//! to exact BM25 over the owner's statistics, and the widening that fills a filtered query.

use crate::{admin, fresh_schema};
use mnemo_core::filter::Op;
use mnemo_core::*;
use mnemo_store_postgres::PgStore;
use mnemo_testkit::{batch, candidates, put, scope, HashEmbedder};
use serde_json::json;

fn store(url: &str) -> PgStore {
    let store = PgStore::connect(url, 2).expect("connect");
    store
        .bind_embedder(&Binding::new(HashEmbedder::MODEL_ID, HashEmbedder::DIM).unwrap())
        .expect("bind");
    store
}

fn in_schema(schema: &str) -> postgres::Client {
    let mut c = admin();
    c.batch_execute(&format!("SET search_path TO {schema}, public"))
        .expect("search_path");
    c
}

/// Rows of the maintained tables that a recount from `memories.lexical` does not give, and the
/// other way round (0 when the statistics are exact).
fn mismatches(schema: &str) -> i64 {
    let sql = r#"
        WITH d AS (
            SELECT scope_key, user_id, agent_id, run_id, seq, lexical,
                   (SELECT COALESCE(sum(GREATEST(cardinality(x.positions), 1)), 0)
                    FROM unnest(lexical) x)::bigint AS len
            FROM memories WHERE lexical IS NOT NULL
        ), scopes AS (
            SELECT scope_key, user_id, agent_id, run_id, count(*)::bigint AS docs,
                   sum(len)::bigint AS total_len
            FROM d GROUP BY 1, 2, 3, 4
        ), terms AS (
            SELECT d.scope_key, x.lexeme, count(*)::bigint AS df
            FROM d, unnest(d.lexical) x GROUP BY 1, 2
        ), postings AS (
            SELECT d.scope_key, d.seq, x.lexeme, GREATEST(cardinality(x.positions), 1) AS tf,
                   d.len::int AS dl
            FROM d, unnest(d.lexical) x
        )
        SELECT
          (SELECT count(*) FROM (SELECT * FROM scopes EXCEPT
             SELECT scope_key, user_id, agent_id, run_id, docs, total_len FROM lexical_scopes) a)
        + (SELECT count(*) FROM (SELECT scope_key, user_id, agent_id, run_id, docs, total_len
             FROM lexical_scopes EXCEPT SELECT * FROM scopes) a)
        + (SELECT count(*) FROM (SELECT * FROM terms EXCEPT
             SELECT scope_key, lexeme, df FROM lexical_terms) a)
        + (SELECT count(*) FROM (SELECT scope_key, lexeme, df FROM lexical_terms
             EXCEPT SELECT * FROM terms) a)
        + (SELECT count(*) FROM (SELECT * FROM postings EXCEPT
             SELECT scope_key, seq, lexeme, tf, dl FROM lexical_postings) a)
        + (SELECT count(*) FROM (SELECT scope_key, seq, lexeme, tf, dl FROM lexical_postings
             EXCEPT SELECT * FROM postings) a)
    "#;
    in_schema(schema)
        .query_one(sql, &[])
        .expect("recount")
        .get::<_, i64>(0)
}

fn count(schema: &str, sql: &str) -> i64 {
    in_schema(schema).query_one(sql, &[]).expect("count").get(0)
}

fn patch(text: &str) -> MemoryPatch {
    MemoryPatch {
        text: Some(text.to_string()),
        vector: Some(HashEmbedder::vector(text)),
        ..MemoryPatch::default()
    }
}

#[test]
fn statistics_stay_exact_through_adds_updates_deletes_supersession_and_erase() {
    let (schema, url) = fresh_schema("lexstats");
    let store = store(&url);
    let ctx = WritePlan::default();
    let ana = scope("ana");
    let agent = Scope::from_parts(Some("ana"), Some("helper"), None).expect("scope");
    let a = put(
        &store,
        &ana,
        "Ana hikes in the Alps every summer",
        json!({}),
    );
    let b = put(&store, &ana, "Ana hikes hikes hikes", json!({}));
    let c = put(
        &store,
        &agent,
        "The helper booked a train to the Alps",
        json!({}),
    );
    let d = put(
        &store,
        &scope("bo"),
        "Bo likes jazz and zanzibar",
        json!({}),
    );
    assert!(count(&schema, "SELECT count(*) FROM lexical_postings") > 0);
    assert_eq!(mismatches(&schema), 0, "after adds");

    store
        .update_many(
            &Updates::new(vec![(ana.clone(), a, patch("Ana swims in lakes"))]).unwrap(),
            &ctx,
        )
        .expect("update");
    assert_eq!(mismatches(&schema), 0, "after an update of the text");

    let mut s = batch(&ana, "Ana hikes twice a week", json!({}));
    s.changes.push(Supersession {
        old: b,
        by: Some(s.memories[0].id),
        state: MemoryState::Superseded,
        valid_until: chrono::Utc::now(),
        reason: None,
    });
    store.write(vec![s]).expect("supersede");
    assert_eq!(mismatches(&schema), 0, "after supersession");

    store
        .delete(&agent, c, DeleteMode::Soft, &ctx)
        .expect("soft delete");
    assert_eq!(mismatches(&schema), 0, "after a soft delete");
    assert_eq!(
        count(
            &schema,
            "SELECT count(*) FROM lexical_scopes WHERE agent_id = 'helper'"
        ),
        0,
        "an owner without memories keeps no statistics"
    );
    store
        .delete(&ana, a, DeleteMode::Hard, &ctx)
        .expect("hard delete");
    assert_eq!(mismatches(&schema), 0, "after a hard delete");

    store
        .erase(&EraseMemory::new(&scope("bo"), d, true), &ctx)
        .expect("erase");
    assert_eq!(mismatches(&schema), 0, "after erase");
    assert_eq!(
        count(
            &schema,
            "SELECT (SELECT count(*) FROM lexical_terms WHERE lexeme = 'zanzibar') \
             + (SELECT count(*) FROM lexical_postings WHERE lexeme = 'zanzibar')"
        ),
        0,
        "an erased memory's words are gone from the statistics"
    );

    store.reset().expect("reset");
    assert_eq!(
        count(
            &schema,
            "SELECT (SELECT count(*) FROM lexical_scopes) + (SELECT count(*) FROM lexical_terms) \
             + (SELECT count(*) FROM lexical_postings)"
        ),
        0
    );
}

/// BM25 over the owner's memories, computed from scratch in SQL: `(seq, score)`, best first.
fn exact_bm25(schema: &str, owner: &Scope, query: &str) -> Vec<(i64, f64)> {
    let sql = r#"
        WITH d AS (
            SELECT seq, lexical, (SELECT sum(GREATEST(cardinality(x.positions), 1))
                                  FROM unnest(lexical) x)::float8 AS len
            FROM memories WHERE lexical IS NOT NULL AND scope_key = $1
        ), st AS (
            SELECT count(*)::float8 AS n, GREATEST(avg(len), 1) AS avgdl FROM d
        ), ql AS (
            SELECT DISTINCT lexeme FROM unnest(to_tsvector('english', $2))
        ), tf AS (
            SELECT d.seq, x.lexeme, GREATEST(cardinality(x.positions), 1)::float8 AS tf, d.len
            FROM d, unnest(d.lexical) x WHERE x.lexeme IN (SELECT lexeme FROM ql)
        ), df AS (
            SELECT lexeme, count(*)::float8 AS df FROM tf GROUP BY lexeme
        )
        SELECT seq, sum(ln(1 + (n - df + 0.5) / (df + 0.5)) * tf * 2.2
                        / (tf + 1.2 * (0.25 + 0.75 * len / avgdl)))
        FROM tf JOIN df USING (lexeme) CROSS JOIN st
        GROUP BY seq ORDER BY 2 DESC, seq
    "#;
    in_schema(schema)
        .query(sql, &[&owner.key(), &query])
        .expect("exact bm25")
        .iter()
        .map(|r| (r.get(0), r.get(1)))
        .collect()
}

#[test]
fn ranking_equals_exact_bm25_over_the_owner() {
    let (schema, url) = fresh_schema("lexexact");
    let store = store(&url);
    let s = scope("cy");
    let texts = [
        "Cy plays chess on Sundays with her brother",
        "Chess openings: the Sicilian defence and the French defence",
        "Cy's brother moved to Oslo for a job in shipping",
        "A long note about chess, chess clubs, chess books and chess engines in Oslo",
        "Cy bakes bread",
        "Weekend plans: bread, chess, a walk by the fjord",
        "Shipping containers are stacked in the port of Oslo",
    ];
    for t in texts {
        put(&store, &s, t, json!({}));
    }
    put(&store, &scope("other"), "chess chess chess Oslo", json!({}));
    let q = CandidateQuery {
        limit: 10,
        ..candidates(&s, ReadOptions::default())
    };
    for query in [
        "chess Oslo",
        "brother shipping",
        "bread fjord chess",
        "defence",
    ] {
        let terms: Vec<String> = query.split(' ').map(str::to_string).collect();
        let got = store.lexical_candidates(&q, &terms).expect("lexical");
        let want = exact_bm25(&schema, &s, query);
        assert_eq!(got.len(), want.len(), "{query}: {got:?} vs {want:?}");
        for (g, (seq, score)) in got.iter().zip(&want) {
            assert_eq!(g.key, *seq, "{query}: {got:?} vs {want:?}");
            assert!(
                (f64::from(g.score) - score).abs() < 1e-4 * score.max(1.0),
                "{query}: {} vs {score}",
                g.score
            );
        }
    }
}

#[test]
fn a_filter_that_removes_the_top_postings_widens_the_read() {
    let (_, url) = fresh_schema("lexwiden");
    let store = store(&url);
    let s = scope("di");
    // 300 short memories outrank (shorter documents, higher impact) the five long ones the
    // filter keeps, so the first read's postings hold none of them.
    let mut batches: Vec<WriteBatch> = (0..300)
        .map(|i| batch(&s, &format!("apple {i}"), json!({"keep": false})))
        .collect();
    let long = "apple with a long tail of other words about orchards, cider, autumn and harvest";
    batches.extend((0..5).map(|i| batch(&s, &format!("{long} {i}"), json!({"keep": true}))));
    store.write(batches).expect("write");
    let filter = Filter::Meta {
        key: "keep".into(),
        op: Op::Eq,
        value: json!(true),
    };
    let q = CandidateQuery {
        filter: Some(&filter),
        limit: 10,
        ..candidates(&s, ReadOptions::default())
    };
    let hits = store
        .lexical_candidates(&q, &["apple".to_string()])
        .expect("lexical");
    assert_eq!(hits.len(), 5, "{hits:?}");
    let kept = store.fetch(&q, &hits.iter().map(|h| h.key).collect::<Vec<_>>());
    assert_eq!(kept.expect("fetch").len(), 5);
}

#[test]
fn a_v1_database_gets_its_statistics_on_upgrade() {
    let (schema, url) = fresh_schema("lexupgrade");
    let store = store(&url);
    let s = scope("eli");
    put(&store, &s, "Eli collects stamps from Chile", json!({}));
    let gone = put(&store, &s, "Eli sold the stamps", json!({}));
    put(&store, &scope("fay"), "Fay collects coins", json!({}));
    store
        .delete(&s, gone, DeleteMode::Soft, &WritePlan::default())
        .expect("delete");
    drop(store);
    // Back to schema v1 by hand: v2's triggers, functions and tables gone, the GIN index back.
    in_schema(&schema)
        .batch_execute(
            "DROP TRIGGER memories_lexical_insert ON memories; \
             DROP TRIGGER memories_lexical_update ON memories; \
             DROP TRIGGER memories_lexical_delete ON memories; \
             DROP FUNCTION mnemo_lexical_sync(); \
             DROP FUNCTION mnemo_lexical_apply(TEXT, TEXT, TEXT, TEXT, BIGINT, tsvector, INTEGER); \
             DROP TABLE lexical_scopes, lexical_terms, lexical_postings; \
             CREATE INDEX memories_lexical ON memories USING GIN (lexical); \
             UPDATE mnemo_meta SET value = '1' WHERE key = 'schema_version';",
        )
        .expect("downgrade");
    let store = self::store(&url);
    assert_eq!(
        store.schema_version().expect("version"),
        mnemo_store_postgres::SCHEMA_VERSION
    );
    assert_eq!(mismatches(&schema), 0);
    assert_eq!(
        count(&schema, "SELECT count(*) FROM lexical_scopes"),
        2,
        "both owners counted, the deleted memory not"
    );
    let q = candidates(&s, ReadOptions::default());
    let hits = store
        .lexical_candidates(&q, &["stamps".to_string()])
        .expect("lexical");
    assert_eq!(hits.len(), 1, "{hits:?}");
}
