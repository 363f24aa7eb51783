//! Erasure through the facade reaches the bytes of the SQLite files (the database and its
//! WAL): a raw memory's erase erases its message by default, and pages moved between tiers
//! before the erase leave no old copy in free space.

use mnemo::core::*;
use mnemo::{AddInput, AddRequest, Memory};
use mnemo_testkit::engines;
use mnemo_testkit::HashEmbedder;
use std::path::Path;
use std::sync::Arc;

fn engine(path: &Path) -> Memory {
    let store = mnemo_store_sqlite::SqliteStore::open(path).unwrap();
    Memory::from_parts(
        Arc::new(store),
        Arc::new(HashEmbedder),
        RankParams::default(),
    )
    .unwrap()
}

fn turn(scope: &Scope, session: &str, text: &str) -> AddRequest {
    let mut req = AddRequest::text(scope.clone(), "");
    req.input = AddInput::Messages(vec![InputMessage {
        role: Role::User,
        content: text.into(),
        name: Some("Ann".into()),
    }]);
    req.session_id = Some(session.into());
    req
}

/// How many times `needle` occurs in each of the database file and its WAL.
pub(crate) fn occurrences(db: &Path, needle: &str) -> (usize, usize) {
    let count = |p: &Path| {
        std::fs::read(p).map_or(0, |b| {
            b.windows(needle.len())
                .filter(|w| *w == needle.as_bytes())
                .count()
        })
    };
    let wal = std::path::PathBuf::from(format!("{}-wal", db.display()));
    (count(db), count(&wal))
}

/// The repro: a turn, twelve more in its session (the tier planner moves its page from
/// short-term to mid-term on the way), then an erase — of the raw memory without `sources`
/// (the default on every surface) and, in a second store, with — and the text is in no byte
/// of either file, also after the store is closed.
#[tokio::test]
async fn an_erased_turn_leaves_no_byte_after_its_page_moved_tier() {
    for sources in [false, true] {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("mnemo.db");
        let m = engine(&path);
        let scope = Scope::user("u").unwrap();
        let secret = "My bank PIN is Qz4417xv";
        let id = m.add(turn(&scope, "s", secret)).await.unwrap().results[0].id;
        for i in 0..12 {
            m.add(turn(
                &scope,
                "s",
                &format!("filler turn {i} about the garden"),
            ))
            .await
            .unwrap();
        }
        let moved = engines::off_runtime(|| {
            engines::off_runtime(|| {
                engines::off_runtime(|| {
                    m.store().pages(&PageQuery {
                        scope: Some(scope.clone()),
                        tier: Some(PageTier::Mid),
                        ..PageQuery::default()
                    })
                })
            })
        })
        .unwrap();
        assert!(
            !moved.is_empty(),
            "the first pages moved to mid-term before the erase"
        );
        let (db, wal) = occurrences(&path, "Qz4417xv");
        assert!(db + wal > 0, "the text is stored before the erase");
        let r = m
            .erase(scope.clone(), id, sources, WritePlan::default())
            .await
            .unwrap();
        assert_eq!(r.messages_erased, 1, "the raw memory is its message");
        assert_eq!(occurrences(&path, "Qz4417xv"), (0, 0), "sources={sources}");
        assert_eq!(occurrences(&path, "qz4417xv"), (0, 0), "lexical terms");
        drop(m);
        assert_eq!(occurrences(&path, "Qz4417xv"), (0, 0), "after close");
        let again = engine(&path);
        let log = engines::off_runtime(|| again.store().messages(&scope, Some("s"), 100)).unwrap();
        assert_eq!(log.len(), 13, "the message keeps its id and place");
        assert!(log.iter().all(|g| !g.content.contains("4417")));
    }
}

/// Erases a memory from inside the embedding call of the add whose texts contain `trigger`:
/// after that add read its session's earlier turns and before it writes (the race of an erase
/// committing between the two, made deterministic).
struct EraseWhileEmbedding {
    store: Arc<dyn Store>,
    target: std::sync::Mutex<Option<(Scope, MemoryId)>>,
    trigger: &'static str,
}

impl Embedder for EraseWhileEmbedding {
    fn model_id(&self) -> &str {
        HashEmbedder::MODEL_ID
    }
    fn dimension(&self) -> usize {
        HashEmbedder::DIM
    }
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
        if texts.iter().any(|t| t.contains(self.trigger)) {
            if let Some((scope, id)) = self.target.lock().unwrap().take() {
                engines::off_runtime(|| {
                    engines::off_runtime(|| {
                        engines::off_runtime(|| {
                            self.store
                                .erase(&EraseMemory::new(&scope, id, false), &WritePlan::default())
                        })
                    })
                })
                .unwrap();
            }
        }
        HashEmbedder.embed(texts)
    }
}

/// An erase that commits while an add of the same session is between reading its earlier
/// turns and writing: the add's new turn must not quote the erased one in its index text
/// (lexical search would find it, and the file would hold it).
#[tokio::test]
async fn an_erase_racing_an_add_of_its_session_is_not_quoted_by_the_new_turn() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("mnemo.db");
    let store: Arc<dyn Store> = Arc::new(mnemo_store_sqlite::SqliteStore::open(&path).unwrap());
    let hook = Arc::new(EraseWhileEmbedding {
        store: store.clone(),
        target: std::sync::Mutex::new(None),
        trigger: "Wombat",
    });
    let m = Memory::from_parts(store.clone(), hook.clone(), RankParams::default()).unwrap();
    let scope = Scope::user("u").unwrap();
    let id = m
        .add(turn(&scope, "s", "My bank PIN is Qz4417xv"))
        .await
        .unwrap()
        .results[0]
        .id;
    *hook.target.lock().unwrap() = Some((scope.clone(), id));
    let next = m
        .add(turn(&scope, "s", "Wombat facts are fun"))
        .await
        .unwrap()
        .results[0]
        .id;
    assert!(
        hook.target.lock().unwrap().is_none(),
        "the erase ran mid-add"
    );
    let q = mnemo_testkit::candidates(&scope, ReadOptions::default());
    let found =
        engines::off_runtime(|| store.lexical_candidates(&q, &["qz4417xv".to_string()])).unwrap();
    assert!(
        found.is_empty(),
        "the new turn quotes the erased one: {found:?}"
    );
    let wombat =
        engines::off_runtime(|| store.lexical_candidates(&q, &["wombat".to_string()])).unwrap();
    assert_eq!(wombat.len(), 1, "the new turn is indexed by its own words");
    assert_eq!(
        engines::off_runtime(|| store.get(&scope, next, &ReadOptions::default()))
            .unwrap()
            .text,
        "Wombat facts are fun"
    );
    // The add committed after the erase's checkpoint; the next erase-free checkpoint is the
    // store's own, so look at both files.
    assert_eq!(occurrences(&path, "Qz4417xv"), (0, 0));
}

/// Two servers on one PostgreSQL database (two stores, each with its own pool, as two `mnemo
/// serve` processes have): an erase the second runs while the first's add of the same session
/// is between its window re-check and its commit waits for that commit (the erase gate is a
/// row lock in the database, not a lock of one process), and then takes the quote out of the
/// new turn: the new turn never quotes the erased one.
#[tokio::test]
async fn an_erase_on_another_server_racing_an_add_of_its_session_is_not_quoted() {
    let first = engines::fresh_postgres("");
    let url = first.schema().expect("a PostgreSQL store").url();
    let second: Arc<dyn Store> = Arc::new(
        engines::off_runtime(|| mnemo_store_postgres::PgStore::connect(&url, 4))
            .expect("a second server's store"),
    );
    let m =
        Memory::from_parts(first.store(), Arc::new(HashEmbedder), RankParams::default()).unwrap();
    let scope = Scope::user("u").unwrap();
    let id = m
        .add(turn(&scope, "s", "My bank PIN is Qz4417xv"))
        .await
        .unwrap()
        .results[0]
        .id;
    let erased: Arc<std::sync::Mutex<Option<std::sync::mpsc::Receiver<Result<EraseReport>>>>> =
        Arc::default();
    let slot = erased.clone();
    let hook_scope = scope.clone();
    mnemo::testing::on_window_recheck(scope.key(), move || {
        // The second server's erase as its facade runs it: its own process's gates are not
        // this one's, so only the store's gate can hold it.
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let parts: Vec<String> = hook_scope
                .key()
                .split('\u{1f}')
                .filter(|p| !p.is_empty() && !p.ends_with('='))
                .map(String::from)
                .collect();
            let r = second.erase_gate(&parts, true).and_then(|_gate| {
                second.erase(
                    &EraseMemory::new(&hook_scope, id, false),
                    &WritePlan::default(),
                )
            });
            let _ = tx.send(r);
        });
        // Until the erase either finished (it raced this add) or waits on a lock (the gate).
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
        while std::time::Instant::now() < deadline && !erase_waits_on_a_lock() {
            if let Ok(r) = rx.recv_timeout(std::time::Duration::from_millis(50)) {
                let (tx2, rx2) = std::sync::mpsc::channel();
                let _ = tx2.send(r);
                *slot.lock().unwrap() = Some(rx2);
                return;
            }
        }
        *slot.lock().unwrap() = Some(rx);
    });
    let next = m
        .add(turn(&scope, "s", "Wombat facts are fun"))
        .await
        .unwrap()
        .results[0]
        .id;
    let rx = erased
        .lock()
        .unwrap()
        .take()
        .expect("the erase ran mid-add");
    let report = engines::off_runtime(move || rx.recv_timeout(std::time::Duration::from_secs(30)))
        .expect("the erase ends")
        .expect("the erase succeeds");
    assert_eq!(report.id, id);
    let store = first.store();
    let q = mnemo_testkit::candidates(&scope, ReadOptions::default());
    let found =
        engines::off_runtime(|| store.lexical_candidates(&q, &["qz4417xv".to_string()])).unwrap();
    assert!(
        found.is_empty(),
        "the new turn quotes the erased one: {found:?}"
    );
    let wombat =
        engines::off_runtime(|| store.lexical_candidates(&q, &["wombat".to_string()])).unwrap();
    assert_eq!(wombat.len(), 1, "the new turn is indexed by its own words");
    assert_eq!(
        engines::off_runtime(|| store.get(&scope, next, &ReadOptions::default()))
            .unwrap()
            .text,
        "Wombat facts are fun"
    );
}

/// Whether a session of the test database waits for a row lock on the erase gates.
fn erase_waits_on_a_lock() -> bool {
    std::thread::spawn(|| {
        let mut c = postgres::Client::connect(engines::pg_url(), postgres::NoTls).ok()?;
        c.query_one(
            "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' \
             AND query LIKE '%scope_gates%FOR UPDATE%'",
            &[],
        )
        .ok()
        .map(|r| r.get::<_, i64>(0) > 0)
    })
    .join()
    .ok()
    .flatten()
    .unwrap_or(false)
}
