//! Erasure through the facade reaches the bytes of the SQLite files (the database and its
//! WAL): a raw memory's erase erases its message by default, and pages moved between tiers
//! before the erase leave no old copy in free space.

use mnemo::core::*;
use mnemo::{AddInput, AddRequest, Memory};
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
        let moved = m
            .store()
            .pages(&PageQuery {
                scope: Some(scope.clone()),
                tier: Some(PageTier::Mid),
                ..PageQuery::default()
            })
            .unwrap();
        assert!(
            !moved.is_empty(),
            "the first pages moved to mid-term before the erase"
        );
        let (db, wal) = occurrences(&path, "Qz4417xv");
        assert!(db + wal > 0, "the text is stored before the erase");
        let r = m
            .erase(scope.clone(), id, sources, WriteContext::default())
            .await
            .unwrap();
        assert_eq!(r.messages_erased, 1, "the raw memory is its message");
        assert_eq!(occurrences(&path, "Qz4417xv"), (0, 0), "sources={sources}");
        assert_eq!(occurrences(&path, "qz4417xv"), (0, 0), "lexical terms");
        drop(m);
        assert_eq!(occurrences(&path, "Qz4417xv"), (0, 0), "after close");
        let again = engine(&path);
        let log = again.store().messages(&scope, Some("s"), 100).unwrap();
        assert_eq!(log.len(), 13, "the message keeps its id and place");
        assert!(log.iter().all(|g| !g.content.contains("4417")));
    }
}
