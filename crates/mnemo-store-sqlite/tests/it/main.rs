//! The shared store contract, run against the embedded SQLite store, plus SQLite-specific checks.

use mnemo_core::Admin;
use mnemo_core::Binding;
mod erase_rows;
mod fork;
mod limits;
mod sqlite;

use mnemo_core::Store;
use mnemo_store_sqlite::SqliteStore;
use mnemo_testkit::{store_contract_tests, Harness, HashEmbedder};
use std::path::PathBuf;
use std::sync::Arc;

struct SqliteHarness;

thread_local! {
    static DIRS: std::cell::RefCell<Vec<tempfile::TempDir>> = const { std::cell::RefCell::new(Vec::new()) };
}

thread_local! {
    static LAST: std::cell::RefCell<Option<PathBuf>> = const { std::cell::RefCell::new(None) };
}

pub fn open(path: &std::path::Path) -> Arc<dyn Store> {
    let s = SqliteStore::open(path).expect("open store");
    s.bind_embedder(&Binding::new(HashEmbedder::MODEL_ID, HashEmbedder::DIM).unwrap())
        .expect("bind");
    Arc::new(s)
}

impl Harness for SqliteHarness {
    fn fresh(&self) -> Arc<dyn Store> {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("mnemo.db");
        DIRS.with(|d| d.borrow_mut().push(dir));
        LAST.with(|p| *p.borrow_mut() = Some(path.clone()));
        open(&path)
    }

    fn reopen(&self, store: Arc<dyn Store>) -> Arc<dyn Store> {
        // Each test runs on its own thread: the last store it made is the one being reopened.
        let path: PathBuf = LAST.with(|p| p.borrow().clone().expect("store path"));
        assert_eq!(
            Arc::strong_count(&store),
            1,
            "reopen needs the only reference"
        );
        drop(store);
        open(&path)
    }
}

store_contract_tests!(SqliteHarness);
