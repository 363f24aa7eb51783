//! What pinned blocks cost a context pack: the same pack (one scope, 300 memories, a 1,000-token
//! budget, the cl100k tokenizer) with its three attached blocks and with `no_blocks`, measured
//! in the same run, so the ratio of the two medians is the figure to report (BENCHMARKS.md).
//!
//! `cargo bench -p mnemo --bench pack_blocks`

use criterion::{criterion_group, criterion_main, Criterion};
use mnemo::core::pack::ContextOptions;
use mnemo::core::*;
use mnemo::{AddRequest, ContextRequest, Memory};
use mnemo_testkit::HashEmbedder;
use std::sync::Arc;

fn setup(rt: &tokio::runtime::Runtime) -> (Memory, Scope) {
    let store = Arc::new(mnemo_store_sqlite::SqliteStore::open_in_memory().unwrap());
    let m = Memory::from_parts(store, Arc::new(HashEmbedder), RankParams::default()).unwrap();
    let scope = Scope::from_parts(Some("ann"), Some("planner"), None).unwrap();
    let user = Scope::user("ann").unwrap();
    rt.block_on(async {
        for i in 0..300 {
            let text = format!(
                "Ann note {i}: trip {} to city {} with budget {}",
                i % 17,
                i % 29,
                i * 13
            );
            m.add(AddRequest::text(scope.clone(), &text)).await.unwrap();
        }
        let blocks = [
            (
                "human",
                "Ann lives in Porto. Prefers metric units. Vegetarian. Travels in spring.",
            ),
            (
                "persona",
                "I am Ann's travel planner. I answer briefly and cite prices in euros.",
            ),
            (
                "task",
                "Plan a week in Japan in April: trains, two cities, quiet hotels.",
            ),
        ];
        for (label, value) in blocks {
            let mut new = NewBlock::new(user.clone(), BlockLabel::new(label).unwrap(), value);
            new.agents = vec![AgentId::new("planner").unwrap()];
            m.create_block(new).await.unwrap();
        }
    });
    (m, scope)
}

fn bench(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let (m, scope) = setup(&rt);
    let req = |no_blocks| ContextRequest {
        scope: scope.clone(),
        query: "which city is the trip to, and what budget?".into(),
        budget_tokens: 1000,
        options: ContextOptions {
            no_blocks,
            ..ContextOptions::default()
        },
    };
    let with = rt.block_on(m.context(req(false))).unwrap();
    assert_eq!(
        with.sections[0].items.len(),
        3,
        "the three blocks are pinned"
    );
    let mut g = c.benchmark_group("pack");
    g.bench_function("without_blocks", |b| {
        b.iter(|| rt.block_on(m.context(req(true))).unwrap())
    });
    g.bench_function("with_blocks", |b| {
        b.iter(|| rt.block_on(m.context(req(false))).unwrap())
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
