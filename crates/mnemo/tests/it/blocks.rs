//! Core memory blocks through the facade: packs start with the pinned blocks (counted first,
//! an error when they do not fit, left out on request, search unchanged), 10,000 blocks in one
//! scope, scope erasure down to the file's bytes, and seeding from the profile or the facts.

use crate::erasure::occurrences;
use mnemo::core::blocks::BlockActor;
use mnemo::core::pack::{ContextOptions, Reason, Section};
use mnemo::core::*;
use mnemo::{AddRequest, ContextRequest, Memory, SeedSource};
use mnemo_testkit::HashEmbedder;
use std::sync::Arc;

fn engine(store: Arc<dyn Store>) -> Memory {
    Memory::from_parts(store, Arc::new(HashEmbedder), RankParams::default()).unwrap()
}

fn in_memory() -> Memory {
    engine(Arc::new(
        mnemo_store_sqlite::SqliteStore::open_in_memory().unwrap(),
    ))
}

fn label(s: &str) -> BlockLabel {
    BlockLabel::new(s).unwrap()
}

fn ask(scope: &Scope, budget: u32, no_blocks: bool) -> ContextRequest {
    ContextRequest {
        scope: scope.clone(),
        query: "where does Ann live?".into(),
        budget_tokens: budget,
        options: ContextOptions {
            no_blocks,
            ..ContextOptions::default()
        },
    }
}

#[tokio::test]
async fn packs_start_with_the_pinned_blocks_and_search_is_unchanged() {
    let m = in_memory();
    let ann = Scope::user("ann").unwrap();
    m.add(AddRequest::text(ann.clone(), "Ann lives in Lisbon"))
        .await
        .unwrap();
    let search = || m.search(SearchRequest::new(ann.clone(), "where does Ann live?", 5));
    let before: Vec<MemoryId> = search()
        .await
        .unwrap()
        .results
        .iter()
        .map(|h| h.memory.id)
        .collect();
    let mut persona = NewBlock::new(ann.clone(), label("persona"), "I am Ann's travel planner.");
    persona.description = "Who the agent is".into();
    m.create_block(persona).await.unwrap();
    m.create_block(NewBlock::new(
        ann.clone(),
        label("human"),
        "Ann prefers metric units.",
    ))
    .await
    .unwrap();
    let after: Vec<MemoryId> = search()
        .await
        .unwrap()
        .results
        .iter()
        .map(|h| h.memory.id)
        .collect();
    assert_eq!(before, after, "blocks never enter search");

    let pack = m.context(ask(&ann, 400, false)).await.unwrap();
    assert!(
        pack.rendered.starts_with("## Core memory"),
        "{}",
        pack.rendered
    );
    let (h, p, l) = (
        pack.rendered
            .find("### human [25/2000 chars]")
            .expect("human"),
        pack.rendered.find("### persona").expect("persona"),
        pack.rendered.find("Lisbon").expect("the memory"),
    );
    assert!(h < p && p < l, "{}", pack.rendered);
    assert!(pack.rendered.contains("Purpose: Who the agent is"));
    assert_eq!(pack.sections[0].section, Section::Blocks);
    assert!(pack.sections[0]
        .items
        .iter()
        .all(|i| i.reason == Reason::Pinned && i.kind == "block"));
    assert!(pack.used_tokens <= 400);

    let bare = m.context(ask(&ann, 400, true)).await.unwrap();
    assert!(!bare.rendered.contains("Core memory") && bare.rendered.contains("Lisbon"));

    // The blocks are counted first: a budget that cannot hold them names what they need.
    let need = {
        let tiny = m.context(ask(&ann, 5, false)).await.unwrap_err();
        assert_eq!(tiny.kind(), ErrorKind::InvalidInput);
        let msg = tiny.to_string();
        assert!(
            msg.contains("budget_tokens") && msg.contains("the core memory blocks need"),
            "{msg}"
        );
        let n: u32 = msg
            .split("need ")
            .nth(1)
            .unwrap()
            .split(' ')
            .next()
            .unwrap()
            .parse()
            .unwrap();
        n
    };
    let exact = m.context(ask(&ann, need, false)).await.unwrap();
    assert!(exact.rendered.contains("metric") && !exact.rendered.contains("Lisbon"));
    assert!(m.context(ask(&ann, need - 1, false)).await.is_err());
}

#[tokio::test]
async fn ten_thousand_blocks_page_and_the_next_one_is_refused() {
    let m = in_memory();
    assert_eq!(m.block_limits().max_per_scope, 10_000);
    let ann = Scope::user("ann").unwrap();
    let bot = Scope::from_parts(Some("ann"), Some("bot"), None).unwrap();
    for i in 0..10_000 {
        let mut new = NewBlock::new(
            ann.clone(),
            label(&format!("b{i:05}")),
            format!("value {i}"),
        );
        if i % 5_000 == 7 {
            new.agents = vec![AgentId::new("bot").unwrap()];
        }
        m.create_block(new).await.unwrap();
    }
    let over = m
        .create_block(NewBlock::new(ann.clone(), label("one_more"), "x"))
        .await
        .unwrap_err();
    assert!(
        over.to_string().contains("maximum of 10000 blocks"),
        "{over}"
    );
    let (mut cursor, mut pages, mut seen) = (None, 0, 0);
    loop {
        let page = m
            .blocks(BlockQuery {
                scope: ann.clone(),
                limit: 1_000,
                cursor,
            })
            .await
            .unwrap();
        pages += 1;
        seen += page.blocks.len();
        match page.next_cursor {
            Some(c) => cursor = Some(c),
            None => break,
        }
    }
    assert_eq!((pages, seen), (10, 10_000));
    // The agent's pack renders only the two blocks attached to it.
    let pack = m.context(ask(&bot, 2_000, false)).await.unwrap();
    assert_eq!(pack.sections[0].items.len(), 2, "{}", pack.rendered);
    assert!(pack.rendered.contains("### b00007") && pack.rendered.contains("### b05007"));
}

#[tokio::test]
async fn a_scope_erase_leaves_no_byte_of_its_blocks() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("mnemo.db");
    let store = Arc::new(mnemo_store_sqlite::SqliteStore::open(&path).unwrap());
    let m = engine(store.clone());
    let ann = Scope::user("ann").unwrap();
    let secret = "Ann's locker code is Vx88231q";
    m.create_block(NewBlock::new(ann.clone(), label("human"), secret))
        .await
        .unwrap();
    let edit = BlockEdit {
        scope: ann.clone(),
        label: label("human"),
        change: BlockChange::Append {
            text: format!("again: {secret}"),
        },
        expected_version: None,
        actor: BlockActor::owner(),
        reason: None,
    };
    m.edit_block(edit).await.unwrap();
    store.copy_to(&dir.path().join("before.db")).unwrap();
    assert!(
        occurrences(&dir.path().join("before.db"), secret).0 > 0,
        "the check can see it"
    );
    store
        .erase_log(
            &EraseLog::new(&ann, EraseTarget::Scope).unwrap(),
            &WritePlan::default(),
        )
        .unwrap();
    assert_eq!(occurrences(&path, secret), (0, 0));
    drop(m);
    drop(store);
    assert_eq!(occurrences(&path, secret), (0, 0));
}

#[tokio::test]
async fn seeding_takes_the_profile_when_there_is_one_else_the_facts() {
    let m = in_memory();
    let ann = Scope::user("ann").unwrap();
    let none = m
        .seed_human_block(ann.clone(), BlockActor::owner())
        .await
        .unwrap_err();
    assert_eq!(none.kind(), ErrorKind::InvalidInput);
    m.add(AddRequest::text(ann.clone(), "I moved to Porto"))
        .await
        .unwrap();
    m.add(AddRequest::text(ann.clone(), "I love ramen"))
        .await
        .unwrap();
    let (b, source) = m
        .seed_human_block(ann.clone(), BlockActor::owner())
        .await
        .unwrap();
    assert_eq!(source, SeedSource::Facts);
    assert_eq!(b.value, "- I moved to Porto\n- I love ramen");
    // A profile (as a chat model writes it) wins, and a second seed is one more version.
    let mut batch = mnemo_testkit::batch(
        &ann,
        "Ann: lives in Porto; vegetarian",
        serde_json::Value::Null,
    );
    batch.memories[0].kind = MemoryKind::Profile;
    m.store().write(vec![batch]).unwrap();
    let (b, source) = m
        .seed_human_block(ann.clone(), BlockActor::owner())
        .await
        .unwrap();
    assert_eq!(
        (source, b.value.as_str(), b.version),
        (SeedSource::Profile, "Ann: lives in Porto; vegetarian", 2)
    );
    let history = m.block_history(ann, label("human"), 10).await.unwrap();
    assert_eq!(
        history.iter().map(|e| e.op).collect::<Vec<_>>(),
        [BlockOp::Create, BlockOp::Rewrite]
    );
}
