//! What an erase leaves in PostgreSQL's files, and the operator's way to clear them: once the
//! erase returns no query finds the text; after `VACUUM (FULL)` of the store's tables and a
//! `CHECKPOINT`, no relation file of the store's schema (tables, their TOAST tables and
//! indexes) holds it either. (WAL segments keep it until the server recycles them; README.)

use mnemo_core::*;
use mnemo_store_postgres::PgStore;
use mnemo_testkit::HashEmbedder;

#[test]
fn after_an_erase_vacuum_full_and_a_checkpoint_clear_the_relation_files() {
    let (schema, url) = super::fresh_schema("erasefiles");
    let store = PgStore::connect(&url, 2).expect("connect");
    store
        .bind_embedder(&Binding::new(HashEmbedder::MODEL_ID, HashEmbedder::DIM).unwrap())
        .expect("bind");
    let s = Scope::user("vera").unwrap();
    let secret = "Vera's PIN is Qz4417xv";
    let mut m = Message::new(&s, Role::User, None, secret.into(), chrono::Utc::now());
    m.session_id = Some("s1".into());
    let n = NewMemory::raw(&m, &s, Metadata::new(), None, HashEmbedder::vector(secret));
    store
        .write(vec![WriteBatch::new(s.clone(), vec![m], vec![n])])
        .expect("write");
    let r = store
        .erase_log(
            &EraseLog::new(&s, EraseTarget::Session("s1")).unwrap(),
            &WritePlan::default(),
        )
        .expect("erase");
    assert_eq!((r.memories_erased, r.messages_erased), (1, 1));

    let mut admin = super::admin();
    let data: String = admin
        .query_one("SHOW data_directory", &[])
        .expect("data directory")
        .get(0);
    let tables: Vec<String> = admin
        .query(
            "SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace \
             WHERE n.nspname = $1 AND c.relkind = 'r'",
            &[&schema],
        )
        .expect("tables")
        .iter()
        .map(|r| r.get(0))
        .collect();
    assert!(tables.iter().any(|t| t == "messages"), "{tables:?}");
    // VACUUM keeps a dead row version while a transaction older than its deletion is open
    // anywhere in the database (other tests' and other sessions' on a shared server; a store's
    // turns and erase gates are such transactions while held): the operator's pass is run
    // again until none is left, as an operator would after the concurrent work ended.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    let held = loop {
        for t in &tables {
            admin
                .batch_execute(&format!("VACUUM (FULL) {schema}.{t}"))
                .expect("vacuum");
        }
        admin.batch_execute("CHECKPOINT").expect("checkpoint");
        let (held, read) = holding(&mut admin, &schema, &data);
        assert!(read >= tables.len(), "the relation files were read: {read}");
        if held.is_empty() || std::time::Instant::now() > deadline {
            break held;
        }
        std::thread::sleep(std::time::Duration::from_millis(500));
    };
    assert!(held.is_empty(), "{held:?} hold the erased text");
}

/// The relation files of `schema` that hold the erased text, and how many files were read.
fn holding(admin: &mut postgres::Client, schema: &str, data: &str) -> (Vec<String>, usize) {
    // Every relation of the schema: tables, indexes, and the TOAST tables and their indexes.
    let files: Vec<String> = admin
        .query(
            "SELECT pg_relation_filepath(c.oid) FROM pg_class c \
             JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = $1 \
             UNION SELECT pg_relation_filepath(c.reltoastrelid) FROM pg_class c \
             JOIN pg_namespace n ON n.oid = c.relnamespace \
             WHERE n.nspname = $1 AND c.reltoastrelid <> 0 \
             UNION SELECT pg_relation_filepath(i.indexrelid) FROM pg_class c \
             JOIN pg_namespace n ON n.oid = c.relnamespace \
             JOIN pg_index i ON i.indrelid = c.reltoastrelid WHERE n.nspname = $1",
            &[&schema],
        )
        .expect("files")
        .iter()
        .filter_map(|r| r.get::<_, Option<String>>(0))
        .collect();
    let mut read = 0;
    let mut held = Vec::new();
    for f in &files {
        let path = std::path::Path::new(data).join(f);
        if let Ok(bytes) = std::fs::read(&path) {
            read += 1;
            if bytes.windows(8).any(|w| w == b"Qz4417xv") {
                held.push(f.clone());
            }
        }
    }
    (held, read)
}
