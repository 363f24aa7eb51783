//! The store contract for core memory blocks: labels resolved through the visibility rule,
//! edits versioned with their history, concurrent editors without lost updates, refusals that
//! write nothing, sharing between a user's agents, paging and the owner maximum, export and
//! import, scope erasure, reopen. Re-exported by `contract`.

use crate::*;
use mnemo_core::blocks::BlockActor;
use mnemo_core::*;

fn scope(user: Option<&str>, agent: Option<&str>) -> Scope {
    Scope::from_parts(user, agent, None).expect("scope")
}

fn label(s: &str) -> BlockLabel {
    BlockLabel::new(s).expect("label")
}

fn agent(s: &str) -> AgentId {
    AgentId::new(s).expect("agent")
}

fn create(store: &dyn Store, owner: &Scope, l: &str, value: &str) -> MemoryBlock {
    store
        .create_block(
            &NewBlock::new(owner.clone(), label(l), value),
            &BlockLimits::default(),
        )
        .expect("create")
}

fn edit(scope: &Scope, l: &str, change: BlockChange, actor: BlockActor) -> BlockEdit {
    BlockEdit {
        scope: scope.clone(),
        label: label(l),
        change,
        expected_version: None,
        actor,
        reason: Some("contract".into()),
    }
}

fn append(text: &str) -> BlockChange {
    BlockChange::Append { text: text.into() }
}

fn value_of(store: &dyn Store, scope: &Scope, l: &str) -> Option<(String, u64)> {
    store
        .block(scope, &label(l))
        .expect("read")
        .map(|b| (b.value, b.version))
}

pub fn blocks_are_created_edited_and_deleted_with_versioned_history(h: &dyn Harness) {
    let store = h.fresh();
    let ann = scope(Some("ann"), None);
    let b = create(store.as_ref(), &ann, "human", "Ann likes tea.");
    assert_eq!(
        (b.version, b.limit, b.read_only),
        (1, blocks::DEFAULT_BLOCK_LIMIT, false)
    );
    let owner = BlockActor::Owner {
        id: Some("key-1".into()),
    };
    let e = store.edit_block(&edit(
        &ann,
        "human",
        append("Ann uses metric units."),
        owner.clone(),
    ));
    assert_eq!(e.expect("append").version, 2);
    let r = BlockChange::Replace {
        old: "tea".into(),
        new: "coffee".into(),
    };
    store
        .edit_block(&edit(&ann, "human", r, owner.clone()))
        .expect("replace");
    let w = BlockChange::Rewrite {
        value: "Ann: coffee, metric.".into(),
    };
    let last = store
        .edit_block(&edit(&ann, "human", w, owner.clone()))
        .expect("rewrite");
    assert_eq!(last.version, 4);
    assert_eq!(
        value_of(store.as_ref(), &ann, "human"),
        Some(("Ann: coffee, metric.".into(), 4))
    );
    let history = store
        .block_history(&ann, &label("human"), 100)
        .expect("history");
    let ops: Vec<BlockOp> = history.iter().map(|e| e.op).collect();
    assert_eq!(
        ops,
        [
            BlockOp::Create,
            BlockOp::Append,
            BlockOp::Replace,
            BlockOp::Rewrite
        ]
    );
    assert_eq!(
        history.iter().map(|e| e.version).collect::<Vec<_>>(),
        [1, 2, 3, 4]
    );
    let rep = &history[2];
    assert_eq!(
        rep.before.as_deref(),
        Some("Ann likes tea.\nAnn uses metric units.")
    );
    assert_eq!(
        rep.after.as_deref(),
        Some("Ann likes coffee.\nAnn uses metric units.")
    );
    assert_eq!(
        (rep.actor.as_deref(), rep.reason.as_deref()),
        (Some("key-1"), Some("contract"))
    );
    assert_eq!(
        store.block_history(&ann, &label("human"), 2).unwrap().len(),
        2
    );
    // A second block with the label is refused for the same owner, taken by another.
    let again = store.create_block(
        &NewBlock::new(ann.clone(), label("human"), "x"),
        &BlockLimits::default(),
    );
    assert_eq!(again.unwrap_err().kind(), ErrorKind::InvalidInput);
    create(store.as_ref(), &scope(Some("bo"), None), "human", "Bo");
    let gone = store
        .delete_block(&ann, &label("human"), &owner, None)
        .expect("delete");
    assert_eq!(gone.value, "Ann: coffee, metric.");
    assert_eq!(store.block(&ann, &label("human")).unwrap(), None);
    let missing = store.edit_block(&edit(&ann, "human", append("x"), owner));
    assert_eq!(missing.unwrap_err().kind(), ErrorKind::NotFound);
}

pub fn concurrent_block_editors_lose_no_update(h: &dyn Harness) {
    let store = h.fresh();
    let ann = scope(Some("ann"), None);
    create(store.as_ref(), &ann, "human", "");
    // Unconditional appends from many threads: every one lands.
    std::thread::scope(|s| {
        for t in 0..4 {
            let (store, ann) = (store.clone(), ann.clone());
            s.spawn(move || {
                for i in 0..5 {
                    store
                        .edit_block(&edit(
                            &ann,
                            "human",
                            append(&format!("t{t}-{i}")),
                            BlockActor::owner(),
                        ))
                        .expect("append");
                }
            });
        }
    });
    let (value, version) = value_of(store.as_ref(), &ann, "human").unwrap();
    assert_eq!(version, 21);
    for t in 0..4 {
        for i in 0..5 {
            assert!(
                value.lines().any(|l| l == format!("t{t}-{i}")),
                "t{t}-{i} lost: {value}"
            );
        }
    }
    // Two editors that read version 21 both rewrite with expected_version: exactly one wins.
    let results: Vec<Result<MemoryBlock>> = std::thread::scope(|s| {
        let handles: Vec<_> = ["first", "second"]
            .into_iter()
            .map(|v| {
                let (store, ann) = (store.clone(), ann.clone());
                s.spawn(move || {
                    let mut e = edit(
                        &ann,
                        "human",
                        BlockChange::Rewrite { value: v.into() },
                        BlockActor::owner(),
                    );
                    e.expected_version = Some(21);
                    store.edit_block(&e)
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let won: Vec<&MemoryBlock> = results.iter().filter_map(|r| r.as_ref().ok()).collect();
    assert_eq!(won.len(), 1, "{results:?}");
    let lost = results
        .iter()
        .find_map(|r| r.as_ref().err())
        .expect("a conflict");
    assert_eq!(lost.kind(), ErrorKind::Conflict, "{lost}");
    assert_eq!(
        value_of(store.as_ref(), &ann, "human"),
        Some((won[0].value.clone(), 22))
    );
}

pub fn refused_block_edits_write_nothing(h: &dyn Harness) {
    let store = h.fresh();
    let ann = scope(Some("ann"), None);
    let mut small = NewBlock::new(ann.clone(), label("notes"), "0123456789");
    small.limit = Some(12);
    store
        .create_block(&small, &BlockLimits::default())
        .expect("create");
    let mut policy = NewBlock::new(ann.clone(), label("policy"), "Be kind.");
    policy.read_only = true;
    policy.agents = vec![agent("bot")];
    store
        .create_block(&policy, &BlockLimits::default())
        .expect("create");
    let bot = BlockActor::Agent { id: "bot".into() };
    let cases: Vec<(BlockEdit, &str)> = vec![
        (
            edit(&ann, "notes", append("abc"), BlockActor::owner()),
            "value",
        ),
        (
            edit(
                &ann,
                "notes",
                BlockChange::Replace {
                    old: "".into(),
                    new: "x".into(),
                },
                BlockActor::owner(),
            ),
            "old",
        ),
        (
            edit(
                &ann,
                "notes",
                BlockChange::Replace {
                    old: "zz".into(),
                    new: "x".into(),
                },
                BlockActor::owner(),
            ),
            "old",
        ),
        (
            edit(
                &scope(Some("ann"), Some("bot")),
                "policy",
                append("Be brief."),
                bot.clone(),
            ),
            "read_only",
        ),
    ];
    for (e, field) in cases {
        match store.edit_block(&e) {
            Err(Error::InvalidInput { field: f, reason }) => {
                assert_eq!(f, field, "{reason}");
                if field == "value" {
                    assert!(
                        reason.contains("14 characters") && reason.contains("limit of 12"),
                        "{reason}"
                    );
                }
            }
            other => panic!("{field}: {other:?}"),
        }
    }
    assert_eq!(
        value_of(store.as_ref(), &ann, "notes"),
        Some(("0123456789".into(), 1))
    );
    assert_eq!(
        value_of(store.as_ref(), &ann, "policy"),
        Some(("Be kind.".into(), 1))
    );
    assert_eq!(
        store
            .block_history(&ann, &label("notes"), 10)
            .unwrap()
            .len(),
        1
    );
    let no_delete = store.delete_block(
        &scope(Some("ann"), Some("bot")),
        &label("policy"),
        &bot,
        None,
    );
    assert!(no_delete.is_err());
    // The owner edits a read-only block.
    let ok = store.edit_block(&edit(
        &ann,
        "policy",
        append("Be brief."),
        BlockActor::owner(),
    ));
    assert_eq!(ok.expect("owner").version, 2);
    let mut huge = NewBlock::new(ann.clone(), label("huge"), "");
    huge.limit = Some(BlockLimits::default().max_limit + 1);
    assert!(store.create_block(&huge, &BlockLimits::default()).is_err());
    assert_eq!(store.block(&ann, &label("huge")).unwrap(), None);
}

pub fn shared_blocks_are_seen_by_their_agents_only(h: &dyn Harness) {
    let store = h.fresh();
    let ann = scope(Some("ann"), None);
    let (bot, helper, other) = (
        scope(Some("ann"), Some("bot")),
        scope(Some("ann"), Some("helper")),
        scope(Some("ann"), Some("other")),
    );
    create(store.as_ref(), &ann, "human", "Ann likes tea.");
    create(store.as_ref(), &bot, "scratch", "bot's own");
    for a in ["bot", "helper"] {
        let e = edit(
            &ann,
            "human",
            BlockChange::Attach { agent_id: agent(a) },
            BlockActor::owner(),
        );
        store.edit_block(&e).expect("attach");
    }
    // An edit by one agent is seen by the other.
    store
        .edit_block(&edit(
            &bot,
            "human",
            append("Ann is vegetarian."),
            BlockActor::Agent { id: "bot".into() },
        ))
        .expect("bot edits");
    let seen = store
        .block(&helper, &label("human"))
        .unwrap()
        .expect("helper sees it");
    assert!(seen.value.ends_with("Ann is vegetarian."));
    assert_eq!(seen.agents, vec![agent("bot"), agent("helper")]);
    // Another agent of the user and another tenant see nothing of it.
    assert_eq!(store.block(&other, &label("human")).unwrap(), None);
    assert_eq!(store.block(&helper, &label("scratch")).unwrap(), None);
    assert_eq!(
        store
            .block(&scope(Some("bo"), None), &label("human"))
            .unwrap(),
        None
    );
    let bo_edit = store.edit_block(&edit(
        &scope(Some("bo"), None),
        "human",
        append("x"),
        BlockActor::owner(),
    ));
    assert_eq!(bo_edit.unwrap_err().kind(), ErrorKind::NotFound);
    let labels = |s: &Scope| -> Vec<String> {
        let q = BlockQuery {
            scope: s.clone(),
            limit: 100,
            cursor: None,
        };
        store
            .list_blocks(&q)
            .unwrap()
            .blocks
            .iter()
            .map(|b| b.label.to_string())
            .collect()
    };
    assert_eq!(labels(&ann), ["human", "scratch"]);
    assert_eq!(labels(&bot), ["human", "scratch"]);
    assert_eq!(labels(&helper), ["human"]);
    assert!(labels(&other).is_empty());
    let pinned = |s: &Scope| -> Vec<String> {
        store
            .pinned_blocks(s)
            .unwrap()
            .iter()
            .map(|b| b.label.to_string())
            .collect()
    };
    assert_eq!(pinned(&bot), ["human", "scratch"]);
    assert_eq!(pinned(&ann), ["human"]);
    // Detached, the helper no longer sees it.
    let d = edit(
        &ann,
        "human",
        BlockChange::Detach {
            agent_id: agent("helper"),
        },
        BlockActor::owner(),
    );
    store.edit_block(&d).expect("detach");
    assert_eq!(store.block(&helper, &label("human")).unwrap(), None);
}

pub fn block_listing_pages_and_the_owner_maximum_holds(h: &dyn Harness) {
    let store = h.fresh();
    let ann = scope(Some("ann"), None);
    let limits = BlockLimits {
        max_per_scope: 7,
        ..BlockLimits::default()
    };
    for i in 0..7 {
        let new = NewBlock::new(ann.clone(), label(&format!("b{i:02}")), format!("v{i}"));
        store.create_block(&new, &limits).expect("create");
    }
    let over = store.create_block(&NewBlock::new(ann.clone(), label("b99"), "x"), &limits);
    match over {
        Err(Error::InvalidInput { field, reason }) => {
            assert_eq!(field, "label");
            assert!(reason.contains("maximum of 7"), "{reason}");
        }
        other => panic!("{other:?}"),
    }
    // Another owner is not counted against ann.
    store
        .create_block(
            &NewBlock::new(scope(Some("ann"), Some("bot")), label("b99"), "x"),
            &limits,
        )
        .expect("another owner");
    let mut cursor = None;
    let mut seen = Vec::new();
    loop {
        let page = store
            .list_blocks(&BlockQuery {
                scope: ann.clone(),
                limit: 3,
                cursor,
            })
            .expect("page");
        assert!(page.blocks.len() <= 3);
        seen.extend(page.blocks.iter().map(|b| b.label.to_string()));
        match page.next_cursor {
            Some(c) => cursor = Some(c),
            None => break,
        }
    }
    let mut want: Vec<String> = (0..7).map(|i| format!("b{i:02}")).collect();
    want.push("b99".into());
    assert_eq!(seen, want);
    let bad = store.list_blocks(&BlockQuery {
        scope: ann,
        limit: 3,
        cursor: Some("x".into()),
    });
    assert_eq!(bad.unwrap_err().kind(), ErrorKind::InvalidInput);
}

pub fn blocks_move_through_export_and_go_with_their_scope(h: &dyn Harness) {
    let store = h.fresh();
    let ann = scope(Some("ann"), None);
    let mut new = NewBlock::new(ann.clone(), label("human"), "Ann's secret: zebra-7731");
    new.description = "About the user".into();
    new.agents = vec![agent("bot")];
    new.read_only = true;
    store
        .create_block(&new, &BlockLimits::default())
        .expect("create");
    store
        .edit_block(&edit(
            &ann,
            "human",
            append("more zebra-7731"),
            BlockActor::owner(),
        ))
        .expect("edit");
    create(
        store.as_ref(),
        &scope(Some("bo"), None),
        "human",
        "Bo's block",
    );
    let lines = crate::contract::export_lines(store.as_ref());
    assert_eq!(
        lines
            .iter()
            .filter(|l| l.contains("\"type\":\"block\""))
            .count(),
        2
    );
    let copy = h.fresh();
    copy.import(crate::contract::with_vectors(&lines))
        .expect("import");
    assert_eq!(crate::contract::export_lines(copy.as_ref()), lines);
    let b = copy
        .block(&scope(Some("ann"), Some("bot")), &label("human"))
        .unwrap()
        .expect("copied");
    assert_eq!(
        (b.version, b.read_only, b.description.as_str()),
        (2, true, "About the user")
    );
    assert_eq!(
        copy.block_history(&ann, &label("human"), 10).unwrap().len(),
        2
    );
    // Erasing ann's scope takes her blocks and their history, and leaves bo's.
    store
        .erase_log(
            &EraseLog::new(&ann, EraseTarget::Scope).unwrap(),
            &WritePlan::default(),
        )
        .expect("erase");
    assert_eq!(store.block(&ann, &label("human")).unwrap(), None);
    assert!(value_of(store.as_ref(), &scope(Some("bo"), None), "human").is_some());
    let after = crate::contract::export_lines(store.as_ref());
    assert!(after.iter().all(|l| !l.contains("zebra-7731")), "{after:?}");
    let recreated = create(store.as_ref(), &ann, "human", "fresh");
    assert_eq!(
        store
            .block_history(&ann, &label("human"), 10)
            .unwrap()
            .len(),
        1,
        "{recreated:?}"
    );
}

pub fn blocks_survive_reopen(h: &dyn Harness) {
    let store = h.fresh();
    let ann = scope(Some("ann"), None);
    create(store.as_ref(), &ann, "human", "Ann likes tea.");
    store
        .edit_block(&edit(&ann, "human", append("More."), BlockActor::owner()))
        .expect("edit");
    let store = h.reopen(store);
    assert_eq!(
        value_of(store.as_ref(), &ann, "human"),
        Some(("Ann likes tea.\nMore.".into(), 2))
    );
    assert_eq!(
        store
            .block_history(&ann, &label("human"), 10)
            .unwrap()
            .len(),
        2
    );
}
