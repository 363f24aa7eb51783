//! The hierarchy through the facade over the real SQLite store: the short-term window and its
//! capacity, move into segments (join or open), continuity links, LFU eviction that keeps
//! messages and provenance, all-or-nothing writes under injected failures, batched adds, the
//! scripted chat model's summaries and continuity judgements, and usage counting.

use mnemo::core::pipeline::step_of;
use mnemo::core::*;
use mnemo::{AddInput, AddRequest, GetRequest, InferConfig, ListRequest, Memory};
use mnemo_testkit::engines;
use mnemo_testkit::{HashEmbedder, ScriptedChat};
use serde_json::json;
use std::sync::{Arc, Mutex};

type Reply = Box<dyn Fn(&ChatRequest) -> Result<String> + Send + Sync>;

struct Env {
    m: Memory,
    store: Arc<dyn Store>,
    replies: Arc<Mutex<Vec<(&'static str, Reply)>>>,
    test_store: engines::TestStore,
}

/// An engine with these hierarchy settings; with `chat`, a scripted model answering each call
/// with the next reply queued for its step (an unqueued call fails the test).
fn env(tiers: TierConfig, chat: bool) -> Env {
    env_with(tiers, chat, false)
}

/// [`env`], choosing whether a failed inferred add still logs its messages.
fn env_with(tiers: TierConfig, chat: bool, log_on_failure: bool) -> Env {
    let dir = engines::fresh_store();
    let store = dir.store();
    let m = Memory::from_parts(store.clone(), Arc::new(HashEmbedder), RankParams::default())
        .unwrap()
        .with_tier_config(TierConfig {
            profile_heat_threshold: None,
            ..tiers
        });
    let replies: Arc<Mutex<Vec<(&'static str, Reply)>>> = Arc::default();
    let m = if chat {
        let r = replies.clone();
        let model = ScriptedChat::new("scripted:tiers", move |req| {
            let step = step_of(req).expect("a pipeline prompt");
            let mut q = r.lock().unwrap();
            let at = q
                .iter()
                .position(|(s, _)| *s == step)
                .unwrap_or_else(|| panic!("unexpected {step} call"));
            let (_, reply) = q.remove(at);
            reply(req)
        });
        let infer = InferConfig {
            log_messages_on_failure: log_on_failure,
            ..InferConfig::default()
        };
        m.with_chat(Arc::new(model), infer)
    } else {
        m
    };
    Env {
        m,
        store,
        replies,
        test_store: dir,
    }
}

impl Env {
    fn text(&self, step: &'static str, body: serde_json::Value) {
        let body = body.to_string();
        self.replies
            .lock()
            .unwrap()
            .push((step, Box::new(move |_| Ok(body.clone()))));
    }
    fn fail(&self, step: &'static str) {
        self.replies.lock().unwrap().push((
            step,
            Box::new(|_| {
                Err(Error::Unavailable {
                    component: "chat".into(),
                    reason: "provider down".into(),
                })
            }),
        ));
    }

    /// Pages of lena's session `s1` in `tier` (any tier when `None`), oldest first.
    fn pages(&self, tier: Option<PageTier>) -> Vec<StoredPage> {
        engines::off_runtime(|| {
            engines::off_runtime(|| {
                engines::off_runtime(|| {
                    self.store.pages(&PageQuery {
                        scope: Some(lena()),
                        exact: true,
                        session: Some(Some("s1".into())),
                        tier,
                        ..PageQuery::default()
                    })
                })
            })
        })
        .unwrap()
    }

    fn segments(&self, evicted: bool) -> Vec<Segment> {
        engines::off_runtime(|| self.store.segments(&lena(), true, evicted)).unwrap()
    }
}

fn lena() -> Scope {
    Scope::user("lena").unwrap()
}

fn cap(short: usize, mid: Option<usize>) -> TierConfig {
    TierConfig {
        short_term_capacity: short,
        mid_term_capacity: mid,
        ..TierConfig::default()
    }
}

/// One exchange of session `s1` (two named speakers: one page), raw.
fn exchange(a: &str, b: &str) -> AddRequest {
    let turn = |name: &str, content: &str| InputMessage {
        role: Role::User,
        content: content.into(),
        name: Some(name.into()),
    };
    let mut req = AddRequest::text(lena(), "");
    req.input = AddInput::Messages(vec![turn("Lena", a), turn("Ola", b)]);
    req.session_id = Some("s1".into());
    req
}

const TEA: (&str, &str) = (
    "I brewed green jasmine tea in the new kettle",
    "green jasmine tea from the new kettle sounds lovely",
);
const CHESS: (&str, &str) = (
    "our chess club plays the Sicilian opening on Fridays",
    "the Sicilian opening suits a Friday chess club",
);

/// The same add, inferred (a chat model is configured): the model also plans the hierarchy.
fn inferred(mut req: AddRequest) -> AddRequest {
    req.infer = None;
    req
}

fn ids(pages: &[StoredPage]) -> Vec<PageId> {
    pages.iter().map(|p| p.id).collect()
}

#[tokio::test]
async fn the_window_keeps_its_capacity_and_the_oldest_pages_move() {
    let e = env(cap(3, None), false);
    for i in 0..7 {
        e.m.add(exchange(&format!("tea number {i}"), TEA.1))
            .await
            .unwrap();
        assert!(e.pages(Some(PageTier::Short)).len() <= 3, "after add {i}");
    }
    let all = e.pages(None);
    assert_eq!(all.len(), 7, "one page per exchange");
    let short = e.pages(Some(PageTier::Short));
    assert_eq!(ids(&short), ids(&all[4..]), "the newest three stay short");
    assert!(all[..4]
        .iter()
        .all(|p| p.tier == PageTier::Mid && p.segment.is_some()));
    assert_eq!(short[0].text, format!("Lena: tea number 4\nOla: {}", TEA.1));
    assert_eq!(short[0].message_ids.len(), 2);
}

#[tokio::test]
async fn every_logged_message_is_in_exactly_one_page_after_many_adds() {
    let e = env(cap(2, Some(2)), false);
    let topics = [TEA, CHESS, ("the plumber comes on Tuesday", "bring cash")];
    for i in 0..12 {
        let (a, b) = topics[i % 3];
        e.m.add(exchange(a, b)).await.unwrap();
    }
    // A batch of two adds of the session, and a plain text without a session.
    e.m.add_many(vec![exchange(TEA.0, TEA.1), exchange(CHESS.0, CHESS.1)])
        .await
        .unwrap();
    e.m.add(AddRequest::text(lena(), "buy oat milk"))
        .await
        .unwrap();

    let pages = engines::off_runtime(|| {
        engines::off_runtime(|| {
            e.store.pages(&PageQuery {
                scope: Some(lena()),
                exact: true,
                ..PageQuery::default()
            })
        })
    })
    .unwrap();
    let log = engines::off_runtime(|| e.store.messages(&lena(), None, 1000)).unwrap();
    assert_eq!(log.len(), 29);
    let mut seen: Vec<MessageId> = pages.iter().flat_map(|p| p.message_ids.clone()).collect();
    seen.sort();
    let mut logged: Vec<MessageId> = log.iter().map(|m| m.id).collect();
    logged.sort();
    assert_eq!(seen, logged, "each message in exactly one page");
    let mut page_ids = ids(&pages);
    page_ids.sort();
    page_ids.dedup();
    assert_eq!(page_ids.len(), 15, "each page once, in one tier");
    assert_eq!(e.pages(Some(PageTier::Short)).len(), 2);
    let active = e.segments(false);
    assert!(active.len() <= 2, "mid_term_capacity: {}", active.len());
    for p in &pages {
        if p.tier != PageTier::Short {
            assert!(p.segment.is_some(), "{p:?}");
        }
    }
    assert!(engines::off_runtime(|| e.store.integrity())
        .unwrap()
        .is_consistent());
}

#[tokio::test]
async fn a_batch_of_adds_of_one_session_plans_each_after_the_one_before() {
    let e = env(cap(2, None), false);
    let out =
        e.m.add_many(vec![
            exchange("first", TEA.1),
            exchange("second", TEA.1),
            exchange("third", TEA.1),
        ])
        .await
        .unwrap();
    assert_eq!(out.len(), 3);
    let all = e.pages(None);
    assert_eq!(all.len(), 3);
    assert_eq!(all[0].tier, PageTier::Mid, "the first page left the window");
    assert_eq!(e.pages(Some(PageTier::Short)).len(), 2);
}

#[tokio::test]
async fn similar_pages_share_a_segment_and_a_new_topic_opens_another() {
    let e = env(cap(1, None), false);
    for (a, b) in [TEA, TEA, CHESS, TEA] {
        e.m.add(exchange(a, b)).await.unwrap();
    }
    let mid = e.pages(Some(PageTier::Mid));
    assert_eq!(mid.len(), 3);
    assert_eq!(mid[0].segment, mid[1].segment, "tea joins tea");
    assert_ne!(mid[1].segment, mid[2].segment, "chess opens its own");
    let segments = e.segments(false);
    assert_eq!(segments.len(), 2);
    let tea = segments
        .iter()
        .find(|s| Some(s.id) == mid[0].segment)
        .unwrap();
    assert_eq!(tea.page_count, 2);
    assert_eq!(tea.summary_author, Author::Rule);
    assert!(tea.summary.contains("jasmine"), "{}", tea.summary);
    assert!(tea.length_tokens > 0);
    // Continuity by rule: the second tea page continues the first; chess does not.
    assert_eq!(mid[1].continues, Some(mid[0].id));
    assert_eq!(mid[2].continues, None);
}

#[tokio::test]
async fn lfu_eviction_keeps_messages_and_the_provenance_of_derived_memories() {
    let e = env(cap(1, Some(1)), false);
    let first = e.m.add(exchange(TEA.0, TEA.1)).await.unwrap();
    e.m.add(exchange(CHESS.0, CHESS.1)).await.unwrap();
    let tea_segment = e.segments(false)[0].clone();
    e.m.add(exchange("the plumber comes on Tuesday", "bring cash"))
        .await
        .unwrap();
    let evicted = e.segments(true);
    let gone = evicted
        .iter()
        .find(|s| s.id == tea_segment.id)
        .expect("the tea segment, coldest, was evicted");
    assert!(gone.evicted_at.is_some());
    assert_eq!(e.segments(false).len(), 1);
    assert_eq!(e.pages(None)[0].tier, PageTier::Evicted);
    let events = engines::off_runtime(|| {
        engines::off_runtime(|| {
            e.store.history(&HistoryQuery::new(
                &lena(),
                MemoryId(tea_segment.id.0),
                ReadOptions::default(),
            ))
        })
    })
    .unwrap();
    assert_eq!(events.last().unwrap().event, HistoryKind::Evict);
    // The messages and the memories made from them are intact.
    assert_eq!(
        engines::off_runtime(|| e.store.messages(&lena(), None, 100))
            .unwrap()
            .len(),
        6
    );
    let detail = e.m.inspect(lena(), first.results[0].id).await.unwrap();
    assert_eq!(detail.source_messages.len(), 1);
    assert_eq!(detail.source_messages[0].content, TEA.0);
}

#[tokio::test]
async fn a_failure_at_any_hierarchy_step_leaves_window_and_segments_as_they_were() {
    for &step in WriteStep::TIER_ADD {
        let e = env(cap(1, Some(1)), false);
        e.m.add(exchange(TEA.0, TEA.1)).await.unwrap();
        e.m.add(exchange(CHESS.0, CHESS.1)).await.unwrap();
        let rows = e.test_store.row_counts();
        let (pages, segments) = (e.pages(None), e.segments(true));

        // Touches every step: message, memory, history, a page, a new segment, a move, an
        // eviction (the tea segment) and the idempotency key.
        let mut req = exchange("the plumber comes on Tuesday", "bring cash");
        req.idempotency_key = Some("plumber".into());
        e.test_store.fail_at(Some(step));
        let err = e.m.add(req.clone()).await.unwrap_err();
        e.test_store.fail_at(None);
        assert!(err.to_string().contains(step.as_str()), "{step}: {err}");
        assert_eq!(e.test_store.row_counts(), rows, "{step}");
        assert_eq!(e.pages(None), pages, "{step}: the window is as it was");
        assert_eq!(e.segments(true), segments, "{step}");

        e.m.add(req).await.unwrap();
        assert_eq!(e.pages(Some(PageTier::Short)).len(), 1, "{step}");
        assert_eq!(e.segments(true).len(), 2, "{step}: one evicted, one new");
        assert_eq!(e.segments(false).len(), 1, "{step}");
    }
}

#[tokio::test]
async fn with_a_model_summaries_are_the_models_and_it_judges_continuity() {
    let e = env(cap(1, None), true);
    let no_facts = json!({"facts": []});
    e.text("extract", no_facts.clone());
    e.m.add(inferred(exchange(TEA.0, TEA.1))).await.unwrap();
    e.text("extract", no_facts.clone());
    e.text(
        "summarise",
        json!({"summary": "Lena and Ola talk about jasmine tea.", "keywords": ["tea", "jasmine"]}),
    );
    e.m.add(inferred(exchange(CHESS.0, CHESS.1))).await.unwrap();
    let segment = e.segments(false).pop().unwrap();
    assert_eq!(segment.summary, "Lena and Ola talk about jasmine tea.");
    assert_eq!(segment.keywords, vec!["tea", "jasmine"]);
    assert_eq!(segment.summary_author, Author::Model);

    // Tea then chess: the rule would not link them; the model says they continue.
    e.text("extract", no_facts);
    e.text(
        "continuity",
        json!({"pairs": [{"pair": 1, "continues": true}]}),
    );
    e.text(
        "summarise",
        json!({"summary": "Chess on Fridays.", "keywords": ["chess"]}),
    );
    let out =
        e.m.add(inferred(exchange("something else", "indeed")))
            .await
            .unwrap();
    let purposes: Vec<&str> = out.usage.iter().map(|c| c.purpose.as_str()).collect();
    assert!(
        purposes.contains(&"continuity") && purposes.contains(&"summarise"),
        "{purposes:?}"
    );
    let mid = e.pages(Some(PageTier::Mid));
    assert_eq!(mid[1].continues, Some(mid[0].id));
    assert!(
        e.replies.lock().unwrap().is_empty(),
        "every queued reply was used"
    );
}

#[tokio::test]
async fn a_failing_model_writes_nothing_and_loses_no_page() {
    let e = env(cap(1, None), true);
    let no_facts = json!({"facts": []});
    e.text("extract", no_facts.clone());
    e.m.add(inferred(exchange(TEA.0, TEA.1))).await.unwrap();
    let rows = e.test_store.row_counts();
    let pages = e.pages(None);

    e.text("extract", no_facts);
    e.fail("summarise");
    let err =
        e.m.add(inferred(exchange(CHESS.0, CHESS.1)))
            .await
            .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Unavailable, "{err}");
    assert_eq!(e.test_store.row_counts(), rows);
    assert_eq!(e.pages(None), pages, "the tea page is still in the window");
    assert!(e.segments(true).is_empty());
}

#[tokio::test]
async fn messages_logged_by_a_failed_inferred_add_still_become_pages() {
    let e = env_with(cap(1, None), true, true);
    e.fail("extract");
    let err = e.m.add(inferred(exchange(TEA.0, TEA.1))).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Unavailable);
    assert_eq!(
        engines::off_runtime(|| e.store.messages(&lena(), None, 10))
            .unwrap()
            .len(),
        2
    );
    let pages = e.pages(None);
    assert_eq!(pages.len(), 1, "the logged exchange is a page");
    assert_eq!(pages[0].tier, PageTier::Short);

    // The next failure pushes it out by rules: no model call is made for the hierarchy.
    e.fail("extract");
    e.m.add(inferred(exchange(CHESS.0, CHESS.1)))
        .await
        .unwrap_err();
    let segment = e
        .segments(false)
        .pop()
        .expect("the tea page moved to a segment");
    assert_eq!(segment.summary_author, Author::Rule);
    assert!(e.replies.lock().unwrap().is_empty());
}

#[tokio::test]
async fn reads_count_usage_for_raw_and_fact_memories() {
    let e = env(TierConfig::default(), true);
    e.text(
        "extract",
        json!({"facts": [{"text": "Lena drinks jasmine tea", "speaker": "Lena", "sources": [1], "entities": []}]}),
    );
    let fact =
        e.m.add(inferred(exchange(TEA.0, TEA.1)))
            .await
            .unwrap()
            .results[0]
            .id;
    let mut raw = exchange(CHESS.0, CHESS.1);
    raw.infer = Some(false);
    let raw = e.m.add(raw).await.unwrap().results[0].id;
    let count =
        |id| engines::off_runtime(|| e.store.get(&lena(), id, &ReadOptions::default())).unwrap();
    assert_eq!(count(fact).kind, MemoryKind::Fact);
    assert_eq!(count(raw).access_count, 0);

    let listed =
        e.m.list(ListRequest {
            scope: lena(),
            kinds: None,
            filters: None,
            limit: 10,
            cursor: None,
            include_expired: false,
            as_of: None,
        })
        .await
        .unwrap();
    assert_eq!(listed.results.len(), 3, "the fact and the two raw turns");
    for id in [fact, raw] {
        let req = GetRequest {
            scope: lena(),
            id,
            include_expired: false,
        };
        e.m.get(req).await.unwrap();
    }
    let hits =
        e.m.search(SearchRequest::new(lena(), "jasmine tea", 1))
            .await
            .unwrap();
    let hit = hits.results[0].memory.id;
    e.m.flush_usage().await.unwrap();
    for id in [fact, raw] {
        let m = count(id);
        let expected = 2 + u64::from(id == hit);
        assert_eq!(m.access_count, expected, "{:?}", m.kind);
        assert!(m.last_accessed_at.is_some());
    }

    // Counting off: reads change nothing.
    let quiet = e.m.clone().with_usage_tracking(false);
    quiet
        .get(GetRequest {
            scope: lena(),
            id: raw,
            include_expired: false,
        })
        .await
        .unwrap();
    quiet.flush_usage().await.unwrap();
    assert_eq!(count(raw).access_count, 2 + u64::from(raw == hit));
}

#[tokio::test]
async fn capacities_of_zero_are_refused_naming_the_field() {
    let dir = tempfile::tempdir().unwrap();
    for (tiers, field) in [
        (cap(0, None), "short_term_capacity"),
        (cap(10, Some(0)), "mid_term_capacity"),
    ] {
        let mut cfg = mnemo::MemoryConfig::new(dir.path());
        cfg.tiers = tiers;
        let err = Memory::open(cfg).await.unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidInput);
        assert!(err.to_string().contains(field), "{err}");
    }
}
