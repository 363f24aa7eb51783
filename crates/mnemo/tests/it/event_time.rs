//! Event time through the facade over the real SQLite store: the add's `timestamp` is the
//! anchor of every memory it derives (raw, notes, inferred facts with the scripted model's
//! answer reconciled against the text), bad anchors write nothing, temporal search boosts
//! memories in the query's range and leaves other queries ranked exactly as before, and the
//! timeline orders by event time.

use mnemo::core::time::{EventTimeSource, Granularity};
use mnemo::core::*;
use mnemo::{AddRequest, InferConfig, Memory, TimelineRequest};
use mnemo_testkit::engines;
use mnemo_testkit::{HashEmbedder, ScriptedChat};
use serde_json::json;
use std::sync::Arc;

fn at(raw: &str) -> Timestamp {
    raw.parse().unwrap()
}

fn ann() -> Scope {
    Scope::user("ann").unwrap()
}

fn raw_engine(rank: RankParams) -> (Memory, Arc<dyn Store>, engines::TestStore) {
    let dir = engines::fresh_store();
    let store = dir.store();
    let m = Memory::from_parts(store.clone(), Arc::new(HashEmbedder), rank).unwrap();
    (m, store, dir)
}

async fn add_at(m: &Memory, text: &str, when: &str) -> MemoryId {
    let mut req = AddRequest::text(ann(), text);
    req.timestamp = Some(at(when));
    m.add(req).await.unwrap().results[0].id
}

async fn get(m: &Memory, id: MemoryId) -> mnemo::MemoryRecord {
    m.get(mnemo::GetRequest {
        scope: ann(),
        id,
        include_expired: false,
    })
    .await
    .unwrap()
}

#[tokio::test]
async fn a_raw_memory_reads_its_time_against_the_messages_timestamp() {
    let (m, _store, _dir) = raw_engine(RankParams::default());
    let id = add_at(
        &m,
        "We adopted Biscuit two weeks ago",
        "2023-05-08T13:56:00Z",
    )
    .await;
    let got = get(&m, id).await;
    assert_eq!(
        got.created_at,
        at("2023-05-08T13:56:00Z"),
        "the anchor is kept"
    );
    let e = got.event_time.expect("an event time");
    assert!(
        e.overlaps(at("2023-04-24T00:00:00Z"), at("2023-04-25T00:00:00Z")),
        "{e:?}"
    );
    assert_eq!(e.source, EventTimeSource::Text);
    assert!(e.phrase.contains("two weeks ago"), "{e:?}");
    let plain = add_at(&m, "Biscuit likes carrots", "2023-05-08T13:56:00Z").await;
    assert_eq!(get(&m, plain).await.event_time, None, "no date is invented");
}

#[tokio::test]
async fn a_note_reads_its_time_against_the_messages_timestamp() {
    let (m, _store, _dir) = raw_engine(RankParams::default());
    let mut req = AddRequest::note(
        ann(),
        "Ran the Lisbon half marathon yesterday",
        NoteInput::default(),
    );
    req.timestamp = Some(at("2023-05-08T09:00:00Z"));
    let id = m.add(req).await.unwrap().results[0].id;
    let e = get(&m, id).await.event_time.expect("an event time");
    assert_eq!(
        (e.start, e.granularity),
        (at("2023-05-07T00:00:00Z"), Granularity::Day)
    );
}

#[tokio::test]
async fn anchors_before_1900_or_beyond_tomorrow_are_refused_and_write_nothing() {
    let (m, store, _dir) = raw_engine(RankParams::default());
    let tomorrow_and_more = chrono::Utc::now() + chrono::Duration::days(2);
    for bad in [at("1899-12-31T23:00:00Z"), tomorrow_and_more] {
        let mut req = AddRequest::text(ann(), "too early or too late");
        req.timestamp = Some(bad);
        let e = m.add(req).await.unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidInput, "{bad}: {e}");
        assert!(e.to_string().contains("timestamp"), "{e}");
    }
    let counts = engines::off_runtime(|| store.integrity()).unwrap();
    assert_eq!((counts.messages, counts.memories), (0, 0));
}

/// An extraction answer of one fact citing message 1, with the model's event time.
fn extraction(fact: &str, when: Option<&str>) -> String {
    json!({"facts": [{"text": fact, "sources": [1], "event_time": when}]}).to_string()
}

async fn inferred(fact: &str, said: &str, when: Option<&str>) -> Option<time::EventTime> {
    let answer = extraction(fact, when);
    let chat = Arc::new(ScriptedChat::new("scripted:time", move |_| {
        Ok(answer.clone())
    }));
    let dir = engines::fresh_store();
    let m = Memory::from_parts(dir.store(), Arc::new(HashEmbedder), RankParams::default())
        .unwrap()
        .with_chat(chat.clone(), InferConfig::default());
    let mut req = AddRequest::text(ann(), said);
    req.infer = Some(true);
    req.timestamp = Some(at("2023-05-08T13:56:00Z"));
    let out = m.add(req).await.unwrap();
    let prompt = &chat.requests()[0];
    assert!(
        prompt
            .messages
            .iter()
            .any(|p| p.content.contains("event_time")),
        "extraction asks for each fact's event time"
    );
    get(&m, out.results[0].id).await.event_time
}

#[tokio::test]
async fn the_models_event_time_is_kept_only_when_the_text_agrees() {
    // Agrees (same day): the model's answer stands.
    let e = inferred(
        "Mel painted a sunrise on 7 May 2023",
        "I painted a sunrise yesterday",
        Some("2023-05-07"),
    )
    .await
    .expect("an event time");
    assert_eq!(
        (e.start, e.source),
        (at("2023-05-07T00:00:00Z"), EventTimeSource::Model)
    );
    // Another granularity: the text's reading stands.
    let e = inferred(
        "Mel painted a sunrise on 7 May 2023",
        "I painted a sunrise yesterday",
        Some("2023-05"),
    )
    .await
    .expect("an event time");
    assert_eq!(
        (e.granularity, e.source),
        (Granularity::Day, EventTimeSource::Text)
    );
    // Nothing in the text supports it: no event time at all.
    assert_eq!(
        inferred(
            "Mel painted a sunrise",
            "I painted a sunrise",
            Some("2022-01-01")
        )
        .await,
        None
    );
    // The fact states none, its only source message does.
    let e = inferred(
        "Mel painted a sunrise",
        "I painted a sunrise yesterday",
        None,
    )
    .await
    .expect("from the source message");
    assert_eq!(e.start, at("2023-05-07T00:00:00Z"));
}

async fn seed(m: &Memory) {
    for (text, when) in [
        (
            "Ann went hiking in the Alps last week",
            "2023-05-08T10:00:00Z",
        ),
        ("Ann adopted a cat named Biscuit", "2023-05-08T10:00:00Z"),
        (
            "Ann started a pottery class in March 2023",
            "2023-05-09T10:00:00Z",
        ),
        (
            "Ann visited her sister in Porto yesterday",
            "2022-11-20T10:00:00Z",
        ),
        ("Ann likes hiking and pottery", "2023-06-01T10:00:00Z"),
        ("Ann's cat Biscuit likes the garden", "2023-06-02T10:00:00Z"),
    ] {
        add_at(m, text, when).await;
    }
}

async fn order(m: &Memory, query: &str, reference: Option<&str>) -> (Vec<String>, bool) {
    let mut req = SearchRequest::new(ann(), query, 6);
    req.reference_date = reference.map(at);
    let out = m.search(req).await.unwrap();
    (
        out.results.into_iter().map(|h| h.memory.text).collect(),
        out.temporal.is_some(),
    )
}

#[tokio::test]
async fn a_query_without_a_time_ranks_exactly_as_with_temporal_search_off() {
    let (on, store, _dir) = raw_engine(RankParams::default());
    seed(&on).await;
    let off = Memory::from_parts(
        store,
        Arc::new(HashEmbedder),
        RankParams {
            temporal_weight: 0.0,
            ..RankParams::default()
        },
    )
    .unwrap();
    for q in [
        "what does Ann like?",
        "who is Biscuit",
        "pottery class",
        "Porto sister",
    ] {
        let (a, temporal) = order(&on, q, Some("2023-06-10T00:00:00Z")).await;
        assert!(!temporal, "{q:?} names no time");
        assert_eq!(a, order(&off, q, None).await.0, "{q:?}");
    }
    // A query with a time: its range is reported and the memory in it rises to the top.
    let (a, temporal) = order(
        &on,
        "what did Ann do in May 2023?",
        Some("2023-06-10T00:00:00Z"),
    )
    .await;
    assert!(temporal);
    assert_eq!(a[0], "Ann went hiking in the Alps last week", "{a:?}");
    let mut req = SearchRequest::new(ann(), "what did Ann do last November?", 3);
    req.reference_date = Some(at("2023-03-01T00:00:00Z"));
    let out = on.search(req).await.unwrap();
    let t = out.temporal.expect("a resolved range");
    assert_eq!(t.start, at("2022-11-01T00:00:00Z"));
    assert_eq!(
        out.results[0].memory.text,
        "Ann visited her sister in Porto yesterday"
    );
}

#[tokio::test]
async fn the_event_time_filter_keeps_only_the_range_and_refuses_an_inverted_one() {
    let (m, _store, _dir) = raw_engine(RankParams::default());
    seed(&m).await;
    let mut req = SearchRequest::new(ann(), "Ann", 10);
    req.filter = Filter::from_json(&json!({"event_time": {
        "gte": "2023-03-01T00:00:00Z", "lt": "2023-04-01T00:00:00Z"}}))
    .unwrap();
    let texts: Vec<String> = m
        .search(req)
        .await
        .unwrap()
        .results
        .into_iter()
        .map(|h| h.memory.text)
        .collect();
    assert_eq!(texts, ["Ann started a pottery class in March 2023"]);
    let e = Filter::from_json(&json!({"event_time": {
        "gte": "2023-04-01T00:00:00Z", "lt": "2023-03-01T00:00:00Z"}}))
    .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidInput);
    assert!(e.to_string().contains("event_time"), "{e}");
}

#[tokio::test]
async fn the_timeline_lists_events_in_the_order_they_happened_with_their_turns() {
    let (m, _store, _dir) = raw_engine(RankParams::default());
    seed(&m).await;
    let page = m.timeline(TimelineRequest::new(ann())).await.unwrap();
    let texts: Vec<&str> = page
        .results
        .iter()
        .map(|e| e.memory.text.as_str())
        .collect();
    assert_eq!(
        texts,
        [
            "Ann visited her sister in Porto yesterday",
            "Ann started a pottery class in March 2023",
            "Ann went hiking in the Alps last week",
        ]
    );
    assert_eq!(page.results[0].source_text.as_deref(), Some(texts[0]));
    let mut bad = TimelineRequest::new(ann());
    bad.from = Some(at("2024-01-01T00:00:00Z"));
    bad.to = Some(at("2023-01-01T00:00:00Z"));
    let e = m.timeline(bad).await.unwrap_err();
    assert!(e.to_string().contains("from"), "{e}");
}

/// A segment's event time is the span of what its pages' messages state, each read against the
/// time it was said; it is shown by the segments view and dates the segment's line in a pack.
#[tokio::test]
async fn a_segment_spans_the_event_times_of_its_messages() {
    let (m, _store, _dir) = raw_engine(RankParams::default());
    let m = m.with_tier_config(TierConfig {
        short_term_capacity: 1,
        join_threshold: 0.0,
        ..TierConfig::default()
    });
    for (text, when) in [
        (
            "Biscuit the dog came home yesterday",
            "2023-05-08T13:56:00Z",
        ),
        (
            "Biscuit the dog had his first vet visit last week",
            "2023-06-02T10:00:00Z",
        ),
        ("Biscuit the dog likes carrots", "2023-06-03T10:00:00Z"),
    ] {
        let mut req = AddRequest::text(ann(), text);
        req.timestamp = Some(at(when));
        req.session_id = Some("s1".into());
        m.add(req).await.unwrap();
    }
    let segments = m.segments_view(ann()).await.unwrap();
    assert_eq!(segments.len(), 1, "{segments:?}");
    let e = segments[0].event_time.clone().expect("a span");
    assert_eq!(e.start, at("2023-05-07T00:00:00Z"), "{e:?}");
    assert_eq!(e.end, at("2023-05-29T00:00:00Z"), "{e:?}");
    assert_eq!(e.source, EventTimeSource::Text);
    let pack = m
        .context(mnemo::ContextRequest {
            scope: ann(),
            query: "Biscuit the dog".into(),
            budget_tokens: 2000,
            options: Default::default(),
        })
        .await
        .unwrap();
    assert!(
        pack.rendered
            .contains("(between Sun 7 May 2023 and Sun 28 May 2023)"),
        "{}",
        pack.rendered
    );
}
