//! PostgreSQL store tests, on a real PostgreSQL with pgvector on 127.0.0.1.
//!
//! One server per test run: `scripts/test.sh` starts it and passes its URL in
//! `MNEMO_TEST_PG_URL`; without that variable the first test starts one for this binary
//! (`mnemo_testkit::engines::pg_url`, the one place that starts the tests' PostgreSQL). Each
//! test works in its own schema of that one database. If PostgreSQL cannot start, every test
//! fails with the reason.

mod citus;
mod cpu_check;

/// The server's admin URL (panics with the reason when there is none).
fn server() -> &'static str {
    mnemo_testkit::engines::pg_url()
}

/// An admin connection to the test database.
fn admin() -> postgres::Client {
    postgres::Client::connect(server(), postgres::NoTls).expect("admin connection")
}

/// A new, empty schema of the test database and a store URL that works in it.
fn fresh_schema(tag: &str) -> (String, String) {
    static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let schema = format!("t_{tag}_{}_{n}", std::process::id());
    admin()
        .batch_execute(&format!("CREATE SCHEMA {schema}"))
        .expect("create schema");
    let url = format!("{}?options=-c%20search_path%3D{schema},public", server());
    (schema, url)
}

mod erase_files;
mod erase_rows;
mod groundwork;
mod lexical;
mod read;
mod recall;
mod search;
mod tiers;
mod timeouts;
mod transfer;
mod turn;
mod write;

mod contract {
    //! The whole store contract suite, on PostgreSQL: each case in a fresh schema.

    use mnemo_core::Admin;
    use mnemo_core::Binding;
    use mnemo_core::Store;
    use mnemo_store_postgres::PgStore;
    use mnemo_testkit::{store_contract_tests, Harness, HashEmbedder};
    use std::cell::RefCell;
    use std::sync::Arc;

    thread_local! {
        /// The URL of the last store this test thread made (each test runs on its own thread).
        static LAST: RefCell<Option<String>> = const { RefCell::new(None) };
    }

    fn open(url: &str) -> Arc<dyn Store> {
        let store = PgStore::connect(url, 4).expect("connect to the test schema");
        store
            .bind_embedder(&Binding::new(HashEmbedder::MODEL_ID, HashEmbedder::DIM).unwrap())
            .expect("bind");
        Arc::new(store)
    }

    pub(crate) struct PgHarness;

    impl Harness for PgHarness {
        fn fresh(&self) -> Arc<dyn Store> {
            let (_schema, url) = super::fresh_schema("contract");
            LAST.with(|l| *l.borrow_mut() = Some(url.clone()));
            open(&url)
        }

        fn reopen(&self, store: Arc<dyn Store>) -> Arc<dyn Store> {
            let url = LAST.with(|l| l.borrow().clone().expect("store url"));
            assert_eq!(
                Arc::strong_count(&store),
                1,
                "reopen needs the only reference"
            );
            drop(store);
            open(&url)
        }
    }

    store_contract_tests!(PgHarness);
}
