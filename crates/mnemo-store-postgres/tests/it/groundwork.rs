//! Start-up: migration, idempotent reconnects, concurrent starts, and the typed errors for a
//! bad URL, an unreachable server, a database without pgvector and a newer schema.

use crate::{admin, fresh_schema, server};
use mnemo_core::ErrorKind;
use mnemo_store_postgres::{PgStore, SCHEMA_VERSION};

const TABLES: &[&str] = &[
    "api_keys",
    "block_agents",
    "block_history",
    "blocks",
    "entities",
    "entity_memories",
    "history",
    "idempotency",
    "jobs",
    "lexical_postings",
    "lexical_scopes",
    "lexical_terms",
    "links",
    "memories",
    "memory_sources",
    "messages",
    "mnemo_meta",
    "pages",
    "relation_sources",
    "relations",
    "scope_gates",
    "scope_locks",
    "segments",
];

#[test]
fn connect_migrates_an_empty_database_once() {
    let (_, url) = fresh_schema("migrate");
    let store = PgStore::connect(&url, 2).expect("connect");
    assert_eq!(store.schema_version().expect("version"), SCHEMA_VERSION);
    assert_eq!(store.tables().expect("tables"), TABLES);
    drop(store);
    // A second start finds the schema current and changes nothing.
    let again = PgStore::connect(&url, 1).expect("reconnect");
    assert_eq!(again.schema_version().expect("version"), SCHEMA_VERSION);
    assert_eq!(again.tables().expect("tables"), TABLES);
}

#[test]
fn servers_starting_together_migrate_once() {
    let (_, url) = fresh_schema("together");
    let handles: Vec<_> = (0..4)
        .map(|_| {
            let url = url.clone();
            std::thread::spawn(move || PgStore::connect(&url, 1).map(|s| s.schema_version()))
        })
        .collect();
    for h in handles {
        let version = h
            .join()
            .expect("thread")
            .expect("connect")
            .expect("version");
        assert_eq!(version, SCHEMA_VERSION);
    }
}

#[test]
fn a_newer_schema_is_refused_and_left_alone() {
    let (schema, url) = fresh_schema("newer");
    PgStore::connect(&url, 1).expect("connect");
    admin()
        .batch_execute(&format!(
            "UPDATE {schema}.mnemo_meta SET value = '999' WHERE key = 'schema_version'"
        ))
        .expect("bump version");
    let err = PgStore::connect(&url, 1).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Conflict, "{err}");
    assert!(err.to_string().contains("upgrade mnemo"), "{err}");
    let v: String = admin()
        .query_one(
            &format!("SELECT value FROM {schema}.mnemo_meta WHERE key = 'schema_version'"),
            &[],
        )
        .expect("version row")
        .get(0);
    assert_eq!(v, "999");
}

#[test]
fn malformed_urls_are_invalid_input_naming_the_url() {
    for bad in [
        "mysql://root@localhost/db",
        "",
        "postgres://u@h:notaport/db",
    ] {
        let err = PgStore::connect(bad, 1).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidInput, "{bad:?}: {err}");
        assert!(err.to_string().contains("store_url"), "{err}");
    }
    let err = PgStore::connect(server(), 0).unwrap_err();
    assert!(err.to_string().contains("pool_size"), "{err}");
}

#[test]
fn an_unreachable_server_is_unavailable() {
    // A port nothing listens on: bound, then released.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .expect("bind")
        .local_addr()
        .expect("addr")
        .port();
    let err =
        PgStore::connect(&format!("postgres://postgres@127.0.0.1:{port}/mnemo"), 1).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Unavailable, "{err}");
    assert!(err.kind().is_retryable());
}

#[test]
fn a_database_without_pgvector_names_the_fix_and_migrates_nothing() {
    let n = std::process::id();
    let (db, role) = (format!("novec_{n}"), format!("limited_{n}"));
    let mut a = admin();
    for sql in [
        format!("CREATE DATABASE {db}"),
        format!("CREATE ROLE {role} LOGIN"),
        format!("GRANT ALL ON DATABASE {db} TO {role}"),
    ] {
        a.batch_execute(&sql).expect("database without pgvector");
    }
    let base = server().rsplit_once('/').expect("url has a database").0;
    let url = base.replacen("postgres@", &format!("{role}@"), 1) + "/" + &db;
    let err = PgStore::connect(&url, 1).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Conflict, "{err}");
    assert!(err.to_string().contains("CREATE EXTENSION vector"), "{err}");
    let mut c = postgres::Client::connect(&url, postgres::NoTls).expect("limited connection");
    let tables: i64 = c
        .query_one(
            "SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = 'public'",
            &[],
        )
        .expect("count")
        .get(0);
    assert_eq!(tables, 0, "nothing was created");
}

/// A kept schema (a bench store built once and reopened): created only when asked and absent,
/// reopened only when present, never dropped; a name that is not a plain identifier is refused.
#[test]
fn kept_schemas_are_created_once_reopened_and_never_dropped() {
    use mnemo_store_postgres::ScratchSchema;
    let name = format!("t_kept_{}", std::process::id());
    let exists = |name: &str| {
        admin()
            .query_opt("SELECT 1 FROM pg_namespace WHERE nspname = $1", &[&name])
            .expect("lookup")
            .is_some()
    };
    let missing = ScratchSchema::kept(server(), &name, false).unwrap_err();
    assert_eq!(missing.kind(), ErrorKind::InvalidInput, "{missing}");
    let made = ScratchSchema::kept(server(), &name, true).expect("create");
    assert_eq!(made.name(), name);
    PgStore::connect(&made.url(), 1).expect("a store in it");
    drop(made);
    assert!(exists(&name), "a kept schema outlives its value");
    let again = ScratchSchema::kept(server(), &name, true).unwrap_err();
    assert_eq!(again.kind(), ErrorKind::InvalidInput, "{again}");
    let reopened = ScratchSchema::kept(server(), &name, false).expect("reopen");
    assert_eq!(
        PgStore::connect(&reopened.url(), 1)
            .expect("reopened store")
            .schema_version()
            .expect("version"),
        SCHEMA_VERSION
    );
    for bad in ["", "Upper", "1abc", "a;drop", "a-b"] {
        let e = ScratchSchema::kept(server(), bad, true).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidInput, "{bad}: {e}");
    }
    admin()
        .batch_execute(&format!("DROP SCHEMA {name} CASCADE"))
        .expect("clean up");
}
