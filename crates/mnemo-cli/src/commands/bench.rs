//! `mnemo bench`: add and search throughput on synthetic chat-like memories, with the baselines
//! measured in the same run (embedding alone; exact brute-force dense scan) so results can be
//! read as ratios on a noisy shared machine. `--conversations FILE` runs the conversation
//! workload instead ([`conversations`]).
//!
//! The synthetic run: the store is set up ([`setup`]), the texts made ([`texts`]) and embedded
//! (1, [`vectors`]), the store filled (2 and 3, [`fill`]), and searched (4, [`search`]).
//!
//! On a PostgreSQL store (`--store postgres://…`) the run builds its store in a fresh schema of
//! that database and drops it at the end. Store calls here are blocking, and the PostgreSQL
//! driver must not block an async worker, so they run inside [`blocking`].

mod conversations;
mod fill;
mod report;
mod search;
mod setup;
mod texts;
mod vectors;

use crate::args::BenchArgs;
use mnemo::{Memory, MemoryConfig};
use mnemo_core::*;
use report::{finish, percentile};
use std::time::Instant;
use texts::{question, sentence, Rng};

/// `mnemo bench`: the conversation workload with `--conversations`, else the synthetic one.
pub(super) async fn run(mut cfg: MemoryConfig, args: &BenchArgs, json: bool) -> anyhow::Result<()> {
    if let Some(w) = args.onnx_weights {
        cfg.embedder.onnx_weights = Some(w.into());
    }
    if let Some(data) = &args.conversations {
        let opts = conversations::Options {
            data: data.clone(),
            top_k: args.top_k,
            store_dir: args.store_dir.clone(),
            compare_rules: args.compare_relation_rules,
        };
        return conversations::run(cfg, opts, json).await;
    }
    let opts = Options {
        store_dir: args.store_dir.clone(),
        schema: args.schema.clone(),
        search_only: args.search_only,
        n: args.memories,
        queries: args.queries,
        add_sample: args.add_sample,
        vector_cache: args.vector_cache.clone(),
    };
    synthetic(cfg, opts, json).await
}

struct Options {
    n: usize,
    queries: usize,
    add_sample: usize,
    vector_cache: Option<std::path::PathBuf>,
    store_dir: Option<std::path::PathBuf>,
    /// PostgreSQL: the schema the store is built in and kept (reopened with `search_only`).
    schema: Option<String>,
    search_only: bool,
}

/// What the steps of one synthetic run share.
struct Bench<'a> {
    memory: &'a Memory,
    embedder: &'a dyn Embedder,
    scope: &'a Scope,
    /// Texts per embedding call and per `add_many` (the batches import uses).
    batch: usize,
    progress: &'a dyn Fn(&str),
}

async fn synthetic(mut cfg: MemoryConfig, opts: Options, json: bool) -> anyhow::Result<()> {
    let (n, queries, add_sample) = (opts.n, opts.queries, opts.add_sample);
    if n == 0 || queries == 0 {
        return Err(Error::invalid("bench", "--memories and --queries must be positive").into());
    }
    let started = Instant::now();
    let cfg_weights = cfg
        .embedder
        .onnx_weights
        .map(|w| format!("{w:?}").to_lowercase());
    let tmp = setup::store_dir(&opts)?;
    cfg.data_dir = tmp.clone();
    cfg.embedding_cache = 0; // measure the model, not the cache
                             // On PostgreSQL: a fresh schema, dropped when this function returns (after the report), or
                             // the kept one `--schema` names.
    let schema = setup::schema(&mut cfg, &opts)?;
    let memory = Memory::open(cfg).await?;
    let embedder = memory.embedder().await?;
    let mut rng = Rng(0x9E3779B97F4A7C15);
    let scope = Scope::user("bench-user")?;
    let texts: Vec<String> = (0..n).map(|i| sentence(&mut rng, i)).collect();
    let progress = |msg: &str| {
        if !json {
            eprintln!("[{:>6.1}s] {msg}", started.elapsed().as_secs_f64());
        }
    };
    let bench = Bench {
        memory: &memory,
        embedder: embedder.as_ref(),
        scope: &scope,
        batch: 64,
        progress: &progress,
    };

    // 1. Baseline: the embedder alone, over every text, in the batches import uses.
    let (mut vectors, embed_only_per_s) =
        vectors::bulk(&bench, &texts, opts.vector_cache.as_deref())?;

    let m = add_sample.clamp(1, n.max(1));
    let (filled, sample_embed_only_per_s) = if opts.search_only {
        let (sample_vectors, rate) = kept_sample(&bench, &mut rng, n, m)?;
        vectors.extend(sample_vectors);
        (None, rate)
    } else {
        let mut filled = fill::fill(&bench, &texts, &vectors, &mut rng, m).await?;
        vectors.extend(std::mem::take(&mut filled.sample_vectors));
        let rate = filled.sample_embed_only_per_s;
        (Some(filled), rate)
    };

    // 4. Search, with and without the query embedding, and the exact brute-force baseline.
    progress("searching");
    let qs: Vec<String> = (0..queries).map(|_| question(&mut rng)).collect();
    let s = search::measure(&bench, &qs, &vectors, n).await?;
    let stats = blocking(|| memory.store().stats())?;
    let add_per_s = filled.as_ref().map(|f| f.add_per_s);
    let note_add_per_s = filled.as_ref().map(|f| f.note_add_per_s);
    let report = serde_json::json!({
        "memories": n + m,
        "store": if schema.is_some() { "postgresql" } else { "sqlite" },
        "embedder": embedder.model_id(),
        // The int8 coding asked for (`--onnx-weights`); null: this CPU's own.
        "onnx_weights": cfg_weights,
        "threads": std::thread::available_parallelism().map_or(1, |n| n.get()),
        "embed_only_per_s": embed_only_per_s,
        "vectors_from_cache": embed_only_per_s.is_none(),
        "add_per_s": add_per_s,
        "add_sample": m,
        "note_add_per_s": note_add_per_s,
        "note_vs_raw_add": note_add_per_s.zip(add_per_s).map(|(n, a)| n / a),
        "sample_embed_only_per_s": sample_embed_only_per_s,
        "storage_overhead": add_per_s.map(|a| sample_embed_only_per_s / a - 1.0),
        "add_no_embed_per_s": filled.as_ref().map(|f| f.add_no_embed_per_s),
        "add_embed_ms_per_add": filled.as_ref().map(|f| f.add_embed_s * 1e3 / m as f64),
        "add_rest_ms_per_add": filled.as_ref().map(|f| f.add_rest_s * 1e3 / m as f64),
        "search_p50_ms": percentile(&s.with_embed, 0.5),
        "search_p95_ms": percentile(&s.with_embed, 0.95),
        "search_p50_ms_no_embed": percentile(&s.no_embed, 0.5),
        "search_p95_ms_no_embed": percentile(&s.no_embed, 0.95),
        "search_p50_ms_no_embed_tracking_on": percentile(&s.tracking_on, 0.5),
        "search_p50_ms_no_embed_tracking_off": percentile(&s.tracking_off, 0.5),
        "usage_tracking_p50_ratio": percentile(&s.tracking_on, 0.5) / percentile(&s.tracking_off, 0.5),
        "bruteforce_dense_p50_ms": percentile(&s.brute, 0.5),
        "dense_candidates_p50_ms": percentile(&s.dense_side, 0.5),
        "ann_recall_at_10": s.ann_recall_at_10,
        "lexical_candidates_p50_ms": percentile(&s.lexical_side, 0.5),
        "queries": queries,
    });
    let temporary = opts.store_dir.is_none().then_some(tmp.as_path());
    finish(report, memory, stats.file_bytes, started, temporary, json)
}

/// `--search-only`: checks that the kept store holds what this run would have written, and
/// embeds the sample texts it added (for the brute-force baseline). Returns their vectors and
/// the embedder's rate on them.
fn kept_sample(
    bench: &Bench<'_>,
    rng: &mut Rng,
    n: usize,
    m: usize,
) -> anyhow::Result<(Vec<Vec<f32>>, f64)> {
    let have = blocking(|| bench.memory.store().stats())?.memories;
    // Each sample text is also stored once as a note (in its own scope).
    if have != (n + 2 * m) as u64 {
        return Err(Error::invalid(
            "store_dir",
            format!(
                "the kept store holds {have} memories, not --memories + 2 × --add-sample = {}",
                n + 2 * m
            ),
        )
        .into());
    }
    let sample: Vec<String> = (0..m).map(|i| sentence(rng, n + i)).collect();
    vectors::embed_timed(bench.embedder, &sample, bench.batch)
}

/// Runs blocking store work from this async code (see the module doc).
fn blocking<T>(f: impl FnOnce() -> T) -> T {
    tokio::task::block_in_place(f)
}

fn timed_ms(f: impl FnOnce()) -> f64 {
    let t = Instant::now();
    f();
    t.elapsed().as_secs_f64() * 1e3
}

/// Milliseconds a fallible store call took; its error ends the bench (a store on a server can
/// fail mid-run, which is an error to report, not a panic).
fn timed_ms_ok<T>(f: impl FnOnce() -> mnemo::Result<T>) -> mnemo::Result<f64> {
    let t = Instant::now();
    f()?;
    Ok(t.elapsed().as_secs_f64() * 1e3)
}
