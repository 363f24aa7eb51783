//! The layout Citus needs of tables distributed by `scope_key` (docs/postgres.md, "Scale-out
//! on Citus"), checked on the migrated schema and on the store's query strings, since no Citus
//! build is reachable here: every unique index of a distributed table carries `scope_key`;
//! every lookup of memories by key (`seq = ANY(…)`) names the query's scope predicate; and no
//! path that a distributed table takes uses a per-node advisory lock.

use std::path::{Path, PathBuf};

/// Tables not distributed by `scope_key`, as docs/postgres.md lays them out: reference tables
/// (copied to every node) and tables distributed by a key of their own.
const NOT_BY_SCOPE: [&str; 4] = ["mnemo_meta", "api_keys", "jobs", "scope_gates"];

/// Tables known not to be laid out for Citus yet (docs/postgres.md, "Not laid out yet"): the
/// core memory blocks, owned by a user, an agent or both and shared between a user's agents,
/// carry no `scope_key`. Listed by name so that any other new table still fails the check.
const NOT_LAID_OUT_YET: [&str; 3] = ["blocks", "block_agents", "block_history"];

/// The one place an advisory lock may stay: schema changes (migrations, binding a model's
/// vector columns), which run once through the coordinator, never on a distributed table's
/// data path.
const DDL_FILES: [&str; 2] = ["schema.rs", "admin.rs"];

#[test]
fn every_unique_index_of_a_distributed_table_carries_its_distribution_column() {
    let (schema, url) = crate::fresh_schema("citus");
    drop(mnemo_store_postgres::PgStore::connect(&url, 1).expect("migrate"));
    let mut admin = crate::admin();
    let tables: Vec<String> = admin
        .query(
            "SELECT table_name::text FROM information_schema.tables \
             WHERE table_schema = $1 AND table_type = 'BASE TABLE'",
            &[&schema],
        )
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    let distributed: Vec<String> = admin
        .query(
            "SELECT table_name::text FROM information_schema.columns \
             WHERE table_schema = $1 AND column_name = 'scope_key'",
            &[&schema],
        )
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    for t in &tables {
        assert!(
            distributed.contains(t)
                || NOT_BY_SCOPE.contains(&t.as_str())
                || NOT_LAID_OUT_YET.contains(&t.as_str()),
            "table {t} has no scope_key and is not laid out as a reference table"
        );
    }
    let mut checked = 0;
    for r in admin
        .query(
            "SELECT tablename::text, indexname::text, indexdef FROM pg_indexes \
             WHERE schemaname = $1 AND indexdef LIKE 'CREATE UNIQUE%'",
            &[&schema],
        )
        .unwrap()
    {
        let (table, index, def): (String, String, String) = (r.get(0), r.get(1), r.get(2));
        if !distributed.contains(&table) {
            continue;
        }
        let columns = def.rsplit_once(" USING ").map_or(def.as_str(), |(_, c)| c);
        assert!(
            columns.contains("scope_key"),
            "unique index {index} of the distributed table {table} lacks scope_key: {def}"
        );
        checked += 1;
    }
    // Not vacuous: every distributed table's primary key is a unique index.
    assert!(
        checked >= distributed.len(),
        "{checked} unique indexes checked"
    );
    admin
        .batch_execute(&format!("DROP SCHEMA {schema} CASCADE"))
        .unwrap();
}

#[test]
fn lookups_by_key_name_their_scope_and_no_data_path_takes_an_advisory_lock() {
    let mut lookups = 0;
    let mut advisory = 0;
    for file in sources(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src")) {
        let text = std::fs::read_to_string(&file).unwrap();
        let name = file.file_name().unwrap().to_string_lossy().to_string();
        let code: String = text
            .lines()
            .filter(|l| !l.trim_start().starts_with("//"))
            .collect::<Vec<_>>()
            .join("\n");
        for (at, _) in code.match_indices("seq = ANY(") {
            // The function the lookup is built in, up to the lookup.
            let body = &code[code[..at].rfind("fn ").unwrap_or(0)..at];
            assert!(
                [
                    "predicate::scope(",
                    "predicate::candidate(",
                    "candidate_pred_into(",
                    "scope_key = "
                ]
                .iter()
                .any(|p| body.contains(p)),
                "{name}: a lookup by key without the scope predicate: {}",
                &code[at..(at + 60).min(code.len())]
            );
            lookups += 1;
        }
        for _ in code.matches("pg_advisory") {
            assert!(
                DDL_FILES.contains(&name.as_str()),
                "{name} takes an advisory lock (per node on Citus): use a row lock"
            );
            advisory += 1;
        }
    }
    // Not vacuous: the store has lookups by key, and schema changes keep their lock.
    assert!(lookups >= 3, "{lookups} lookups found");
    assert!(advisory >= 1, "{advisory} advisory locks found");
}

fn sources(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            out.extend(sources(&path));
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
    out
}
