use super::*;
use crate::chat::{ChatRequest, ChatResponse};
use crate::error::Error;
use std::sync::Mutex;

fn scope() -> Scope {
    Scope::user("u").unwrap()
}

fn page(text: &str, vector: Vec<f32>, keywords: &[&str]) -> NewPage {
    NewPage {
        id: PageId::new(),
        scope: scope(),
        session_id: Some("s".into()),
        message_ids: Vec::new(),
        text: text.into(),
        tokens: estimate_tokens(text),
        at: chrono::Utc::now(),
        vector,
        keywords: keywords.iter().map(|k| k.to_string()).collect(),
    }
}

fn cfg(capacity: usize) -> TierConfig {
    TierConfig {
        short_term_capacity: capacity,
        ..TierConfig::default()
    }
}

fn plan_rules(
    window: &Window,
    segments: &[Segment],
    pages: Vec<NewPage>,
    config: &TierConfig,
) -> TierWrite {
    let input = PlanInput {
        scope: &scope(),
        window,
        segments,
        pages,
        config,
        now: chrono::Utc::now(),
    };
    plan(input, None, &mut CallLog::default()).unwrap()
}

const TEA: [f32; 3] = [1.0, 0.0, 0.0];
const CHESS: [f32; 3] = [0.0, 1.0, 0.0];

#[test]
fn the_window_keeps_its_capacity_and_the_oldest_pages_move() {
    let (mut window, mut segments) = (Window::default(), Vec::new());
    let config = cfg(2);
    let mut written = Vec::new();
    for i in 0..5 {
        let p = page(
            &format!("Ana: green tea number {i}"),
            TEA.to_vec(),
            &["tea"],
        );
        written.push(p.id);
        let w = plan_rules(&window, &segments, vec![p], &config);
        apply(&w, &mut window, &mut segments);
        assert!(window.pages.len() <= 2, "{}", window.pages.len());
    }
    let ids: Vec<PageId> = window.pages.iter().map(|p| p.id).collect();
    assert_eq!(ids, written[3..], "the newest two stay");
    assert_eq!(segments.len(), 1, "similar pages share one segment");
    assert_eq!(segments[0].page_count, 3);
    assert_eq!(segments[0].version, 3, "created once, rewritten twice");
}

#[test]
fn a_page_joins_the_best_segment_or_opens_a_new_one_even_within_one_plan() {
    let window = Window::default();
    let pages = vec![
        page("Ana: I love green tea", TEA.to_vec(), &["tea"]),
        page("Ben: chess openings", CHESS.to_vec(), &["chess"]),
        page("Ana: tea again", TEA.to_vec(), &["tea"]),
        page("newest stays", TEA.to_vec(), &[]),
    ];
    let ids: Vec<PageId> = pages.iter().map(|p| p.id).collect();
    let w = plan_rules(&window, &[], pages, &cfg(1));
    assert_eq!(w.pages.len(), 4);
    assert_eq!(w.moves.len(), 3);
    assert_eq!(w.segments.len(), 2, "tea and chess");
    let seg_of = |id| w.moves.iter().find(|m| m.page == id).unwrap().segment;
    assert_eq!(
        seg_of(ids[0]),
        seg_of(ids[2]),
        "the third page joins the plan's own segment"
    );
    assert_ne!(seg_of(ids[0]), seg_of(ids[1]));
    assert!(w.segments.iter().all(|s| s.expected_version.is_none()));
    let tea = w
        .segments
        .iter()
        .find(|s| s.segment.id == seg_of(ids[0]))
        .unwrap();
    assert_eq!(tea.segment.page_count, 2);
    assert_eq!(tea.segment.summary_author, Author::Rule);
    assert!(
        tea.segment.summary.contains("green tea"),
        "{}",
        tea.segment.summary
    );
    assert_eq!(tea.segment.keywords, vec!["tea"]);

    // An existing segment is rewritten with the version the plan saw.
    let mut stored = tea.segment.clone();
    stored.version = 4;
    let again = plan_rules(
        &Window::default(),
        &[stored.clone()],
        vec![
            page("tea time", TEA.to_vec(), &["tea"]),
            page("x", TEA.to_vec(), &[]),
        ],
        &cfg(1),
    );
    assert_eq!(again.segments.len(), 1);
    assert_eq!(again.segments[0].segment.id, stored.id);
    assert_eq!(again.segments[0].expected_version, Some(4));
}

#[test]
fn continuity_links_similar_consecutive_pages_of_a_session_by_rule() {
    let window = Window::default();
    let pages = vec![
        page("tea 1", TEA.to_vec(), &["tea"]),
        page("tea 2", vec![0.9, 0.1, 0.0], &["tea"]),
        page("chess", CHESS.to_vec(), &["chess"]),
        page("stays", TEA.to_vec(), &[]),
    ];
    let ids: Vec<PageId> = pages.iter().map(|p| p.id).collect();
    let w = plan_rules(&window, &[], pages, &cfg(1));
    let cont: Vec<Option<PageId>> = w.moves.iter().map(|m| m.continues).collect();
    assert_eq!(cont, vec![None, Some(ids[0]), None]);

    // Without a session there is no thread to continue.
    let mut loose: Vec<NewPage> = vec![
        page("tea 1", TEA.to_vec(), &[]),
        page("tea 2", TEA.to_vec(), &[]),
        page("tea 3", TEA.to_vec(), &[]),
    ];
    loose.iter_mut().for_each(|p| p.session_id = None);
    let w = plan_rules(&window, &[], loose, &cfg(1));
    assert!(w.moves.iter().all(|m| m.continues.is_none()));
}

#[test]
fn the_page_before_the_window_is_continued_across_adds() {
    let (mut window, mut segments) = (Window::default(), Vec::new());
    let first = page("tea 1", TEA.to_vec(), &["tea"]);
    let second = page("tea 2", TEA.to_vec(), &["tea"]);
    let first_id = first.id;
    for p in [first, second, page("tea 3", TEA.to_vec(), &["tea"])] {
        let w = plan_rules(&window, &segments, vec![p], &cfg(1));
        if let Some(m) = w.moves.iter().find(|m| m.page != first_id) {
            assert_eq!(m.continues, Some(first_id));
        }
        apply(&w, &mut window, &mut segments);
    }
    assert_eq!(window.before.as_ref().unwrap().tier, PageTier::Mid);
}

#[test]
fn above_mid_term_capacity_the_coldest_untouched_segment_is_evicted() {
    let now = chrono::Utc::now();
    let mut hot = Work::open(&scope(), now).seg.into_owned();
    hot.vector = CHESS.to_vec();
    hot.visits = 9;
    hot.version = 7;
    let mut cold = hot.clone();
    cold.id = SegmentId::new();
    cold.visits = 0;
    cold.last_visit_at = now - chrono::Duration::days(30);
    cold.version = 2;
    let config = TierConfig {
        short_term_capacity: 1,
        mid_term_capacity: Some(2),
        ..TierConfig::default()
    };
    let pages = vec![
        page("tea", TEA.to_vec(), &["tea"]),
        page("x", TEA.to_vec(), &[]),
    ];
    let w = plan_rules(&Window::default(), &[hot, cold.clone()], pages, &config);
    assert_eq!(w.segments.len(), 1, "a new tea segment");
    assert_eq!(w.evictions.len(), 1);
    assert_eq!(w.evictions[0].segment, cold.id);
    assert_eq!(w.evictions[0].expected_version, 2);
    assert!(
        w.evictions[0].reason.contains("coldest of 3"),
        "{}",
        w.evictions[0].reason
    );
}

#[test]
fn the_extractive_summary_prefers_lines_naming_keywords_and_stays_short() {
    let filler: Vec<String> = (0..20)
        .map(|i| format!("Ana: small talk number {i}"))
        .collect();
    let mut lines: Vec<&str> = filler.iter().map(String::as_str).collect();
    lines.push("Ben: I brewed green tea in Kyoto");
    let s = extractive_summary(&lines, &["tea".into(), "Kyoto".into()]);
    assert!(s.ends_with("Ben: I brewed green tea in Kyoto"), "{s}");
    assert!(
        s.starts_with("Ana: small talk number 0"),
        "original order: {s}"
    );
    assert!(!s.contains("number 19"), "the cap leaves the rest out: {s}");
    assert!(s.split_whitespace().count() <= MAX_SUMMARY_WORDS, "{s}");
    let long = "word ".repeat(200);
    let cut = extractive_summary(&[long.as_str()], &[]);
    assert!(cut.split_whitespace().count() <= MAX_SUMMARY_WORDS + 1);
    let many: Vec<String> = (0..30).map(|i| format!("tea line {i} a b c")).collect();
    let refs: Vec<&str> = many.iter().map(String::as_str).collect();
    let s = extractive_summary(&refs, &["tea".into()]);
    assert!(s.split_whitespace().count() <= MAX_SUMMARY_WORDS, "{s}");
}

/// A model answering by step with queued replies, recording the prompts.
struct Script(
    Mutex<Vec<(&'static str, Result<String>)>>,
    Mutex<Vec<String>>,
);

impl ChatModel for Script {
    fn model_id(&self) -> &str {
        "script"
    }
    fn complete(&self, req: &ChatRequest) -> Result<ChatResponse> {
        let step = crate::pipeline::step_of(req).expect("a hierarchy prompt");
        self.1.lock().unwrap().push(req.messages[1].content.clone());
        let mut q = self.0.lock().unwrap();
        let at = q
            .iter()
            .position(|(s, _)| *s == step)
            .expect("a queued reply");
        let content = q.remove(at).1?;
        Ok(ChatResponse {
            content,
            usage: Default::default(),
        })
    }
}

fn plan_with(script: &Script, pages: Vec<NewPage>, log: &mut CallLog) -> Result<TierWrite> {
    let input = PlanInput {
        scope: &scope(),
        window: &Window::default(),
        segments: &[],
        pages,
        config: &cfg(1),
        now: chrono::Utc::now(),
    };
    plan(input, Some(script), log)
}

#[test]
fn with_a_model_summaries_keywords_and_continuity_are_the_models() {
    let script = Script(
        Mutex::new(vec![
            (
                "continuity",
                Ok(r#"{"pairs": [{"pair": 1, "continues": true}]}"#.into()),
            ),
            (
                "summarise",
                Ok(
                    r#"{"summary": "Ana and Ben talk tea.", "keywords": ["tea", "Ana", "tea"]}"#
                        .into(),
                ),
            ),
        ]),
        Mutex::default(),
    );
    let pages = vec![
        page("Ana: green tea?", TEA.to_vec(), &["tea"]),
        page("Ben: chess!", CHESS.to_vec(), &["chess"]),
        page("stays", TEA.to_vec(), &[]),
    ];
    let first = pages[0].id;
    // Two pages move: tea opens a segment, chess opens another; both are summarised.
    script.0.lock().unwrap().push((
        "summarise",
        Ok(r#"{"summary": "Ben plays chess.", "keywords": ["chess"]}"#.into()),
    ));
    let mut log = CallLog::default();
    let w = plan_with(&script, pages, &mut log).unwrap();
    assert_eq!(
        w.moves[1].continues,
        Some(first),
        "the model said so against the rule"
    );
    let s = &w.segments[0].segment;
    assert_eq!(s.summary, "Ana and Ben talk tea.");
    assert_eq!(s.keywords, vec!["tea", "Ana"]);
    assert_eq!(s.summary_author, Author::Model);
    let purposes: Vec<&str> = log.calls.iter().map(|c| c.purpose.as_str()).collect();
    assert_eq!(purposes, vec!["continuity", "summarise", "summarise"]);
    assert!(script.1.lock().unwrap()[1].contains("Ana: green tea?"));
}

#[test]
fn a_failing_or_unreadable_model_plans_nothing() {
    let pages = || vec![page("a", TEA.to_vec(), &[]), page("b", TEA.to_vec(), &[])];
    let down = Script(
        Mutex::new(vec![(
            "summarise",
            Err(Error::Unavailable {
                component: "chat".into(),
                reason: "down".into(),
            }),
        )]),
        Mutex::default(),
    );
    let e = plan_with(&down, pages(), &mut CallLog::default()).unwrap_err();
    assert_eq!(e.kind(), crate::ErrorKind::Unavailable);
    let garbled = Script(
        Mutex::new(vec![("summarise", Ok(r#"{"summary": ""}"#.into()))]),
        Mutex::default(),
    );
    let e = plan_with(&garbled, pages(), &mut CallLog::default()).unwrap_err();
    assert_eq!(e.kind(), crate::ErrorKind::ModelOutput, "{e}");
}

#[test]
fn a_segments_event_time_spans_what_its_pages_state_and_is_never_invented() {
    let at = |raw: &str| -> Timestamp { raw.parse().unwrap() };
    let dated = |text: &str, said: &str| NewPage {
        at: at(said),
        ..page(text, TEA.to_vec(), &["tea"])
    };
    let (mut window, mut segments) = (Window::default(), Vec::new());
    let config = cfg(1);
    for (text, said) in [
        // "May" as a speaker's name is no month: the speaker part is not read.
        ("May: green tea is all I drink", "2023-05-08T13:56:00Z"),
        ("Ana: I bought green tea yesterday", "2023-05-08T13:56:00Z"),
        (
            "Ana: the tea shop opened last week\nBot: nice tea",
            "2023-06-02T10:00:00Z",
        ),
        ("Ana: more green tea", "2023-06-03T10:00:00Z"),
    ] {
        let w = plan_rules(&window, &segments, vec![dated(text, said)], &config);
        apply(&w, &mut window, &mut segments);
        if segments.len() == 1 && segments[0].page_count == 1 {
            assert_eq!(
                segments[0].event_time, None,
                "the first page states no time"
            );
        }
        if segments.first().is_some_and(|s| s.page_count == 2) {
            let e = segments[0].event_time.clone().expect("yesterday");
            assert_eq!(
                (e.start, e.end),
                (at("2023-05-07T00:00:00Z"), at("2023-05-08T00:00:00Z"))
            );
            assert_eq!(e.phrase, "yesterday");
        }
    }
    assert_eq!(segments.len(), 1);
    assert_eq!(segments[0].page_count, 3);
    let e = segments[0].event_time.clone().expect("a span");
    // From 7 May ("yesterday" on 8 May) to the end of the week of 22 May ("last week" on 2 June).
    assert_eq!(e.start, at("2023-05-07T00:00:00Z"));
    assert_eq!(e.end, at("2023-05-29T00:00:00Z"));
    assert_eq!(e.granularity, crate::time::Granularity::Week);
    assert_eq!(e.phrase, "", "a span of several phrases keeps none");
}
