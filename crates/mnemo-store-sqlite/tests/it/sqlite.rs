//! Checks specific to the embedded store: the derived vector index is a cache that is caught up
//! or rebuilt from SQLite, and the schema version gate.

use crate::open;
use mnemo_core::*;
use mnemo_testkit::*;
use serde_json::json;

fn sidecar(db: &std::path::Path) -> std::path::PathBuf {
    let mut s = db.as_os_str().to_owned();
    s.push(".hnsw.json");
    s.into()
}

#[test]
fn vector_index_catches_up_after_a_crash_and_rebuilds_when_its_file_is_bad() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("mnemo.db");
    let s = scope("quinn");
    let store = open(&path);
    let first = put(store.as_ref(), &s, "quinn grows tomatoes", json!({}));
    drop(store); // saves the graph at this generation
    assert!(sidecar(&path).exists());
    let store = open(&path);
    let second = put(store.as_ref(), &s, "quinn repairs bicycles", json!({}));
    store
        .delete(&s, first, DeleteMode::Soft, &WritePlan::default())
        .unwrap();
    // Simulate a crash: the saved graph is now older than the database.
    std::mem::forget(store);
    let store = open(&path);
    let report = store.integrity().unwrap();
    assert!(report.is_consistent(), "{report:?}");
    assert_eq!(report.ann_entries, 1);
    assert_eq!(
        search(store.as_ref(), &s, "bicycles", ReadOptions::default())[0]
            .memory
            .id,
        second
    );
    drop(store);
    // A corrupt graph file is rebuilt from SQLite rather than trusted.
    let mut graph = path.as_os_str().to_owned();
    graph.push(".hnsw");
    std::fs::write(std::path::PathBuf::from(graph), b"not an index").unwrap();
    let store = open(&path);
    assert!(store.integrity().unwrap().is_consistent());
    assert_eq!(
        search(store.as_ref(), &s, "bicycles", ReadOptions::default())[0]
            .memory
            .id,
        second
    );
}

/// A graph saved by a build that kept other vectors in it (f32: its metadata names no scalar
/// kind; f16) is not loaded into today's 8-bit graph: the store rebuilds it from SQLite, finds
/// what it held, and saves it again with its kind.
#[test]
fn a_graph_saved_with_another_scalar_kind_is_rebuilt() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("mnemo.db");
    let s = scope("ursula");
    let store = open(&path);
    let id = put(store.as_ref(), &s, "ursula keeps bees", json!({}));
    drop(store);
    let read_meta = || -> serde_json::Value {
        serde_json::from_str(&std::fs::read_to_string(sidecar(&path)).unwrap()).unwrap()
    };
    for old in [None, Some("f16")] {
        let mut meta = read_meta();
        assert_eq!(meta["scalar"], "i8");
        match old {
            None => meta.as_object_mut().unwrap().remove("scalar"),
            Some(kind) => meta
                .as_object_mut()
                .unwrap()
                .insert("scalar".into(), kind.into()),
        };
        std::fs::write(sidecar(&path), meta.to_string()).unwrap();
        assert!(!mnemo_store_sqlite::testing::saved_index_loads(&path).unwrap());
        let store = open(&path);
        let report = store.integrity().unwrap();
        assert!(report.is_consistent(), "{report:?}");
        assert_eq!(report.ann_entries, 1);
        let hits = search(store.as_ref(), &s, "bees", ReadOptions::default());
        assert_eq!(hits[0].memory.id, id);
        assert!(hits[0].scores.dense > 0.0, "the rebuilt graph finds it");
        drop(store);
        assert_eq!(read_meta()["scalar"], "i8", "the rebuilt graph was saved");
        assert!(mnemo_store_sqlite::testing::saved_index_loads(&path).unwrap());
    }
}

#[test]
fn a_second_handle_sees_the_first_handles_writes() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("mnemo.db");
    let s = scope("rita");
    let a = open(&path);
    let b = open(&path);
    let id = put(a.as_ref(), &s, "rita speaks Finnish", json!({}));
    let hits = search(b.as_ref(), &s, "Finnish", ReadOptions::default());
    assert_eq!(hits[0].memory.id, id);
    assert!(
        hits[0].scores.dense > 0.0,
        "the other handle's vector index caught up"
    );
}

#[test]
fn a_damaged_file_is_corrupt_not_internal() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("mnemo.db");
    std::fs::write(&path, b"not a database, only text ".repeat(200)).unwrap();
    let Err(err) = mnemo_store_sqlite::SqliteStore::open(&path) else {
        panic!("a damaged file is refused");
    };
    assert_eq!(err.kind(), ErrorKind::Corrupt, "{err}");
    assert!(err.to_string().contains("damaged"), "{err}");
}

#[test]
fn a_newer_schema_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("mnemo.db");
    drop(open(&path));
    mnemo_store_sqlite::testing::set_user_version(&path, mnemo_store_sqlite::SCHEMA_VERSION + 1)
        .unwrap();
    let err = mnemo_store_sqlite::SqliteStore::open(&path).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Conflict);
    assert!(err.to_string().contains("newer"), "{err}");
}

#[test]
fn large_scope_uses_the_graph_and_small_scopes_are_exact() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(&dir.path().join("mnemo.db"));
    let big = scope("big");
    let mut batches = Vec::new();
    for i in 0..2500 {
        batches.push(batch(
            &big,
            &format!("item {i} word{} word{}", i % 37, i % 11),
            json!({}),
        ));
    }
    store.write(batches).unwrap();
    let small = scope("small");
    let target = put(store.as_ref(), &small, "word5 word3 special", json!({}));
    let hits = search(
        store.as_ref(),
        &small,
        "word5 word3",
        ReadOptions::default(),
    );
    assert_eq!(hits.len(), 1);
    assert_eq!(hits[0].memory.id, target);
    let hits = search(
        store.as_ref(),
        &big,
        "item 42 word5 word9",
        ReadOptions::default(),
    );
    assert_eq!(hits.len(), 10);
    assert!(hits
        .iter()
        .all(|h| h.memory.user_id.as_deref() == Some("big")));
    assert!(hits.iter().any(|h| h.memory.text.starts_with("item 42 ")));
    // The graph keeps 8-bit vectors, which only choose candidates: every dense score is the
    // exact cosine (half-precision copies; 8-bit distances are off by several thousandths).
    let query = HashEmbedder::vector("item 42 word5 word9");
    for h in &hits {
        let exact = mnemo_core::embed::dot(&query, &HashEmbedder::vector(&h.memory.text));
        assert!(
            (h.scores.dense - exact).abs() < 1e-3,
            "{}: dense {} against exact {exact}",
            h.memory.text,
            h.scores.dense
        );
    }
}

/// A saved graph whose exact vectors are missing or cut short is not trusted: the store
/// rebuilds the index from SQLite and scores exactly again.
#[test]
fn a_saved_graph_without_its_exact_vectors_is_rebuilt() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("mnemo.db");
    let s = scope("vera");
    let store = open(&path);
    let id = put(store.as_ref(), &s, "vera restores clocks", json!({}));
    put(store.as_ref(), &s, "vera walks the dog", json!({}));
    drop(store);
    let mut exact = path.as_os_str().to_owned();
    exact.push(".hnsw.f16");
    let exact = std::path::PathBuf::from(exact);
    let full = std::fs::read(&exact).unwrap();
    assert!(mnemo_store_sqlite::testing::saved_index_loads(&path).unwrap());
    for damage in [
        None,
        Some(full.len() - 2 * HashEmbedder::DIM),
        Some(full.len() - 1),
    ] {
        match damage {
            None => std::fs::remove_file(&exact).unwrap(),
            Some(len) => std::fs::write(&exact, &full[..len]).unwrap(),
        }
        assert!(
            !mnemo_store_sqlite::testing::saved_index_loads(&path).unwrap(),
            "loaded with {damage:?} bytes of exact vectors"
        );
        let store = open(&path);
        let report = store.integrity().unwrap();
        assert!(report.is_consistent(), "{report:?}");
        let hits = search(
            store.as_ref(),
            &s,
            "vera restores clocks",
            ReadOptions::default(),
        );
        assert_eq!(hits[0].memory.id, id);
        assert!(
            (hits[0].scores.dense - 1.0).abs() < 1e-3,
            "{}",
            hits[0].scores.dense
        );
        drop(store);
        assert!(mnemo_store_sqlite::testing::saved_index_loads(&path).unwrap());
    }
}

#[test]
fn a_saved_index_is_reused_on_open_without_a_rebuild() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("mnemo.db");
    let store = open(&path);
    let s = scope("rae");
    put(store.as_ref(), &s, "rae keeps a logbook", json!({}));
    store
        .write(vec![batch(&s, "rae sails on sundays", json!({"k": 1}))])
        .unwrap();
    drop(store); // saves the graph
    assert!(mnemo_store_sqlite::testing::saved_index_loads(&path).unwrap());
    // And a write after reopening is caught up from the change log on the next load.
    let store = open(&path);
    put(store.as_ref(), &s, "rae bought a compass", json!({}));
    std::mem::forget(store);
    assert!(mnemo_store_sqlite::testing::saved_index_loads(&path).unwrap());
}

#[test]
fn many_concurrent_graph_searches_all_succeed() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(&dir.path().join("mnemo.db"));
    let big = scope("crowd");
    let batches = (0..2500)
        .map(|i| {
            batch(
                &big,
                &format!("note {i} topic{} area{}", i % 29, i % 13),
                json!({}),
            )
        })
        .collect();
    store.write(batches).unwrap();
    // More searches at once than the machine has cores (the graph keeps a context per search).
    let threads: Vec<_> = (0..48)
        .map(|t| {
            let store = store.clone();
            let big = big.clone();
            std::thread::spawn(move || {
                for q in 0..10 {
                    let hits = search(
                        store.as_ref(),
                        &big,
                        &format!("topic{} area{}", (t + q) % 29, q % 13),
                        ReadOptions::default(),
                    );
                    assert_eq!(hits.len(), 10);
                }
            })
        })
        .collect();
    for t in threads {
        t.join().expect("every search succeeds");
    }
}

/// Every file of the store (the database and its write-ahead log) as one byte string.
fn file_bytes(db: &std::path::Path) -> Vec<u8> {
    let mut out = Vec::new();
    for suffix in ["", "-wal"] {
        let p = std::path::PathBuf::from(format!("{}{suffix}", db.display()));
        if let Ok(b) = std::fs::read(&p) {
            out.extend(b);
        }
    }
    out
}

fn holds(hay: &[u8], needle: &str) -> bool {
    has(hay, needle.as_bytes())
}

fn has(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}

/// Erasure reaches the bytes: after `erase` returns (its `wal_checkpoint(TRUNCATE)` included),
/// neither the database file nor its WAL holds the erased text, a word of it as the lexical
/// index stores it (lower case), or its metadata — while they did before, and while a memory
/// that was only soft-deleted keeps its text for audit.
#[test]
fn an_erased_text_is_in_no_byte_of_the_store_files() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("mnemo.db");
    let store = crate::open(&path);
    let s = scope("quinn");
    let secret = "Quinn keeps the spare key under the Zyxwvut stone";
    for i in 0..50 {
        put(
            store.as_ref(),
            &s,
            &format!("filler note number {i} about the garden"),
            json!({}),
        );
    }
    let id = put(store.as_ref(), &s, secret, json!({"hint": "Plover-42"}));
    store
        .update(
            &s,
            id,
            MemoryPatch {
                text: Some(format!("{secret} (moved)")),
                vector: Some(HashEmbedder::vector(secret)),
                ..MemoryPatch::default()
            },
            &WritePlan::default(),
        )
        .unwrap();
    let audit = put(
        store.as_ref(),
        &s,
        "Quinn's old alarm code was Vtsrqp",
        json!({}),
    );
    store
        .delete(&s, audit, DeleteMode::Soft, &WritePlan::default())
        .unwrap();
    let before = file_bytes(&path);
    for needle in ["Zyxwvut stone", "zyxwvut", "Plover-42", "Vtsrqp"] {
        assert!(
            holds(&before, needle),
            "{needle} is stored before the erase"
        );
    }
    store
        .erase(&EraseMemory::new(&s, id, true), &WritePlan::default())
        .unwrap();
    let after = file_bytes(&path);
    for needle in ["Zyxwvut stone", "zyxwvut", "Zyxwvut", "Plover-42"] {
        assert!(!holds(&after, needle), "{needle} survived the erase");
    }
    assert!(holds(&after, "Vtsrqp"), "a soft delete keeps its text");
    assert!(store.integrity().unwrap().is_consistent());
}

/// The saved vector index beside `db`: the graph file and the half-precision copies.
/// (A file that is not there holds no bytes.)
fn index_bytes(db: &std::path::Path) -> (Vec<u8>, Vec<u8>) {
    let read =
        |suffix: &str| std::fs::read(format!("{}{suffix}", db.display())).unwrap_or_default();
    (read(".hnsw"), read(".hnsw.f16"))
}

/// Erasure reaches the saved vector index: once `erase` returns, the erased memory's vector is
/// in neither index file — not as the graph keeps it (8 bits: usearch leaves a removed node's
/// vector in its slot) nor as the exact copies keep it (half precision) — while both were there
/// before; the index saved at close still holds neither, holds another memory's, loads as saved
/// and finds the rest.
#[test]
fn an_erased_vector_is_in_no_byte_of_the_saved_index() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("mnemo.db");
    let store = open_concrete(&path);
    let s = scope("rhea");
    for i in 0..40 {
        put(
            &store,
            &s,
            &format!("filler note {i} about the orchard"),
            json!({}),
        );
    }
    let secret = "Rhea hid the seven letters from Oslo in the Qwertzu attic under a loose plank \
                  beside the old violin case and the broken lamp";
    let id = put(&store, &s, secret, json!({}));
    let other = "Rhea waters the quince trees every Sunday before the market opens in town";
    let kept = put(&store, &s, other, json!({}));
    store.flush_index().unwrap();
    // Each memory's vector as the two files hold it.
    let needles = |id: MemoryId, text: &str| -> (Vec<u8>, Vec<u8>) {
        let graph = mnemo_store_sqlite::testing::graph_vector(&store, id).expect("indexed");
        let halves = HashEmbedder::vector(text)
            .iter()
            .flat_map(|x| half::f16::from_f32(*x).to_bits().to_le_bytes())
            .collect();
        (graph.iter().map(|v| *v as u8).collect(), halves)
    };
    let (secret_graph, secret_halves) = needles(id, secret);
    let (kept_graph, kept_halves) = needles(kept, other);
    let (graph, halves) = index_bytes(&path);
    assert!(
        has(&graph, &secret_graph) && has(&halves, &secret_halves),
        "saved before"
    );
    store
        .erase(&EraseMemory::new(&s, id, true), &WritePlan::default())
        .unwrap();
    let (graph, halves) = index_bytes(&path);
    assert!(
        !has(&graph, &secret_graph),
        "the graph file keeps the erased vector"
    );
    assert!(
        !has(&halves, &secret_halves),
        "the exact copies keep the erased vector"
    );
    // Closing saves the index from memory, where the erased vector's slot was overwritten.
    drop(store);
    let (graph, halves) = index_bytes(&path);
    assert!(
        !has(&graph, &secret_graph) && !has(&halves, &secret_halves),
        "the index saved at close keeps the erased vector"
    );
    assert!(
        has(&graph, &kept_graph) && has(&halves, &kept_halves),
        "the others stay"
    );
    assert!(mnemo_store_sqlite::testing::saved_index_loads(&path).unwrap());
    let store = open_concrete(&path);
    let hits = store
        .dense_candidates(
            &candidates(&s, ReadOptions::default()),
            &HashEmbedder::vector(other),
        )
        .unwrap();
    assert_eq!(hits.len(), 41);
    let kept_seq = store
        .fetch(&candidates(&s, ReadOptions::default()), &[hits[0].key])
        .unwrap();
    assert_eq!(kept_seq[0].1.id, kept);
}

/// Two handles on one file (two `Memory` on one data dir in one process): A adds T, B reads
/// it into its own index, A erases T, and B — which learns of the erase only from the change
/// log — closes last. Neither saved file holds T's vector (8-bit or half precision), whether B
/// read again after the erase or not; they hold the others and load as saved.
#[test]
fn an_erased_vector_is_in_no_saved_index_when_another_handle_saves_last() {
    for b_reads_after in [false, true] {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("mnemo.db");
        let a = open_concrete(&path);
        let b = open_concrete(&path);
        let s = scope("rhea");
        for i in 0..40 {
            put(
                &a,
                &s,
                &format!("filler note {i} about the orchard"),
                json!({}),
            );
        }
        let secret = "Rhea hid the seven letters from Oslo in the Qwertzu attic under a plank";
        let id = put(&a, &s, secret, json!({}));
        let other = "Rhea waters the quince trees every Sunday before the market opens";
        let kept = put(&a, &s, other, json!({}));
        let read = |store: &mnemo_store_sqlite::SqliteStore| {
            store
                .dense_candidates(
                    &candidates(&s, ReadOptions::default()),
                    &HashEmbedder::vector(secret),
                )
                .unwrap()
        };
        read(&b);
        let needles = |id: MemoryId| {
            (
                mnemo_store_sqlite::testing::graph_vector(&b, id)
                    .expect("B indexed it")
                    .iter()
                    .map(|v| *v as u8)
                    .collect::<Vec<u8>>(),
                mnemo_store_sqlite::testing::exact_vector_bytes(&b, id).expect("B keeps it"),
            )
        };
        let (secret_graph, secret_halves) = needles(id);
        let (kept_graph, kept_halves) = needles(kept);
        a.erase(&EraseMemory::new(&s, id, true), &WritePlan::default())
            .unwrap();
        if b_reads_after {
            assert_eq!(read(&b).len(), 41, "B sees the erase");
        }
        drop(a);
        drop(b);
        let (graph, halves) = index_bytes(&path);
        assert!(
            !has(&graph, &secret_graph),
            "the graph file B saved keeps the erased vector (B read after: {b_reads_after})"
        );
        assert!(
            !has(&halves, &secret_halves),
            "the exact copies B saved keep the erased vector (B read after: {b_reads_after})"
        );
        assert!(
            has(&graph, &kept_graph) && has(&halves, &kept_halves),
            "the others stay"
        );
        assert!(mnemo_store_sqlite::testing::saved_index_loads(&path).unwrap());
    }
}

/// Another process holding the write lock past the busy timeout makes a write fail as
/// `unavailable` (retryable: the server answers 503 with Retry-After), not as an internal error.
#[test]
fn a_locked_database_is_unavailable_not_internal() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("mnemo.db");
    let store = mnemo_store_sqlite::SqliteStore::open(&path).unwrap();
    store
        .bind_embedder(&Binding::new(HashEmbedder::MODEL_ID, HashEmbedder::DIM).unwrap())
        .unwrap();
    store
        .set_busy_timeout(std::time::Duration::from_millis(50))
        .unwrap();
    let other = rusqlite::Connection::open(&path).unwrap();
    other.execute_batch("BEGIN IMMEDIATE").unwrap();
    let s = scope("ursula");
    let err = store
        .write(vec![batch(&s, "a note", json!({}))])
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Unavailable, "{err}");
    assert!(err.kind().is_retryable());
    other.execute_batch("ROLLBACK").unwrap();
    store.write(vec![batch(&s, "a note", json!({}))]).unwrap();
}

/// A write of many memories catches the vector index up beside searches: while its graph
/// inserts are held, a search of another scope answers (the old catch-up held the index's
/// exclusive lock for all of them), and once they end the new memories are found.
#[test]
fn searches_answer_while_a_large_write_catches_the_index_up() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("mnemo.db");
    let store = mnemo_store_sqlite::SqliteStore::open(&path).unwrap();
    store
        .bind_embedder(&Binding::new(HashEmbedder::MODEL_ID, HashEmbedder::DIM).unwrap())
        .unwrap();
    let store = std::sync::Arc::new(store);
    let (quiet, bulk) = (scope("quiet"), scope("bulk"));
    let kept = put(store.as_ref(), &quiet, "quinn grows tomatoes", json!({}));
    let hold = mnemo_store_sqlite::testing::hold_graph_inserts(&store);
    let writer = {
        let (store, bulk) = (store.clone(), bulk.clone());
        std::thread::spawn(move || {
            let batches: Vec<WriteBatch> = (0..200)
                .map(|i| {
                    batch(
                        &bulk,
                        &format!("bulk memory number {i} about sailing"),
                        json!({}),
                    )
                })
                .collect();
            store.write(batches).map(|outcomes| outcomes.len())
        })
    };
    assert!(
        hold.wait_held(std::time::Duration::from_secs(30)),
        "the write's catch-up never reached its graph inserts"
    );
    let (tx, rx) = std::sync::mpsc::channel();
    {
        let (store, quiet) = (store.clone(), quiet.clone());
        std::thread::spawn(move || {
            let hits = search(store.as_ref(), &quiet, "tomatoes", ReadOptions::default());
            let _ = tx.send(hits.first().map(|h| h.memory.id));
        });
    }
    let found = rx.recv_timeout(std::time::Duration::from_secs(10));
    hold.release();
    assert_eq!(
        found,
        Ok(Some(kept)),
        "a search waited for another write's graph inserts"
    );
    assert_eq!(writer.join().unwrap().unwrap(), 200);
    let hits = search(store.as_ref(), &bulk, "sailing", ReadOptions::default());
    assert!(
        !hits.is_empty(),
        "the bulk memories are searchable after the catch-up"
    );
    let report = store.integrity().unwrap();
    assert!(report.is_consistent(), "{report:?}");
    assert_eq!(report.ann_entries, 201);
}

/// Opens a store at `path` with the test embedder bound, as the concrete type (the checkpoint
/// hooks take it).
fn open_concrete(path: &std::path::Path) -> mnemo_store_sqlite::SqliteStore {
    let store = mnemo_store_sqlite::SqliteStore::open(path).unwrap();
    store
        .bind_embedder(&Binding::new(HashEmbedder::MODEL_ID, HashEmbedder::DIM).unwrap())
        .unwrap();
    store
}

/// Writes `n` memories of a few hundred bytes each, one transaction each.
fn write_many(store: &dyn Store, s: &Scope, n: usize) {
    for i in 0..n {
        let text = format!(
            "entry {i} {}",
            "about the harbour and its boats ".repeat(12)
        );
        put(store, s, &text, json!({}));
    }
}

/// The write-ahead log is checkpointed by the store's own thread: commits past the mark hand
/// it over, the thread's checkpoints copy frames into the main file (a connection that had
/// read nothing once answered every checkpoint with "not in WAL mode" and copied none), and
/// while the thread keeps up no writer checkpoints inside its commit.
#[test]
fn the_log_is_checkpointed_off_the_write_path() {
    use mnemo_store_sqlite::testing;
    let dir = tempfile::tempdir().unwrap();
    let store = open_concrete(&dir.path().join("mnemo.db"));
    testing::set_checkpoint_marks(&store, 40, 1_000_000);
    let s = scope("harbour");
    write_many(&store, &s, 150);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while testing::background_checkpoints(&store) == 0 && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert!(
        testing::background_checkpoints(&store) > 0,
        "the thread never checkpointed"
    );
    let (inline, longest) = testing::inline_checkpoints(&store);
    assert_eq!(inline, 0, "a writer checkpointed inside its commit");
    assert!(
        longest >= 40,
        "the log never reached the mark ({longest} frames)"
    );
    let memories = testing::row_counts(&store)
        .into_iter()
        .find(|(t, _)| t == "memories")
        .map(|(_, n)| n);
    assert_eq!(memories, Some(150));
}

/// With the thread gone (as if it could not keep up), writers checkpoint at the inline mark,
/// so the log stays bounded; the store stays whole.
#[test]
fn writers_bound_the_log_when_the_checkpoint_thread_falls_behind() {
    use mnemo_store_sqlite::testing;
    let dir = tempfile::tempdir().unwrap();
    let mut store = open_concrete(&dir.path().join("mnemo.db"));
    testing::stop_background_checkpoints(&mut store);
    let inline_at = 60;
    testing::set_checkpoint_marks(&store, 20, inline_at);
    let s = scope("harbour");
    write_many(&store, &s, 200);
    let (inline, longest) = testing::inline_checkpoints(&store);
    assert!(inline >= 2, "writers checkpointed {inline} times");
    assert!(
        longest < 2 * inline_at,
        "the log reached {longest} frames past an inline mark of {inline_at}"
    );
    assert_eq!(testing::background_checkpoints(&store), 0);
    assert!(store.integrity().unwrap().is_consistent());
}

/// Waits (up to 20 s) until `n` early graph inserts wait for their catch-up (from inside a
/// planned write: its own).
fn early_inserts_reach(store: &mnemo_store_sqlite::SqliteStore, n: usize) -> bool {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while std::time::Instant::now() < deadline {
        if mnemo_store_sqlite::testing::early_inserts(store) >= n {
            return true;
        }
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
    false
}

/// `n` planned batches of `s` with texts from `text`, without tiers.
fn planned_batches(s: &Scope, n: usize, text: impl Fn(usize) -> String) -> Vec<WriteBatch> {
    (0..n).map(|i| batch(s, &text(i), json!({}))).collect()
}

/// A planned write's new vectors go into the graph while the writer waits for its plan,
/// before the commit; the catch-up after the commit only gives them their info, and every
/// memory is then found by its own text with its exact score.
#[test]
fn a_planned_write_puts_its_vectors_in_the_graph_before_its_commit() {
    let dir = tempfile::tempdir().unwrap();
    let store = open_concrete(&dir.path().join("mnemo.db"));
    let s = scope("early");
    let text = |i: usize| format!("early entry {i} on the orchard ladder");
    let n = 40;
    let seen_before_commit = std::cell::Cell::new(false);
    let out = store
        .write_planned(
            planned_batches(&s, n, text),
            Box::new(|| {
                seen_before_commit.set(early_inserts_reach(&store, n));
                Ok(vec![Default::default(); n])
            }),
        )
        .unwrap();
    assert_eq!(out.len(), n);
    assert!(
        seen_before_commit.get(),
        "the write's vectors were not in the graph while it waited for its plan"
    );
    assert_eq!(
        mnemo_store_sqlite::testing::early_inserts(&store),
        0,
        "the catch-up settles every early insert"
    );
    for i in [0, n / 2, n - 1] {
        let hits = search(&store, &s, &text(i), ReadOptions::default());
        assert_eq!(hits[0].memory.text, text(i));
        assert!(hits[0].score > 0.99, "{}", hits[0].score);
    }
    let report = store.integrity().unwrap();
    assert!(report.is_consistent(), "{report:?}");
    assert_eq!(report.ann_entries, n as u64);
}

/// A planned write that fails after its early graph inserts takes them back before it lets
/// the next write in: the graph holds only committed memories, and the next write, which gets
/// the same row numbers, is found by its own vectors.
#[test]
fn a_failed_planned_write_takes_its_early_graph_inserts_back() {
    let dir = tempfile::tempdir().unwrap();
    let store = open_concrete(&dir.path().join("mnemo.db"));
    let s = scope("early-failed");
    let kept = put(&store, &s, "a kept memory about lanterns", json!({}));
    let n = 30;
    let err = store
        .write_planned(
            planned_batches(&s, n, |i| format!("doomed entry {i} about kites")),
            Box::new(|| {
                assert!(early_inserts_reach(&store, n), "no early inserts");
                Err(Error::Unavailable {
                    component: "planner".into(),
                    reason: "test".into(),
                })
            }),
        )
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Unavailable, "{err}");
    assert_eq!(mnemo_store_sqlite::testing::early_inserts(&store), 0);
    let report = store.integrity().unwrap();
    assert!(report.is_consistent(), "{report:?}");
    assert_eq!(
        report.ann_entries, 1,
        "the failed write's nodes stayed in the graph"
    );

    // Every early insert was in the graph: the next write gets their row numbers.
    mnemo_testkit::contract::next_write_is_found_by_its_vectors(&store, &s, n, kept, 1);
}

/// A rebuild reads the store in chunks and inserts each from several threads: every memory of
/// a store larger than one chunk is in the rebuilt graph, found by its own text, at its exact
/// score.
#[test]
fn a_rebuild_larger_than_one_chunk_indexes_every_memory() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("mnemo.db");
    let s = scope("wren");
    let text = |i: usize| format!("wren note {i} about tide {} and kelp {}", i % 97, i % 89);
    let n = 5000;
    let store = open(&path);
    store
        .write((0..n).map(|i| batch(&s, &text(i), json!({}))).collect())
        .unwrap();
    drop(store);
    let mut graph = path.as_os_str().to_owned();
    graph.push(".hnsw");
    std::fs::write(std::path::PathBuf::from(graph), b"not an index").unwrap();
    let store = open(&path);
    let report = store.integrity().unwrap();
    assert!(report.is_consistent(), "{report:?}");
    assert_eq!(report.ann_entries, n as u64);
    for i in [0, 4095, 4096, n - 1] {
        let hits = search(store.as_ref(), &s, &text(i), ReadOptions::default());
        assert_eq!(hits[0].memory.text, text(i));
        assert!(
            (hits[0].scores.dense - 1.0).abs() < 1e-3,
            "{}",
            hits[0].scores.dense
        );
    }
}
