//! What the erase of a whole scope leaves under the scope's ids in the SQLite file's tables:
//! only the records the erasure contract keeps (the erased memories' and messages' ids, times
//! and `ERASE` events, each filed under its owner, and stored add results without the erased
//! text) — no entity, block, lexical statistic or other per-scope row naming the scope. (The
//! PostgreSQL store checks the same in its `erase_rows.rs`, where it also covers its lock rows;
//! this store has none: its writers take the file's one write lock.)

use mnemo_core::*;
use mnemo_testkit::{
    scope_erase_fixture, SCOPE_ERASE_ERASED, SCOPE_ERASE_KEPT, SCOPE_ERASE_KEPT_TABLES,
};
use rusqlite::types::ValueRef;

#[test]
fn a_scope_erase_leaves_its_ids_only_in_the_records_it_keeps() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("mnemo.db");
    let store = crate::open(&path);
    let vera = scope_erase_fixture(store.as_ref());

    let before = holding(&path, SCOPE_ERASE_ERASED);
    for t in ["entities", "blocks", "block_history", "memories"] {
        assert!(before.iter().any(|h| h == t), "{t} not in {before:?}");
    }
    store
        .erase_log(
            &EraseLog::new(&vera, EraseTarget::Scope).unwrap(),
            &WritePlan::default(),
        )
        .expect("erase");
    let after = holding(&path, SCOPE_ERASE_ERASED);
    assert!(after.iter().any(|t| t == "memories"), "{after:?}");
    let left: Vec<&String> = after
        .iter()
        .filter(|t| !SCOPE_ERASE_KEPT_TABLES.contains(&t.as_str()))
        .collect();
    assert!(left.is_empty(), "{left:?} still name the erased scope");
    assert!(holding(&path, SCOPE_ERASE_KEPT).contains(&"memories".to_string()));
}

/// The tables of the file (virtual tables through their shadow tables) with a row that holds
/// `needle` in any column.
fn holding(path: &std::path::Path, needle: &str) -> Vec<String> {
    let c = rusqlite::Connection::open_with_flags(path, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
        .expect("open");
    let tables: Vec<String> = c
        .prepare(
            "SELECT name FROM sqlite_master WHERE type = 'table' \
             AND sql NOT LIKE 'CREATE VIRTUAL%' ORDER BY name",
        )
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .collect::<rusqlite::Result<_>>()
        .unwrap();
    assert!(tables.len() > SCOPE_ERASE_KEPT_TABLES.len(), "{tables:?}");
    let has = |bytes: &[u8]| bytes.windows(needle.len()).any(|w| w == needle.as_bytes());
    tables
        .into_iter()
        .filter(|t| {
            let mut q = c.prepare(&format!("SELECT * FROM \"{t}\"")).unwrap();
            let n = q.column_count();
            let mut rows = q.query([]).unwrap();
            while let Some(r) = rows.next().unwrap() {
                for i in 0..n {
                    let hit = match r.get_ref(i).unwrap() {
                        ValueRef::Text(b) | ValueRef::Blob(b) => has(b),
                        _ => false,
                    };
                    if hit {
                        return true;
                    }
                }
            }
            false
        })
        .collect()
}
