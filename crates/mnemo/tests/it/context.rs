//! Context packs through the facade over the real SQLite store: validation, the short-term
//! window, matched turns with their neighbours, scope isolation, expiry and deletion, and the
//! budget over random conversations.

use mnemo::core::pack::{ContextOptions, ContextPack, Reason, Section};
use mnemo::core::*;
use mnemo::{AddInput, AddRequest, ContextRequest, Memory};
use mnemo_testkit::engines;
use mnemo_testkit::HashEmbedder;
use std::sync::Arc;

fn engine() -> (Memory, engines::TestStore) {
    let dir = engines::fresh_store();
    let store = dir.store();
    let m = Memory::from_parts(store, Arc::new(HashEmbedder), RankParams::default()).unwrap();
    (m, dir)
}

fn turns(scope: &Scope, session: &str, lines: &[(&str, &str)]) -> AddRequest {
    let mut req = AddRequest::text(scope.clone(), "");
    req.input = AddInput::Messages(
        lines
            .iter()
            .map(|(name, text)| InputMessage {
                role: Role::User,
                content: (*text).into(),
                name: Some((*name).into()),
            })
            .collect(),
    );
    req.session_id = Some(session.into());
    req
}

fn ask(scope: &Scope, query: &str, budget: u32) -> ContextRequest {
    ContextRequest {
        scope: scope.clone(),
        query: query.into(),
        budget_tokens: budget,
        options: ContextOptions::default(),
    }
}

fn items(p: &ContextPack) -> Vec<&mnemo::core::pack::PackItem> {
    p.sections.iter().flat_map(|s| &s.items).collect()
}

#[tokio::test]
async fn bad_budgets_unknown_sessions_and_tokenizers_name_the_field() {
    let (m, _dir) = engine();
    let scope = Scope::user("u").unwrap();
    m.add(turns(&scope, "s1", &[("Ann", "hello there")]))
        .await
        .unwrap();
    for (budget, session, tokenizer, field) in [
        (0, None, None, "budget_tokens"),
        (pack::MAX_BUDGET_TOKENS + 1, None, None, "budget_tokens"),
        (100, Some("nope"), None, "session_id"),
        (100, None, Some("gpt-9"), "tokenizer"),
    ] {
        let mut req = ask(&scope, "hello", budget);
        req.options.session_id = session.map(String::from);
        req.options.tokenizer = tokenizer.map(String::from);
        let e = m.context(req).await.unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidInput, "{field}: {e}");
        assert!(e.to_string().contains(field), "{field}: {e}");
    }
    // Another user's session is unknown to this scope.
    let mut req = ask(&Scope::user("v").unwrap(), "hello", 100);
    req.options.session_id = Some("s1".into());
    let e = m.context(req).await.unwrap_err();
    assert!(e.to_string().contains("session_id"), "{e}");
}

#[tokio::test]
async fn a_matched_turn_comes_with_its_neighbours_under_one_session_header() {
    let (m, _dir) = engine();
    let scope = Scope::user("u").unwrap();
    m.add(turns(
        &scope,
        "s1",
        &[
            ("Ann", "What did you do at the weekend?"),
            ("Bo", "I adopted a greyhound called Biscuit"),
            ("Ann", "Lovely! How old is he?"),
            ("Bo", "Also the kitchen tap is leaking again"),
            ("Ann", "Call the plumber then"),
        ],
    ))
    .await
    .unwrap();
    // One retrieved memory: whatever else the pack shows was reached from it.
    let mut req = ask(&scope, "greyhound Biscuit", 1000);
    req.options.memory_candidates = Some(1);
    let pack = m.context(req).await.unwrap();
    assert_eq!(pack.tokenizer, "cl100k_base");
    assert!(pack.used_tokens <= 1000);
    let all = items(&pack);
    let matched = all
        .iter()
        .find(|i| i.text.contains("greyhound"))
        .expect("the matched turn");
    assert_eq!(matched.reason, Reason::Matched);
    assert!(matched.score.is_some());
    assert_eq!(matched.kind, "page", "the exchange the turn belongs to");
    assert!(
        matched
            .text
            .contains("Bo: I adopted a greyhound called Biscuit"),
        "{matched:?}"
    );
    let neighbour = all
        .iter()
        .find(|i| i.text.contains("How old"))
        .expect("the next exchange");
    assert_eq!(neighbour.reason, Reason::Linked);
    assert_eq!(neighbour.from.as_deref(), Some(matched.id.as_str()));
    assert!(
        !pack.rendered.contains("plumber"),
        "two steps away is beyond the default one neighbour: {}",
        pack.rendered
    );
    assert_eq!(
        pack.rendered.matches("greyhound").count(),
        1,
        "the raw memory and its turn are shown once: {}",
        pack.rendered
    );
    assert_eq!(pack.rendered.matches('[').count(), 1, "one session header");
    let weekend = pack.rendered.find("weekend");
    let adopted = pack.rendered.find("adopted");
    if let (Some(w), Some(a)) = (weekend, adopted) {
        assert!(w < a, "conversation order: {}", pack.rendered);
    }
}

#[tokio::test]
async fn the_window_of_the_current_session_comes_first_and_recent() {
    let (m, _dir) = engine();
    let scope = Scope::user("u").unwrap();
    m.add(turns(&scope, "old", &[("Ann", "My sister lives in Porto")]))
        .await
        .unwrap();
    m.add(turns(
        &scope,
        "now",
        &[("Ann", "Planning a trip"), ("Bo", "Where to?")],
    ))
    .await
    .unwrap();
    let mut req = ask(&scope, "sister Porto", 500);
    req.options.session_id = Some("now".into());
    let pack = m.context(req).await.unwrap();
    assert_eq!(pack.sections[0].section, Section::ShortTerm);
    let window: Vec<&str> = pack.sections[0]
        .items
        .iter()
        .map(|i| i.text.as_str())
        .collect();
    assert!(window.iter().all(|t| !t.contains("Porto")), "{window:?}");
    assert!(pack.sections[0]
        .items
        .iter()
        .all(|i| i.reason == Reason::Recent));
    assert!(
        pack.rendered.find("Planning").unwrap() < pack.rendered.find("Where to").unwrap(),
        "oldest first: {}",
        pack.rendered
    );
    assert!(pack.rendered.contains("Porto"), "{}", pack.rendered);
    assert_eq!(pack.rendered.matches("Planning").count(), 1);
}

#[tokio::test]
async fn another_users_memories_and_turns_never_appear() {
    let (m, _dir) = engine();
    let (u, v) = (Scope::user("u").unwrap(), Scope::user("v").unwrap());
    m.add(turns(&u, "s", &[("Ann", "I keep bees in the garden")]))
        .await
        .unwrap();
    m.add(turns(
        &v,
        "s",
        &[
            ("Eve", "I keep bees too, secret hives"),
            ("Eve", "bees bees"),
        ],
    ))
    .await
    .unwrap();
    m.add(AddRequest::text(v.clone(), "Eve's bees live on the roof"))
        .await
        .unwrap();
    let pack = m.context(ask(&u, "bees hives roof", 2000)).await.unwrap();
    assert!(pack.rendered.contains("garden"), "{}", pack.rendered);
    for word in ["secret", "roof", "Eve"] {
        assert!(!pack.rendered.contains(word), "{word}: {}", pack.rendered);
    }
    let own: Vec<MessageId> = engines::off_runtime(|| m.store().messages(&u, None, 100))
        .unwrap()
        .iter()
        .map(|x| x.id)
        .collect();
    for i in items(&pack) {
        assert!(i.message_ids.iter().all(|id| own.contains(id)), "{i:?}");
    }
}

#[tokio::test]
async fn expired_and_deleted_memories_stay_out_as_in_search() {
    let (m, _dir) = engine();
    let scope = Scope::user("u").unwrap();
    // Expiry is judged at read time; an add refuses a past expiry, so this one expires soon
    // and the test waits until it has (a deadline, not a timing guess).
    let deadline = chrono::Utc::now() + chrono::Duration::milliseconds(300);
    let mut gone = AddRequest::text(scope.clone(), "The plumber comes on Tuesday");
    gone.expires_at = Some(deadline);
    m.add(gone).await.unwrap();
    while chrono::Utc::now() <= deadline {
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    let deleted = m
        .add(AddRequest::text(
            scope.clone(),
            "The plumber's number is 555",
        ))
        .await
        .unwrap()
        .results[0]
        .id;
    m.delete(
        scope.clone(),
        deleted,
        DeleteMode::Soft,
        WritePlan::default(),
    )
    .await
    .unwrap();
    m.add(AddRequest::text(scope.clone(), "The plumber fixed the tap"))
        .await
        .unwrap();
    let pack = m.context(ask(&scope, "plumber", 1000)).await.unwrap();
    assert!(pack.rendered.contains("fixed the tap"), "{}", pack.rendered);
    assert!(!pack.rendered.contains("Tuesday"), "{}", pack.rendered);
    assert!(!pack.rendered.contains("555"), "{}", pack.rendered);
}

/// A small deterministic generator: the same stores on every run.
struct Lcg(u64);

impl Lcg {
    fn next(&mut self, n: usize) -> usize {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((self.0 >> 33) % n as u64) as usize
    }
}

#[tokio::test]
async fn packs_never_exceed_random_budgets_over_random_conversations() {
    const WORDS: [&str; 12] = [
        "tea", "garden", "Lisbon", "marathon", "dog", "piano", "sister", "job", "rain", "birthday",
        "café", "—",
    ];
    let mut rng = Lcg(7);
    for store in 0..3 {
        let (m, _dir) = engine();
        let scope = Scope::user("u").unwrap();
        for s in 0..(2 + rng.next(3)) {
            let n = 1 + rng.next(12);
            let lines: Vec<(String, String)> = (0..n)
                .map(|_| {
                    let len = 1 + rng.next(30);
                    let text: Vec<&str> = (0..len).map(|_| WORDS[rng.next(WORDS.len())]).collect();
                    (["Ann", "Bo"][rng.next(2)].to_string(), text.join(" "))
                })
                .collect();
            let refs: Vec<(&str, &str)> = lines
                .iter()
                .map(|(a, b)| (a.as_str(), b.as_str()))
                .collect();
            m.add(turns(&scope, &format!("s{s}"), &refs)).await.unwrap();
        }
        for _ in 0..8 {
            let budget = 1 + rng.next(600) as u32;
            let query = WORDS[rng.next(WORDS.len())];
            let mut req = ask(&scope, query, budget);
            if rng.next(2) == 0 {
                req.options.session_id = Some("s0".into());
            }
            let pack = m.context(req).await.unwrap();
            let counter = mnemo_models::token_counter("cl100k_base").unwrap();
            assert!(pack.used_tokens <= budget, "store {store}, budget {budget}");
            assert_eq!(pack.used_tokens, counter.count(&pack.rendered));
            let sum: u32 = items(&pack).iter().map(|i| i.tokens).sum();
            assert!(sum <= budget, "items alone fit too");
        }
    }
}

#[tokio::test]
async fn moved_pages_bring_their_segment_summary_and_count_a_visit() {
    let (m, _dir) = engine();
    let m = m.with_tier_config(TierConfig {
        short_term_capacity: 1,
        profile_heat_threshold: None,
        ..TierConfig::default()
    });
    let scope = Scope::user("u").unwrap();
    for (a, b) in [
        ("I adopted a greyhound called Biscuit", "What a lovely dog"),
        ("Biscuit the greyhound loves the beach", "Dogs love sand"),
        ("Unrelated: the kitchen tap leaks", "Call a plumber"),
    ] {
        m.add(turns(&scope, "s1", &[("Ann", a), ("Bo", b)]))
            .await
            .unwrap();
    }
    let segments = engines::off_runtime(|| m.store().segments(&scope, false, false)).unwrap();
    assert!(!segments.is_empty(), "pages moved into segments");
    let mut req = ask(&scope, "greyhound Biscuit", 2000);
    req.options.memory_candidates = Some(2);
    let pack = m.context(req).await.unwrap();
    let all = items(&pack);
    let summary = all
        .iter()
        .find(|i| i.kind == "segment")
        .expect("the summary of a matched page's segment");
    assert!(segments.iter().any(|s| s.id.to_string() == summary.id));
    assert!(
        matches!(summary.reason, Reason::Linked | Reason::Matched),
        "{summary:?}"
    );
    assert!(pack.rendered.contains("Topic: "), "{}", pack.rendered);
    assert!(all.iter().any(|i| i.kind == "page"), "{all:?}");
    m.flush_usage().await.unwrap();
    let after = engines::off_runtime(|| m.store().segments(&scope, false, false)).unwrap();
    let visited = after
        .iter()
        .find(|s| s.id.to_string() == summary.id)
        .unwrap();
    assert!(visited.visits >= 1, "the pack's retrieval counted a visit");
}

#[tokio::test]
async fn long_matched_turns_are_clipped_around_the_query_when_the_budget_is_tight() {
    let (m, _dir) = engine();
    let scope = Scope::user("u").unwrap();
    let long = "Hey! So after a long and honestly tiring week at the office with endless \
                meetings I finally went to the pottery class downtown with my sister and we \
                stayed for hours. Anyway, how are the kids doing these days?";
    m.add(turns(
        &scope,
        "s1",
        &[("Ann", long), ("Bob", "The kids are fine, thanks.")],
    ))
    .await
    .unwrap();
    // A page's lines are one item: Ann's is the line that starts with her name.
    let ann = |pack: &ContextPack| {
        items(pack)
            .into_iter()
            .flat_map(|i| i.text.lines())
            .find(|l| l.starts_with("Ann: "))
            .map(str::to_string)
            .expect("Ann's turn is in the pack")
    };
    let tight = m.context(ask(&scope, "pottery class", 40)).await.unwrap();
    let line = ann(&tight);
    assert!(line.contains("pottery class"), "{line}");
    assert!(line.contains('…'), "the cut is marked: {line}");
    assert!(
        line.split_whitespace().count() < long.split_whitespace().count() / 2,
        "clipped: {line}"
    );
    assert!(!line.contains("kids"), "{line}");
    // With room to spare the turn is shown as it was said.
    let roomy = m.context(ask(&scope, "pottery class", 500)).await.unwrap();
    assert_eq!(ann(&roomy), format!("Ann: {long}"));
}

/// The conversation log follows its memories: a turn whose raw memory is deleted, expired or
/// erased (with or without `sources`) is neither in the session's window, nor the neighbour of
/// a matched turn, nor an empty `Ann: ` line, while the turns around it still are.
#[tokio::test]
async fn deleted_expired_and_erased_turns_of_a_session_stay_out_of_packs() {
    for how in ["delete", "expire", "erase", "erase with sources"] {
        let (m, _dir) = engine();
        let scope = Scope::user("u").unwrap();
        m.add(turns(&scope, "s", &[("Ann", "I walk the dog at seven")]))
            .await
            .unwrap();
        let mut secret = turns(&scope, "s", &[("Ann", "My bank PIN is 4417")]);
        let deadline = chrono::Utc::now() + chrono::Duration::milliseconds(300);
        if how == "expire" {
            secret.expires_at = Some(deadline);
        }
        let id = m.add(secret).await.unwrap().results[0].id;
        m.add(turns(
            &scope,
            "s",
            &[("Ann", "The dog likes the bank of the river")],
        ))
        .await
        .unwrap();
        let ctx = WritePlan::default();
        match how {
            "delete" => m
                .delete(scope.clone(), id, DeleteMode::Soft, ctx)
                .await
                .unwrap(),
            "expire" => {
                while chrono::Utc::now() <= deadline {
                    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                }
            }
            _ => {
                let r = m
                    .erase(scope.clone(), id, how == "erase with sources", ctx)
                    .await
                    .unwrap();
                assert_eq!((r.messages_erased, r.messages_kept), (1, 0), "{how}");
            }
        }
        let mut req = ask(&scope, "dog bank PIN", 2000);
        req.options.session_id = Some("s".into());
        let pack = m.context(req.clone()).await.unwrap();
        let text = &pack.rendered;
        assert!(!text.contains("4417"), "{how}: {text}");
        assert!(text.contains("walk the dog"), "{how}: {text}");
        assert!(text.contains("bank of the river"), "{how}: {text}");
        assert!(
            !text.lines().any(|l| l.trim_end().ends_with(':')),
            "{how}: an empty line for a hidden turn: {text}"
        );
        // Without the window, the matched turns bring their neighbours: still not the secret.
        req.options.session_id = None;
        let pack = m.context(req).await.unwrap();
        assert!(!pack.rendered.contains("4417"), "{how}: {}", pack.rendered);
        assert!(
            pack.rendered.contains("walk the dog"),
            "{how}: {}",
            pack.rendered
        );
    }
}

#[tokio::test]
async fn a_search_returning_a_segments_memories_counts_one_visit_unless_tracking_is_off() {
    let (m, _dir) = engine();
    let m = m.with_tier_config(TierConfig {
        short_term_capacity: 1,
        profile_heat_threshold: None,
        ..TierConfig::default()
    });
    let scope = Scope::user("u").unwrap();
    for (a, b) in [
        ("I adopted a greyhound called Biscuit", "What a lovely dog"),
        ("Unrelated: the kitchen tap leaks", "Call a plumber"),
        ("The weather turned cold today", "Wear a coat"),
    ] {
        m.add(turns(&scope, "s1", &[("Ann", a), ("Bo", b)]))
            .await
            .unwrap();
    }
    m.flush_usage().await.unwrap();
    let pages = engines::off_runtime(|| {
        engines::off_runtime(|| {
            engines::off_runtime(|| {
                m.store().pages(&tier::PageQuery {
                    scope: Some(scope.clone()),
                    tier: Some(PageTier::Mid),
                    ..Default::default()
                })
            })
        })
    })
    .unwrap();
    let page = pages
        .iter()
        .find(|p| p.text.contains("greyhound"))
        .expect("the first exchange moved to mid-term");
    let segment = page.segment.unwrap();
    let visits = |m: &Memory| {
        engines::off_runtime(|| m.store().segments(&scope, false, false))
            .unwrap()
            .into_iter()
            .find(|s| s.id == segment)
            .unwrap()
            .visits
    };
    let before = visits(&m);
    let search = |m: Memory| {
        let scope = scope.clone();
        async move {
            let out = m
                .search(SearchRequest::new(scope, "greyhound called Biscuit", 5))
                .await
                .unwrap();
            assert!(
                out.results
                    .iter()
                    .any(|h| h.memory.text.contains("greyhound")),
                "the search finds the moved turn"
            );
        }
    };
    search(m.clone()).await;
    m.flush_usage().await.unwrap();
    assert_eq!(visits(&m), before + 1, "one search, one visit");
    search(m.clone().with_usage_tracking(false)).await;
    m.flush_usage().await.unwrap();
    assert_eq!(
        visits(&m),
        before + 1,
        "no bookkeeping when tracking is off"
    );
}

#[tokio::test]
async fn packs_show_the_current_relations_of_the_entities_the_query_names() {
    let (m, _dir) = engine();
    let scope = Scope::user("u").unwrap();
    for text in [
        "Caroline's sister Ana called today.",
        "Ana lives in Lisbon.",
        "Ana lives in Porto.",
        "The weather was grey all week.",
    ] {
        m.add(AddRequest::text(scope.clone(), text)).await.unwrap();
    }
    let pack = m
        .context(ask(&scope, "What is new with Ana?", 400))
        .await
        .unwrap();
    assert!(pack.used_tokens <= 400);
    let section = (pack.sections.iter())
        .find(|s| s.section == Section::Relations)
        .expect("a relations section");
    let lines: Vec<&str> = section.items.iter().map(|i| i.text.as_str()).collect();
    assert!(
        section
            .items
            .iter()
            .all(|i| i.reason == Reason::Related && i.kind == "relation"),
        "{lines:?}"
    );
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("Ana — lives_in → Porto (since ")),
        "{lines:?}"
    );
    assert!(lines.iter().any(|l| l.contains("sibling_of")), "{lines:?}");
    // Only current edges: Lisbon was closed by Porto (lives in is functional).
    assert!(!lines.iter().any(|l| l.contains("Lisbon")), "{lines:?}");
    assert!(pack.rendered.contains("## Relations (current)"));
    assert!(pack.rendered.contains("- Ana — lives_in → Porto"));
    // A budget too small for every line still holds; a query naming no entity shows none.
    for budget in [20, 40, 60] {
        let small = m
            .context(ask(&scope, "What is new with Ana?", budget))
            .await
            .unwrap();
        assert!(
            small.used_tokens <= budget,
            "{budget}: {}",
            small.used_tokens
        );
    }
    let none = m
        .context(ask(&scope, "how was the weather", 400))
        .await
        .unwrap();
    assert!(none
        .sections
        .iter()
        .all(|s| s.section != Section::Relations));
}
