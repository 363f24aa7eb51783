use super::*;
use crate::pack::{Candidate, PackItem, PackParams, Reason, Section, TokenCounter};
use crate::store::{BlockQuery, NewBlock};

/// Counts whitespace-separated words (an exact counter for these texts).
struct Words;

impl TokenCounter for Words {
    fn name(&self) -> &str {
        "words"
    }
    fn count(&self, text: &str) -> u32 {
        text.split_whitespace().count() as u32
    }
}

fn label(s: &str) -> BlockLabel {
    BlockLabel::new(s).unwrap()
}

fn block(owner: Scope, l: &str, value: &str) -> MemoryBlock {
    NewBlock::new(owner, label(l), value)
        .build(&BlockLimits::default(), chrono::Utc::now())
        .unwrap()
        .0
}

fn ann() -> Scope {
    Scope::user("ann").unwrap()
}

fn apply(b: &MemoryBlock, change: BlockChange) -> crate::Result<MemoryBlock> {
    change
        .apply(b, &BlockActor::owner(), None, None, chrono::Utc::now())
        .map(|(n, _)| n)
}

fn field(e: &crate::Error) -> &str {
    match e {
        crate::Error::InvalidInput { field, .. } => field,
        other => panic!("not invalid input: {other}"),
    }
}

#[test]
fn labels_are_lowercase_words_of_at_most_64_characters() {
    for ok in ["human", "persona", "task_2", &"a".repeat(64)] {
        assert_eq!(BlockLabel::new(ok).unwrap().as_str(), ok);
    }
    for bad in ["", "Human", "my label", "naïve", "a-b", &"a".repeat(65)] {
        let e = BlockLabel::new(bad).unwrap_err();
        assert_eq!(field(&e), "label", "{bad:?}");
    }
}

#[test]
fn the_three_edits_append_replace_and_rewrite() {
    let b = block(ann(), "human", "Ann likes tea.");
    let a = apply(
        &b,
        BlockChange::Append {
            text: "Ann uses metric units.".into(),
        },
    )
    .unwrap();
    assert_eq!(a.value, "Ann likes tea.\nAnn uses metric units.");
    assert_eq!(a.version, 2);
    let r = apply(
        &a,
        BlockChange::Replace {
            old: "tea".into(),
            new: "coffee".into(),
        },
    )
    .unwrap();
    assert_eq!(r.value, "Ann likes coffee.\nAnn uses metric units.");
    let w = apply(
        &r,
        BlockChange::Rewrite {
            value: "New.".into(),
        },
    )
    .unwrap();
    assert_eq!((w.value.as_str(), w.version), ("New.", 4));
}

#[test]
fn a_replace_needs_exactly_one_occurrence_and_says_how_many() {
    let b = block(ann(), "human", "Ann. Ann. Ann.");
    let e = apply(
        &b,
        BlockChange::Replace {
            old: "Ann".into(),
            new: "Bo".into(),
        },
    )
    .unwrap_err();
    assert_eq!(field(&e), "old");
    assert!(e.to_string().contains("occurs 3 times"), "{e}");
    let e = apply(
        &b,
        BlockChange::Replace {
            old: "Zed".into(),
            new: "Bo".into(),
        },
    )
    .unwrap_err();
    assert!(e.to_string().contains("occurs 0 times"), "{e}");
    let e = apply(
        &b,
        BlockChange::Replace {
            old: String::new(),
            new: "Bo".into(),
        },
    )
    .unwrap_err();
    assert_eq!(field(&e), "old");
    let e = apply(&b, BlockChange::Append { text: "  ".into() }).unwrap_err();
    assert_eq!(field(&e), "text");
}

#[test]
fn an_edit_over_the_limit_is_refused_with_both_sizes_never_truncated() {
    let mut new = NewBlock::new(ann(), label("human"), "0123456789");
    new.limit = Some(12);
    let (b, _) = new
        .build(&BlockLimits::default(), chrono::Utc::now())
        .unwrap();
    let e = apply(&b, BlockChange::Append { text: "abc".into() }).unwrap_err();
    assert_eq!(field(&e), "value");
    let msg = e.to_string();
    assert!(
        msg.contains("14 characters") && msg.contains("limit of 12") && msg.contains("holds 10"),
        "{msg}"
    );
    // A limit above the server's maximum, and a value over its own limit at creation.
    let mut big = NewBlock::new(ann(), label("human"), "x");
    big.limit = Some(BlockLimits::default().max_limit + 1);
    assert_eq!(
        field(
            &big.build(&BlockLimits::default(), chrono::Utc::now())
                .unwrap_err()
        ),
        "limit"
    );
    let mut long = NewBlock::new(ann(), label("human"), "x".repeat(30));
    long.limit = Some(20);
    assert_eq!(
        field(
            &long
                .build(&BlockLimits::default(), chrono::Utc::now())
                .unwrap_err()
        ),
        "value"
    );
}

#[test]
fn read_only_blocks_refuse_agents_and_take_the_owner() {
    let mut new = NewBlock::new(ann(), label("policy"), "Be kind.");
    new.read_only = true;
    let (b, _) = new
        .build(&BlockLimits::default(), chrono::Utc::now())
        .unwrap();
    let agent = BlockActor::Agent { id: "bot".into() };
    let change = BlockChange::Append {
        text: "Be brief.".into(),
    };
    let e = change
        .apply(&b, &agent, None, None, chrono::Utc::now())
        .unwrap_err();
    assert_eq!(field(&e), "read_only");
    let (n, ev) = change
        .apply(
            &b,
            &BlockActor::Owner {
                id: Some("key1".into()),
            },
            None,
            Some("policy"),
            chrono::Utc::now(),
        )
        .unwrap();
    assert_eq!(n.value, "Be kind.\nBe brief.");
    assert_eq!(
        (ev.actor.as_deref(), ev.reason.as_deref()),
        (Some("key1"), Some("policy"))
    );
    assert_eq!(
        (ev.before.as_deref(), ev.after.as_deref()),
        (Some("Be kind."), Some("Be kind.\nBe brief."))
    );
}

#[test]
fn a_stale_expected_version_is_a_conflict() {
    let b = block(ann(), "human", "x");
    let change = BlockChange::Rewrite { value: "y".into() };
    let e = change
        .apply(&b, &BlockActor::owner(), Some(7), None, chrono::Utc::now())
        .unwrap_err();
    assert_eq!(e.kind(), crate::ErrorKind::Conflict);
    assert!(
        e.to_string().contains("version 1") && e.to_string().contains("version 7"),
        "{e}"
    );
    assert!(change
        .apply(&b, &BlockActor::owner(), Some(1), None, chrono::Utc::now())
        .is_ok());
}

#[test]
fn agents_see_their_own_and_attached_blocks_and_users_see_all_of_theirs() {
    let u = ann();
    let ua = Scope::from_parts(Some("ann"), Some("bot"), None).unwrap();
    let other_agent = Scope::from_parts(Some("ann"), Some("helper"), None).unwrap();
    let mut shared = block(u.clone(), "human", "x");
    let own = block(ua.clone(), "scratch", "y");
    assert!(shared.seen_by(&u) && own.seen_by(&u));
    assert!(!shared.seen_by(&ua) && own.seen_by(&ua) && !own.seen_by(&other_agent));
    shared = apply(
        &shared,
        BlockChange::Attach {
            agent_id: AgentId::new("bot").unwrap(),
        },
    )
    .unwrap();
    assert!(shared.seen_by(&ua) && !shared.seen_by(&other_agent));
    assert!(shared.pinned_for(&ua) && shared.pinned_for(&u) && !own.pinned_for(&u));
    assert!(!shared.seen_by(&Scope::user("bo").unwrap()));
    // Agents do not attach; an agent's block is not attached to others.
    let e = BlockChange::Attach {
        agent_id: AgentId::new("x").unwrap(),
    }
    .apply(
        &shared,
        &BlockActor::Agent { id: "bot".into() },
        None,
        None,
        chrono::Utc::now(),
    )
    .unwrap_err();
    assert_eq!(field(&e), "agent_id");
    assert!(apply(
        &own,
        BlockChange::Attach {
            agent_id: AgentId::new("x").unwrap()
        }
    )
    .is_err());
    // A run owns no block.
    let run = Scope::from_parts(Some("ann"), None, Some("r1")).unwrap();
    assert_eq!(
        field(
            &NewBlock::new(run, label("human"), "x")
                .build(&BlockLimits::default(), chrono::Utc::now())
                .unwrap_err()
        ),
        "run_id"
    );
}

fn memory_candidate(text: &str) -> Candidate {
    Candidate {
        section: Section::Memories,
        item: PackItem {
            kind: "memory".into(),
            id: text.into(),
            text: text.into(),
            tokens: 0,
            reason: Reason::Matched,
            score: Some(0.5),
            from: None,
            message_ids: Vec::new(),
            at: None,
            event_time: None,
        },
        value: 0.5,
        block: None,
        order: 0,
        verbatim: false,
        full: None,
    }
}

#[test]
fn packs_start_with_the_blocks_in_label_order_and_count_them_first() {
    let mut persona = block(ann(), "persona", "I am a helpful travel agent.");
    persona.description = "Who the agent is".into();
    let human = block(ann(), "human", "Ann prefers metric units.");
    let cands = vec![memory_candidate("Ann flew to Oslo in May")];
    let pack = pack_with_blocks(
        &[persona.clone(), human.clone()],
        cands.clone(),
        200,
        &Words,
        &PackParams::default(),
    )
    .unwrap();
    assert!(
        pack.rendered.starts_with(BLOCKS_HEADER),
        "{}",
        pack.rendered
    );
    let (h, p) = (
        pack.rendered.find("### human").unwrap(),
        pack.rendered.find("### persona").unwrap(),
    );
    assert!(h < p, "label order");
    assert!(
        pack.rendered.contains("[25/2000 chars]")
            && pack.rendered.contains("Purpose: Who the agent is")
    );
    assert!(pack.rendered.contains("Ann flew to Oslo"));
    assert_eq!(pack.sections[0].section, Section::Blocks);
    assert_eq!(pack.sections[0].items[0].reason, Reason::Pinned);
    assert!(pack.used_tokens <= 200 && pack.used_tokens == Words.count(&pack.rendered));
    // The blocks take their tokens first: a budget that holds only them shows only them.
    let need = Words.count(&render_blocks(&[persona.clone(), human.clone()]));
    let tight = pack_with_blocks(
        &[persona.clone(), human.clone()],
        cands.clone(),
        need,
        &Words,
        &PackParams::default(),
    )
    .unwrap();
    assert!(!tight.rendered.contains("Oslo") && tight.rendered.contains("metric"));
    // Too small a budget says how many tokens the blocks need.
    let e = pack_with_blocks(
        &[persona, human],
        cands,
        need - 1,
        &Words,
        &PackParams::default(),
    )
    .unwrap_err();
    assert_eq!(field(&e), "budget_tokens");
    assert!(
        e.to_string().contains(&format!("need {need} tokens")),
        "{e}"
    );
}

#[test]
fn list_cursors_round_trip_and_bad_ones_name_the_field() {
    let b = block(ann(), "human", "x");
    let q = BlockQuery {
        scope: ann(),
        limit: 10,
        cursor: Some(BlockQuery::cursor_after(&b)),
    };
    assert_eq!(q.after().unwrap(), Some(("human".into(), b.id)));
    let bad = BlockQuery {
        cursor: Some("nope".into()),
        ..q.clone()
    };
    assert_eq!(field(&bad.after().unwrap_err()), "cursor");
    let zero = BlockQuery { limit: 0, ..q };
    assert_eq!(field(&zero.after().unwrap_err()), "limit");
}

/// A counter whose whole pack counts more than its lines (two more per line): the seam between
/// blocks and the rest costs tokens no per-line estimate saw.
struct WholeCostsMore;

impl TokenCounter for WholeCostsMore {
    fn name(&self) -> &str {
        "whole-costs-more"
    }
    fn count(&self, text: &str) -> u32 {
        let lines = text.matches('\n').count() as u32;
        Words.count(text) + if lines > 1 { 2 * lines } else { 0 }
    }
}

#[test]
fn a_pack_with_blocks_fits_its_budget_exactly_whatever_the_seam_costs() {
    let blocks = [
        block(ann(), "human", "Ann prefers metric units."),
        block(ann(), "persona", "A calm travel agent."),
    ];
    let cands: Vec<Candidate> = (0..40)
        .map(|i| memory_candidate(&format!("Ann note {i} about the Oslo trip")))
        .collect();
    let need = WholeCostsMore.count(&render_blocks(&blocks));
    let mut shown_before = 0;
    for budget in need..need + 200 {
        let pack = pack_with_blocks(
            &blocks,
            cands.clone(),
            budget,
            &WholeCostsMore,
            &PackParams::default(),
        )
        .unwrap();
        assert_eq!(pack.used_tokens, WholeCostsMore.count(&pack.rendered));
        assert!(
            pack.used_tokens <= budget,
            "{} > {budget}",
            pack.used_tokens
        );
        assert!(pack.rendered.starts_with(BLOCKS_HEADER));
        let shown = pack
            .sections
            .iter()
            .skip(1)
            .map(|s| s.items.len())
            .sum::<usize>();
        assert!(
            shown + 2 >= shown_before,
            "a larger budget shows about as much or more"
        );
        shown_before = shown;
    }
    assert!(
        shown_before > 10,
        "{shown_before} items at the largest budget"
    );
}
