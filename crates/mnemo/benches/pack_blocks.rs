//! What pinned blocks cost a context pack (issue 47: at most 5 % more time than without): the
//! same pack (one scope, 300 memories, a 1,000-token budget, the cl100k tokenizer) with its
//! three attached blocks and with `no_blocks`, in the same run.
//!
//! `cargo bench -p mnemo --bench pack_blocks` first measures the two interleaved — rounds of
//! packs without and with blocks, alternating which goes first, so a machine shared with other
//! work slows both alike — and prints the median of the rounds' ratios, the figure to report
//! (BENCHMARKS.md); then criterion times each kind alone. Bounded: about 15 s in all. Run by
//! `cargo test --benches`, each part runs once, as a check that it works.

use criterion::Criterion;
use mnemo::core::pack::ContextOptions;
use mnemo::core::*;
use mnemo::{AddRequest, ContextRequest, Memory};
use mnemo_testkit::HashEmbedder;
use std::sync::Arc;
use std::time::{Duration, Instant};

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

fn request(scope: &Scope, no_blocks: bool) -> ContextRequest {
    ContextRequest {
        scope: scope.clone(),
        query: "which city is the trip to, and what budget?".into(),
        budget_tokens: 1000,
        options: ContextOptions {
            no_blocks,
            ..ContextOptions::default()
        },
    }
}

/// `per_round` packs of one kind, timed together.
fn time_packs(
    rt: &tokio::runtime::Runtime,
    m: &Memory,
    scope: &Scope,
    no_blocks: bool,
    per_round: usize,
) -> Duration {
    let start = Instant::now();
    for _ in 0..per_round {
        rt.block_on(m.context(request(scope, no_blocks))).unwrap();
    }
    start.elapsed()
}

fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(f64::total_cmp);
    xs[xs.len() / 2]
}

/// The interleaved comparison: the median over rounds of (with / without), and each kind's
/// median time per pack.
fn interleaved(
    rt: &tokio::runtime::Runtime,
    m: &Memory,
    scope: &Scope,
    rounds: usize,
    per_round: usize,
) {
    let (mut ratios, mut without, mut with) = (Vec::new(), Vec::new(), Vec::new());
    for round in 0..rounds {
        let (a, b) = if round % 2 == 0 {
            let a = time_packs(rt, m, scope, true, per_round);
            (a, time_packs(rt, m, scope, false, per_round))
        } else {
            let b = time_packs(rt, m, scope, false, per_round);
            (time_packs(rt, m, scope, true, per_round), b)
        };
        ratios.push(b.as_secs_f64() / a.as_secs_f64());
        without.push(a.as_secs_f64() * 1e6 / per_round as f64);
        with.push(b.as_secs_f64() * 1e6 / per_round as f64);
    }
    println!(
        "pack_blocks interleaved ({rounds} rounds x {per_round} packs each): without blocks \
         {:.1} us, with blocks {:.1} us (medians per pack); with/without = {:.3} (median of \
         the rounds' ratios; min {:.3}, max {:.3})",
        median(without),
        median(with),
        median(ratios.clone()),
        ratios.iter().copied().fold(f64::INFINITY, f64::min),
        ratios.iter().copied().fold(0.0, f64::max),
    );
}

fn main() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let (m, scope) = setup(&rt);
    let with = rt.block_on(m.context(request(&scope, false))).unwrap();
    assert_eq!(
        with.sections[0].items.len(),
        3,
        "the three blocks are pinned"
    );
    let without = rt.block_on(m.context(request(&scope, true))).unwrap();
    assert!(without
        .sections
        .iter()
        .all(|s| s.items.iter().all(|i| i.kind != "block")));
    // `cargo bench` passes `--bench`; `cargo test --benches` does not (one pass of each part).
    let measuring = std::env::args().any(|a| a == "--bench");
    if measuring {
        interleaved(&rt, &m, &scope, 31, 20);
    } else {
        interleaved(&rt, &m, &scope, 1, 1);
    }
    let mut c = Criterion::default()
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3))
        .sample_size(30)
        .configure_from_args();
    let mut g = c.benchmark_group("pack");
    g.bench_function("without_blocks", |b| {
        b.iter(|| rt.block_on(m.context(request(&scope, true))).unwrap())
    });
    g.bench_function("with_blocks", |b| {
        b.iter(|| rt.block_on(m.context(request(&scope, false))).unwrap())
    });
    g.finish();
    c.final_summary();
}
