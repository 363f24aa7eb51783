//! The bounds of `mnemo_core::limits` as the facade enforces them for every surface: an add or
//! search past a bound is invalid input, names the bound, and writes or embeds nothing.

use crate::engine;
use mnemo::core::limits::{MAX_MESSAGES_PER_ADD, MAX_QUERY_CHARS, MAX_TEXT_CHARS};
use mnemo::core::*;
use mnemo::{AddInput, AddRequest};
use mnemo_testkit::engines;
use std::sync::atomic::Ordering;

fn conversation(scope: &Scope, n: usize) -> AddRequest {
    let mut req = AddRequest::text(scope.clone(), "");
    req.input = AddInput::Messages(
        (0..n)
            .map(|i| InputMessage {
                role: Role::User,
                content: format!("turn {i}"),
                name: None,
            })
            .collect(),
    );
    req
}

/// The probe sent one add of 5,000 messages (32 s of CPU); a 1 MiB body holds 30,000.
#[tokio::test]
async fn an_add_of_more_messages_than_the_limit_is_refused_and_writes_nothing() {
    let (m, counting, _dir) = engine();
    let scope = Scope::user("u").unwrap();
    let err = m
        .add(conversation(&scope, MAX_MESSAGES_PER_ADD + 1))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidInput);
    assert!(err.to_string().contains("the limit is 1000"), "{err}");
    assert_eq!(counting.0.load(Ordering::SeqCst), 0, "nothing embedded");
    let report = engines::off_runtime(|| m.store().integrity()).unwrap();
    assert_eq!((report.messages, report.memories), (0, 0));
    // Exactly at the limit is fine.
    let out = m
        .add(conversation(&scope, MAX_MESSAGES_PER_ADD))
        .await
        .unwrap();
    assert_eq!(out.results.len(), MAX_MESSAGES_PER_ADD);
}

#[tokio::test]
async fn texts_with_nothing_visible_are_refused_like_whitespace() {
    let (m, counting, _dir) = engine();
    let scope = Scope::user("u").unwrap();
    for blank in [
        "  \n",
        "\u{0}\u{0}",
        "\u{200B}\u{200D}\u{FEFF}",
        "\u{202E} \u{7F}",
    ] {
        let err = m
            .add(AddRequest::text(scope.clone(), blank))
            .await
            .unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidInput, "{blank:?}");
        assert!(err.to_string().contains("must not be empty"), "{err}");
    }
    assert_eq!(counting.0.load(Ordering::SeqCst), 0);
    assert_eq!(
        engines::off_runtime(|| m.store().integrity())
            .unwrap()
            .messages,
        0
    );
}

/// The probe's megabyte of `y` took 41 s to add (the stemmer was quadratic in a word's length);
/// now the text is refused, and one at the limit is indexed in linear time.
#[tokio::test]
async fn a_text_over_the_length_limit_is_refused_naming_the_limit() {
    let (m, _, _dir) = engine();
    let scope = Scope::user("u").unwrap();
    let err = m
        .add(AddRequest::text(scope.clone(), "y".repeat(1 << 20)))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidInput);
    assert!(
        err.to_string().contains("limit is 65536 characters"),
        "{err}"
    );
    // Words, not one 64 Ki-character run: PostgreSQL's text search leaves out any word over
    // 2,047 bytes (docs/postgres.md), so such a run is found by meaning alone there.
    let at_limit = "yak ".repeat(MAX_TEXT_CHARS / 4);
    assert_eq!(at_limit.chars().count(), MAX_TEXT_CHARS);
    let out = m
        .add(AddRequest::text(scope.clone(), at_limit.clone()))
        .await
        .unwrap();
    let mut req = SearchRequest::new(scope.clone(), at_limit[..MAX_QUERY_CHARS].to_string(), 5);
    req.mode = SearchMode::Lexical;
    let hits = m.search(req).await.unwrap();
    assert_eq!(hits.results[0].memory.id, out.results[0].id);
    let mut req = SearchRequest::new(scope, "y".repeat(MAX_QUERY_CHARS + 1), 5);
    req.mode = SearchMode::Lexical;
    let err = m.search(req).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidInput);
    assert!(err.to_string().contains("16384"), "{err}");
}

/// Mem0's `timestamp` (Unix seconds) accepted the year -1199; at the end of chrono's range a
/// two-message add overflowed the per-message offset.
#[tokio::test]
async fn timestamps_outside_the_years_1_to_9999_are_refused() {
    let (m, _, _dir) = engine();
    let scope = Scope::user("u").unwrap();
    let ancient = chrono::DateTime::from_timestamp(-100_000_000_000, 0).unwrap();
    for at in [ancient, chrono::DateTime::<chrono::Utc>::MAX_UTC] {
        let mut req = conversation(&scope, 2);
        req.timestamp = Some(at);
        let err = m.add(req).await.unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidInput, "{at}");
        assert!(err.to_string().contains("timestamp"), "{err}");
    }
    let mut req = conversation(&scope, 1);
    req.expires_at = Some(chrono::DateTime::<chrono::Utc>::MAX_UTC);
    assert_eq!(
        m.add(req).await.unwrap_err().kind(),
        ErrorKind::InvalidInput
    );
    assert_eq!(
        engines::off_runtime(|| m.store().integrity())
            .unwrap()
            .messages,
        0
    );
}
