//! The facade's reads follow the one visibility rule: lineage through expired ancestors, and
//! as-of lists and searches.

use mnemo::core::*;
use mnemo::{AddInput, AddRequest, ListRequest, Memory, UpdateRequest};
use mnemo_testkit::engines;
use mnemo_testkit::{batch_at, HashEmbedder};
use serde_json::json;
use std::sync::Arc;

fn engine() -> (Memory, engines::TestStore) {
    engine_on(engines::fresh_store())
}

fn engine_on(dir: engines::TestStore) -> (Memory, engines::TestStore) {
    let store = dir.store();
    let m = Memory::from_parts(store, Arc::new(HashEmbedder), RankParams::default()).unwrap();
    (m, dir)
}

/// Before: `history` of a memory walked to the memory it superseded with the default read, so
/// once that ancestor's retention had passed the whole call failed with not found.
#[tokio::test]
async fn history_walks_through_an_expired_ancestor() {
    // The ancestor's expiry is set in its row: a SQLite store, whatever the run's backend.
    let (m, dir) = engine_on(engines::fresh_sqlite());
    let s = Scope::user("yuri").unwrap();
    let long_ago = chrono::Utc::now() - chrono::Duration::days(30);
    let old = batch_at(&s, "Yuri works at Acme", json!({}), long_ago, None);
    let old_id = old.memories[0].id;
    let mut new = batch_at(&s, "Yuri works at Globex", json!({}), long_ago, None);
    let new_id = new.memories[0].id;
    new.changes.push(Supersession {
        old: old_id,
        by: Some(new_id),
        state: MemoryState::Superseded,
        valid_until: long_ago + chrono::Duration::days(1),
        reason: Some("changed jobs".into()),
    });
    engines::off_runtime(|| m.store().write(vec![old])).unwrap();
    engines::off_runtime(|| m.store().write(vec![new])).unwrap();
    // Time passes: the superseded ancestor's retention runs out (its row, as an hour-old expiry
    // would leave it; no test waits for a clock).
    let past = (chrono::Utc::now() - chrono::Duration::hours(1)).timestamp_millis();
    rusqlite::Connection::open(dir.dir().join("mnemo.db"))
        .unwrap()
        .execute(
            "UPDATE memories SET expires_at = ?1 WHERE id = ?2",
            rusqlite::params![past, old_id.to_string()],
        )
        .unwrap();
    let events = m.history(s.clone(), new_id).await.unwrap();
    assert!(
        events.iter().any(|e| e.memory_id == old_id),
        "the ancestor's events are part of the lineage: {events:?}"
    );
}

#[tokio::test]
async fn as_of_reads_answer_where_someone_lived_then() {
    let (m, _dir) = engine();
    let s = Scope::user("zoe").unwrap();
    let t0 = chrono::Utc::now() - chrono::Duration::days(700);
    let mut oslo = batch_at(&s, "Zoe lives in Oslo", json!({}), t0, None);
    oslo.memories[0].valid_from = Some(t0);
    let oslo_id = oslo.memories[0].id;
    let moved = t0 + chrono::Duration::days(365);
    let mut rome = batch_at(&s, "Zoe lives in Rome", json!({}), moved, None);
    rome.memories[0].valid_from = Some(moved);
    rome.changes.push(Supersession {
        old: oslo_id,
        by: Some(rome.memories[0].id),
        state: MemoryState::Superseded,
        valid_until: moved,
        reason: None,
    });
    engines::off_runtime(|| m.store().write(vec![oslo])).unwrap();
    engines::off_runtime(|| m.store().write(vec![rome])).unwrap();
    let then = t0 + chrono::Duration::days(100);
    let req = SearchRequest {
        read: ReadOptions {
            as_of: Some(then),
            ..ReadOptions::default()
        },
        ..SearchRequest::new(s.clone(), "where does Zoe live", 5)
    };
    let hits = m.search(req).await.unwrap().results;
    let texts: Vec<&str> = hits.iter().map(|h| h.memory.text.as_str()).collect();
    assert_eq!(texts, ["Zoe lives in Oslo"]);
    let now = m
        .search(SearchRequest::new(s.clone(), "where does Zoe live", 5))
        .await
        .unwrap()
        .results;
    assert_eq!(now[0].memory.text, "Zoe lives in Rome");
    let listed = m
        .list(ListRequest {
            scope: s,
            kinds: None,
            filters: None,
            limit: 10,
            cursor: None,
            include_expired: false,
            as_of: Some(then),
        })
        .await
        .unwrap();
    assert_eq!(listed.results.len(), 1);
    assert_eq!(listed.results[0].text, "Zoe lives in Oslo");
}

/// The recent log as the Python package reads it (`recent_messages`): deleted, expired and
/// erased turns never come back, no erased turn leaves an empty entry, and hidden turns do not
/// use up the limit. An empty session id is refused, as on add.
#[tokio::test]
async fn recent_messages_keep_the_log_rule_and_the_limit() {
    let (m, _d) = engine();
    let s = Scope::user("rena").unwrap();
    let turn = |text: &str| {
        let mut req = AddRequest::text(s.clone(), "");
        req.input = AddInput::Messages(vec![InputMessage {
            role: Role::User,
            content: text.into(),
            name: None,
        }]);
        req.session_id = Some("s".into());
        req.infer = Some(false);
        req
    };
    m.add(turn("kept turn")).await.unwrap();
    let mut hidden = Vec::new();
    for text in ["deleted turn", "expired turn", "erased turn"] {
        hidden.push(m.add(turn(text)).await.unwrap().results[0].id);
    }
    let ctx = WritePlan::default();
    m.delete(s.clone(), hidden[0], DeleteMode::Soft, ctx.clone())
        .await
        .unwrap();
    let past = UpdateRequest {
        expires_at: Some(Some(chrono::Utc::now() - chrono::Duration::hours(1))),
        ..Default::default()
    };
    m.update(s.clone(), hidden[1], past, ctx.clone())
        .await
        .unwrap();
    m.erase(s.clone(), hidden[2], false, ctx).await.unwrap();
    for session in [None, Some("s".to_string())] {
        let shown = m.recent_messages(s.clone(), session, 1).await.unwrap();
        let texts: Vec<&str> = shown.iter().map(|m| m.content.as_str()).collect();
        assert_eq!(texts, ["kept turn"]);
    }
    let err = m
        .recent_messages(s.clone(), Some(String::new()), 5)
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidInput);
    let mut empty = turn("x");
    empty.session_id = Some(String::new());
    assert_eq!(
        m.add(empty).await.unwrap_err().kind(),
        ErrorKind::InvalidInput
    );
}
