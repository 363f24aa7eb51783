//! What pinned blocks cost a context pack (issue 47: at most 5 % more time than without): the
//! same pack (one scope, 300 memories, a 1,000-token budget, the cl100k tokenizer) with its
//! three attached blocks and with `no_blocks`, in the same run.
//!
//! `cargo bench -p mnemo --bench pack_blocks` first measures the two interleaved — pairs of one
//! pack without blocks and one with, alternating which goes first, so a machine shared with
//! other work slows both alike — and prints the ratio of their 10th percentiles (the cost
//! undisturbed: other work only adds time), the figure to report (BENCHMARKS.md), with the
//! medians beside it; then criterion times each kind alone. Bounded: about 20 s in all. Run by
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

/// One pack of one kind, timed.
fn time_pack(rt: &tokio::runtime::Runtime, m: &Memory, scope: &Scope, no_blocks: bool) -> f64 {
    let start = Instant::now();
    rt.block_on(m.context(request(scope, no_blocks))).unwrap();
    start.elapsed().as_secs_f64() * 1e6
}

/// The `q`-quantile of `xs` (sorted in place).
fn quantile(xs: &mut [f64], q: f64) -> f64 {
    xs.sort_by(f64::total_cmp);
    xs[((xs.len() - 1) as f64 * q).round() as usize]
}

/// The interleaved comparison: `pairs` times one pack without blocks and one with, the order
/// alternating. Other work on the machine only ever adds time, so the low quantiles of each
/// kind are its cost undisturbed; the median of the pairs' ratios is printed beside them.
fn interleaved(rt: &tokio::runtime::Runtime, m: &Memory, scope: &Scope, pairs: usize) {
    let (mut without, mut with, mut ratios) = (Vec::new(), Vec::new(), Vec::new());
    for i in 0..pairs {
        let (a, b) = if i % 2 == 0 {
            let a = time_pack(rt, m, scope, true);
            (a, time_pack(rt, m, scope, false))
        } else {
            let b = time_pack(rt, m, scope, false);
            (time_pack(rt, m, scope, true), b)
        };
        without.push(a);
        with.push(b);
        ratios.push(b / a);
    }
    let (w10, b10) = (quantile(&mut without, 0.1), quantile(&mut with, 0.1));
    let (w50, b50) = (quantile(&mut without, 0.5), quantile(&mut with, 0.5));
    println!(
        "pack_blocks interleaved ({pairs} pairs): p10 without {w10:.0} us, with {b10:.0} us, \
         with/without = {:.3}; medians {w50:.0} us and {b50:.0} us, {:.3}; median of the pairs' \
         ratios {:.3}",
        b10 / w10,
        b50 / w50,
        quantile(&mut ratios, 0.5),
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
    interleaved(&rt, &m, &scope, if measuring { 400 } else { 1 });
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
