//! Assembly over hand-built and random candidates, counted with a stand-in tokenizer (one
//! token per word and per newline run: exact for this counter, so the budget check is real).

use super::*;
use crate::memory::MessageId;
use proptest::prelude::*;

struct Words;

impl TokenCounter for Words {
    fn name(&self) -> &str {
        "words"
    }
    fn count(&self, text: &str) -> u32 {
        let words = text.split_whitespace().count();
        let newlines = text.split('\n').count().saturating_sub(1);
        (words + newlines) as u32
    }
}

/// Counts as [`Words`] does plus two tokens per line of a whole pack (the per-line estimate
/// charges one): the whole always counts more than its parts. Records how many bytes it read.
struct Costly(std::sync::atomic::AtomicUsize);

impl TokenCounter for Costly {
    fn name(&self) -> &str {
        "costly"
    }
    fn count(&self, text: &str) -> u32 {
        self.0
            .fetch_add(text.len(), std::sync::atomic::Ordering::Relaxed);
        let lines = text.matches('\n').count();
        Words.count(text) + if lines > 1 { 2 * lines as u32 } else { 0 }
    }
}

#[test]
fn the_exact_check_renders_the_pack_a_logarithmic_number_of_times() {
    // 4,000 one-word memories; the estimate fits all of them, the exact count does not.
    let cands: Vec<Candidate> = (0..4000)
        .map(|i| {
            cand(
                Section::Memories,
                item("memory", &format!("m{i}"), "word", Reason::Matched, vec![]),
                1.0 + i as f32,
                None,
                i,
            )
        })
        .collect();
    let text_bytes: usize = cands
        .iter()
        .map(|c| "- ".len() + c.item.text.len() + 1)
        .sum();
    let counter = Costly(std::sync::atomic::AtomicUsize::new(0));
    let pack = assemble(cands, 12_000, &counter, &PackParams::default());
    assert!(pack.used_tokens <= 12_000, "{}", pack.used_tokens);
    assert!(
        pack.sections[0].items.len() > 1000,
        "kept {}",
        pack.sections[0].items.len()
    );
    let read = counter.0.load(std::sync::atomic::Ordering::Relaxed);
    // Dropping one item per rendering read the pack about a thousand times.
    assert!(
        read <= 24 * text_bytes,
        "the counter read {read} bytes for {text_bytes} bytes of candidates"
    );
}

fn item(kind: &str, id: &str, text: &str, reason: Reason, messages: Vec<MessageId>) -> PackItem {
    PackItem {
        kind: kind.into(),
        id: id.into(),
        text: text.into(),
        tokens: 0,
        reason,
        score: None,
        from: None,
        message_ids: messages,
        at: None,
        event_time: None,
    }
}

fn cand(
    section: Section,
    it: PackItem,
    value: f32,
    session: Option<&str>,
    order: i64,
) -> Candidate {
    Candidate {
        section,
        item: it,
        value,
        block: session.map(|s| Block {
            key: s.into(),
            header: format!("[{s}]"),
            order: 0,
        }),
        order,
        verbatim: false,
        full: None,
    }
}

fn sample() -> (Vec<Candidate>, MessageId) {
    let m = MessageId::new();
    let turn = item(
        "turn",
        "t1",
        "Ann: I adopted a greyhound",
        Reason::Matched,
        vec![m],
    );
    let mut raw = item(
        "memory",
        "r1",
        "I adopted a greyhound",
        Reason::Matched,
        vec![m],
    );
    raw.score = Some(0.9);
    let mut raw = cand(Section::Memories, raw, 0.9, None, 0);
    raw.verbatim = true;
    let fact = item("memory", "f1", "Ann owns a dog", Reason::Matched, vec![m]);
    let profile = item("profile", "p", "pets: a greyhound", Reason::Profile, vec![]);
    let recent = item(
        "page",
        "s1",
        "Ann: see you tomorrow",
        Reason::Recent,
        vec![],
    );
    (
        vec![
            cand(Section::Segments, turn, 0.2, Some("one"), 3),
            raw,
            cand(Section::Memories, fact, 0.5, None, 1),
            cand(Section::Profile, profile, 1e6, None, 0),
            cand(Section::ShortTerm, recent, 2.0, None, 0),
        ],
        m,
    )
}

#[test]
fn sections_come_in_order_with_reasons_and_token_counts() {
    let (cands, _) = sample();
    let pack = assemble(cands, 1000, &Words, &PackParams::default());
    let order: Vec<Section> = pack.sections.iter().map(|s| s.section).collect();
    assert_eq!(
        order,
        vec![
            Section::Profile,
            Section::ShortTerm,
            Section::Segments,
            Section::Memories
        ]
    );
    let reasons: Vec<(String, Reason)> = pack
        .sections
        .iter()
        .flat_map(|s| &s.items)
        .map(|i| (i.id.clone(), i.reason))
        .collect();
    assert_eq!(reasons[0], ("p".into(), Reason::Profile));
    assert_eq!(reasons[1], ("s1".into(), Reason::Recent));
    for i in pack.sections.iter().flat_map(|s| &s.items) {
        assert!(i.tokens > 0, "{i:?}");
    }
    assert_eq!(pack.used_tokens, Words.count(&pack.rendered));
    assert!(pack
        .rendered
        .starts_with("## User profile\npets: a greyhound\n"));
    assert!(pack
        .rendered
        .contains("[one]\nAnn: I adopted a greyhound\n"));
    assert_eq!(pack.tokenizer, "words");
}

#[test]
fn a_raw_memory_shown_by_its_turn_appears_once_and_lifts_the_turn() {
    let (cands, _) = sample();
    let pack = assemble(cands, 1000, &Words, &PackParams::default());
    let ids: Vec<&str> = pack
        .sections
        .iter()
        .flat_map(|s| &s.items)
        .map(|i| i.id.as_str())
        .collect();
    assert!(!ids.contains(&"r1"), "the raw repeat is dropped: {ids:?}");
    assert!(
        ids.contains(&"f1"),
        "a fact with the same source stays: {ids:?}"
    );
    let turn = pack.sections[2]
        .items
        .iter()
        .find(|i| i.id == "t1")
        .unwrap();
    assert_eq!(turn.score, Some(0.9), "the turn takes the memory's match");
    assert_eq!(pack.rendered.matches("adopted a greyhound").count(), 1);
    assert_eq!(pack.omitted, 0);
}

#[test]
fn what_does_not_fit_is_counted_and_the_most_valuable_is_kept() {
    let (cands, _) = sample();
    let small = assemble(cands.clone(), 12, &Words, &PackParams::default());
    assert!(small.used_tokens <= 12, "{}", small.rendered);
    assert_eq!(small.sections[0].section, Section::Profile);
    assert!(small.omitted >= 2, "{small:?}");
    let none = assemble(cands, 2, &Words, &PackParams::default());
    assert_eq!(none.rendered, "");
    assert_eq!(none.used_tokens, 0);
    assert_eq!(
        none.omitted, 4,
        "four candidates after the raw repeat merged"
    );
}

#[test]
fn session_blocks_share_one_header_in_conversation_order() {
    let mut cands = Vec::new();
    for (i, text) in ["A: one", "B: two", "A: three"].iter().enumerate() {
        let it = item("turn", &format!("t{i}"), text, Reason::Linked, vec![]);
        // Value order is the reverse of conversation order.
        cands.push(cand(
            Section::Segments,
            it,
            1.0 - i as f32 * 0.1,
            Some("s"),
            10 - i as i64,
        ));
    }
    let pack = assemble(cands, 100, &Words, &PackParams::default());
    assert_eq!(
        pack.rendered,
        "## Earlier conversation excerpts\n[s]\nA: three\nB: two\nA: one\n"
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn the_pack_never_exceeds_its_budget(
        budget in 1u32..400,
        exponent in 0.0f32..1.5,
        items in prop::collection::vec(
            (0usize..4, "[a-z]{1,8}( [a-z]{1,8}){0,12}", 0.0f32..3.0, prop::option::of(0usize..3), any::<bool>()),
            0..40,
        ),
    ) {
        let sections = [Section::Profile, Section::ShortTerm, Section::Segments, Section::Memories];
        let messages: Vec<MessageId> = (0..5).map(|_| MessageId::new()).collect();
        let cands: Vec<Candidate> = items
            .iter()
            .enumerate()
            .map(|(i, (s, text, value, session, verbatim))| {
                let kind = if *s == 2 { "turn" } else { "memory" };
                let mut c = cand(
                    sections[*s],
                    item(kind, &format!("i{i}"), text, Reason::Matched, vec![messages[i % 5]]),
                    *value,
                    session.map(|k| ["x", "y", "z"][k]),
                    i as i64,
                );
                c.verbatim = *verbatim && kind == "memory";
                // Some turns are excerpts of a longer whole.
                if kind == "turn" && *verbatim {
                    c.full = Some(format!("{text} and then some more words"));
                }
                c
            })
            .collect();
        let n = cands.len();
        let pack = assemble(cands, budget, &Words, &PackParams { size_exponent: exponent });
        prop_assert!(pack.used_tokens <= budget);
        prop_assert_eq!(pack.used_tokens, Words.count(&pack.rendered));
        let shown: usize = pack.sections.iter().map(|s| s.items.len()).sum();
        prop_assert!(shown + pack.omitted as usize <= n);
        for w in pack.sections.windows(2) {
            prop_assert!(w[0].section < w[1].section);
        }
    }
}

#[test]
fn consecutive_lines_of_one_page_are_one_item_with_the_best_reason() {
    let (a, b) = (MessageId::new(), MessageId::new());
    let mut first = item("page", "p1", "Ann: hi", Reason::Linked, vec![a]);
    first.from = Some("p1".into());
    let mut second = item(
        "page",
        "p1",
        "Bo: I adopted a greyhound",
        Reason::Matched,
        vec![b],
    );
    second.score = Some(0.8);
    let other = item("page", "p2", "Ann: lovely", Reason::Linked, vec![]);
    let cands = vec![
        cand(Section::Segments, first, 0.4, Some("s"), 1),
        cand(Section::Segments, second, 0.8, Some("s"), 2),
        cand(Section::Segments, other, 0.4, Some("s"), 3),
    ];
    let pack = assemble(cands, 100, &Words, &PackParams::default());
    let items = &pack.sections[0].items;
    assert_eq!(items.len(), 2, "{items:?}");
    assert_eq!(items[0].text, "Ann: hi\nBo: I adopted a greyhound");
    assert_eq!(items[0].message_ids, vec![a, b]);
    assert_eq!(items[0].reason, Reason::Matched);
    assert_eq!(items[0].score, Some(0.8));
    assert_eq!(items[0].from, None);
    assert_eq!(items[0].tokens, 2 + 5);
    assert_eq!(items[1].id, "p2");
}

#[test]
fn excerpts_are_shown_whole_only_with_the_room_left_after_every_item_that_fits() {
    let turn = |id: &str, text: &str, value: f32, order: i64| {
        let mut c = cand(
            Section::Segments,
            item("turn", id, text, Reason::Matched, vec![MessageId::new()]),
            value,
            Some("s"),
            order,
        );
        c.full = Some(format!("{text} said in full with many more words"));
        c
    };
    let cands = || vec![turn("a", "alpha …", 2.0, 0), turn("b", "beta …", 1.0, 1)];
    // Room for both excerpts and one whole: the more valuable one is shown whole.
    let header = Words.count("## Earlier conversation excerpts\n[s]\n");
    let excerpts = Words.count("alpha …\nbeta …\n");
    let budget = header + excerpts + 7;
    let pack = assemble(cands(), budget, &Words, &PackParams::default());
    let texts: Vec<&str> = pack.sections[0]
        .items
        .iter()
        .map(|i| i.text.as_str())
        .collect();
    assert_eq!(
        texts,
        ["alpha … said in full with many more words", "beta …"]
    );
    assert!(pack.used_tokens <= budget);
    // Room for the excerpts only: both stay excerpts, neither is dropped for a whole one.
    let pack = assemble(
        cands(),
        header + excerpts + 1,
        &Words,
        &PackParams::default(),
    );
    let texts: Vec<&str> = pack.sections[0]
        .items
        .iter()
        .map(|i| i.text.as_str())
        .collect();
    assert_eq!(texts, ["alpha …", "beta …"]);
}

#[test]
fn a_segment_says_when_its_events_happened_and_the_budget_counts_it() {
    use chrono::TimeZone;
    let day = |d| chrono::Utc.with_ymd_and_hms(2023, 5, d, 0, 0, 0).unwrap();
    let mut dated = item(
        "segment",
        "g1",
        "the move to Lisbon",
        Reason::Matched,
        vec![],
    );
    dated.event_time = Some(crate::time::EventTime {
        start: day(7),
        end: day(29),
        granularity: crate::time::Granularity::Week,
        phrase: String::new(),
        source: crate::time::EventTimeSource::Text,
    });
    let plain = item("segment", "g2", "green tea", Reason::Matched, vec![]);
    let pack = assemble(
        vec![
            cand(Section::Segments, dated, 1.0, None, 0),
            cand(Section::Segments, plain, 0.5, None, 1),
        ],
        1000,
        &Words,
        &PackParams::default(),
    );
    assert!(
        pack.rendered
            .contains("Topic: the move to Lisbon (between Sun 7 May 2023 and Sun 28 May 2023)\n"),
        "{}",
        pack.rendered
    );
    assert!(
        pack.rendered.contains("Topic: green tea\n"),
        "{}",
        pack.rendered
    );
    let dated_tokens = pack.sections[0].items[0].tokens;
    assert_eq!(
        dated_tokens,
        Words.count("Topic: the move to Lisbon (between Sun 7 May 2023 and Sun 28 May 2023)")
    );
}
