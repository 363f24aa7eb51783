//! `mnemo bench --conversations FILE`: conversation ingestion and search on a LoCoMo file, the
//! workload users feed a memory layer, with the embedder alone on the same texts as the
//! same-run baseline.
//!
//! Every session of every conversation is one `add` (messages with speaker names, the session's
//! date, a session id), built by the same function `mnemo eval locomo` uses, into one store with
//! the default context indexing, one scope per conversation. Each add is paired with the embedder
//! alone on the texts that add embeds (`Memory::raw_embedding_texts`), the two in alternating
//! order, so both see the same moments of a shared machine. Then every question of the file is
//! searched in its conversation's scope at the final store size, with the query embedding and
//! with a precomputed query vector, again alternating.
//!
//! JSON keys (all times in ms, rates per second):
//!
//! | key | meaning |
//! |---|---|
//! | `conversations`, `sessions`, `turns`, `questions`, `memories` | the workload and the final store |
//! | `turns_per_s` | turns ÷ the summed wall time of the session adds (embedding + storage) |
//! | `embed_only_turns_per_s` | turns ÷ the summed time of the embedder alone on the same texts |
//! | `embedded_texts` | texts handed to the embedder alone (one line per distinct turn) |
//! | `ingest_overhead` | `embed_only_turns_per_s / turns_per_s − 1`: what the add costs beyond its embedding |
//! | `session_add_p50_ms`, `session_add_p95_ms` | one session's `add` call |
//! | `search_p50_ms`, `search_p95_ms` | top-`top_k` hybrid search, query embedding included |
//! | `search_p50_ms_no_embed`, `search_p95_ms_no_embed` | the same searches with the query vector given |
//! | `query_embed_p50_ms` | the embedder alone on one question (no store, no runtime hop) |
//! | `search_p50_ms_no_embed_tracking_on`, `…_off`, `usage_tracking_p50_ratio` | the async search with the vector given, usage bookkeeping (read counts, segment visits) on and off, alternating |
//! | `session_add_ms_total_rules_on`, `…_off`, `relation_rules_add_ratio` | with `--compare-relation-rules`: the summed session adds with the relation rules on and off (alternating), and their ratio |
//! | `peak_rss_mb`, `rss_mb` | `VmHWM` and `VmRSS` of the process at the end |
//! | `embedder`, `embedder_threads`, `top_k`, `file_mb`, `wall_s` | setup and size |

use super::{finish, percentile};
use mnemo::{Memory, MemoryConfig};
use mnemo_core::{Embedder, Error, Scope, SearchRequest};
use mnemo_eval::locomo::Conversation;
use mnemo_eval::run::{add_request, scope_of};
use mnemo_eval::EvalMode;
use std::path::PathBuf;
use std::time::Instant;

pub(super) struct Options {
    pub data: PathBuf,
    pub top_k: usize,
    /// Build the store here and keep it (it must not exist); default: a removed temp dir.
    pub store_dir: Option<PathBuf>,
    /// Also add every session with the relation rules off (see [`RulesAb`]).
    pub compare_rules: bool,
}

fn seconds(f: impl FnOnce() -> anyhow::Result<()>) -> anyhow::Result<f64> {
    let t = Instant::now();
    f()?;
    Ok(t.elapsed().as_secs_f64())
}

pub(super) async fn run(mut cfg: MemoryConfig, opts: Options, json: bool) -> anyhow::Result<()> {
    if opts.top_k == 0 || opts.top_k > mnemo_core::search::MAX_TOP_K {
        return Err(Error::invalid("top_k", "must be between 1 and 1000").into());
    }
    let started = Instant::now();
    let progress = |msg: &str| {
        if !json {
            eprintln!("[{:>6.1}s] {msg}", started.elapsed().as_secs_f64());
        }
    };
    let conversations = mnemo_eval::locomo::load(&opts.data)?;
    let dir = match &opts.store_dir {
        Some(d) if d.exists() => {
            return Err(Error::invalid(
                "store_dir",
                format!("{} exists; give a new directory", d.display()),
            )
            .into())
        }
        Some(d) => d.clone(),
        None => {
            let d = std::env::temp_dir().join(format!("mnemo-bench-conv-{}", std::process::id()));
            let _ = std::fs::remove_dir_all(&d);
            d
        }
    };
    cfg.data_dir = dir.clone();
    // Measure the model, not the cache: the embed-only half must not warm the add's cache.
    cfg.embedding_cache = 0;
    let threads = cfg.embedder.effective_threads();
    let memory = Memory::open(cfg).await?;
    let embedder = memory.embedder().await?;

    progress("ingesting: each session added, and embedded alone, in alternating order");
    let rules_off = opts.compare_rules.then(|| {
        memory.clone().with_relation_config(mnemo::RelationConfig {
            rules: false,
            ..memory.relation_config()
        })
    });
    let mut ingested = ingest(
        &memory,
        rules_off.as_ref(),
        embedder.as_ref(),
        &conversations,
    )
    .await?;
    let add_s: f64 = ingested.add_ms.iter().sum::<f64>() / 1e3;

    progress("searching every question at the final store size");
    let questions: Vec<(&Scope, &str)> = conversations
        .iter()
        .zip(&ingested.scopes)
        .flat_map(|(c, scope)| {
            c.questions
                .iter()
                .map(move |q| (scope, q.question.as_str()))
        })
        .collect();
    let s = search(
        &memory,
        embedder.as_ref(),
        &ingested.scopes,
        &questions,
        opts.top_k,
    )
    .await?;
    ingested.add_ms.sort_by(f64::total_cmp);
    let add_ms = &ingested.add_ms;
    let stats = memory.store().stats()?;
    let turns = ingested.turns;
    let (turns_per_s, embed_only_turns_per_s) =
        (turns as f64 / add_s, turns as f64 / ingested.embed_s);
    let report = serde_json::json!({
        "workload": "conversations",
        "data": opts.data.display().to_string(),
        "conversations": conversations.len(),
        "sessions": ingested.sessions,
        "turns": turns,
        "questions": questions.len(),
        "memories": stats.memories,
        "embedder": embedder.model_id(),
        "embedder_threads": threads,
        "turns_per_s": turns_per_s,
        "embed_only_turns_per_s": embed_only_turns_per_s,
        "embedded_texts": ingested.embedded,
        "ingest_overhead": embed_only_turns_per_s / turns_per_s - 1.0,
        "session_add_p50_ms": percentile(add_ms, 0.5),
        "session_add_p95_ms": percentile(add_ms, 0.95),
        "top_k": opts.top_k,
        "search_p50_ms": percentile(&s.with_embed, 0.5),
        "search_p95_ms": percentile(&s.with_embed, 0.95),
        "search_p50_ms_no_embed": percentile(&s.no_embed, 0.5),
        "search_p95_ms_no_embed": percentile(&s.no_embed, 0.95),
        "query_embed_p50_ms": percentile(&s.embed_alone, 0.5),
        "search_p50_ms_no_embed_tracking_on": percentile(&s.tracking_on, 0.5),
        "search_p50_ms_no_embed_tracking_off": percentile(&s.tracking_off, 0.5),
        "usage_tracking_p50_ratio": percentile(&s.tracking_on, 0.5) / percentile(&s.tracking_off, 0.5),
        "usage_rows_written_at_end": s.visits_written,
    });
    let mut report = report;
    if let Some(ab) = &ingested.rules_ab {
        report["session_add_ms_total_rules_on"] = ab.on_ms.into();
        report["session_add_ms_total_rules_off"] = ab.off_ms.into();
        report["relation_rules_add_ratio"] = (ab.on_ms / ab.off_ms).into();
    }
    let temporary = opts.store_dir.is_none().then_some(dir.as_path());
    finish(report, memory, stats.file_bytes, started, temporary, json)
}

/// What ingesting the conversations measured.
struct Ingested {
    /// Each session's `add`, in ms.
    add_ms: Vec<f64>,
    /// Seconds of the embedder alone on the same texts.
    embed_s: f64,
    /// Texts handed to the embedder alone.
    embedded: usize,
    turns: usize,
    sessions: usize,
    /// One scope per conversation, in file order.
    scopes: Vec<Scope>,
    rules_ab: Option<RulesAb>,
}

/// The relation rules' share of the add: every session added once with the rules on (the
/// measured store) and once with them off (into `<scope>-norules`), alternating which goes
/// first; the summed add times of each side, in ms.
#[derive(Default)]
struct RulesAb {
    on_ms: f64,
    off_ms: f64,
}

/// Adds every session of every conversation, each paired with the embedder alone on the texts
/// that add embeds, the two in alternating order.
async fn ingest(
    memory: &Memory,
    rules_off: Option<&Memory>,
    embedder: &dyn Embedder,
    conversations: &[Conversation],
) -> anyhow::Result<Ingested> {
    let (mut add_ms, mut embed_s, mut embedded) = (Vec::new(), 0.0, 0usize);
    let (mut turns, mut sessions) = (0usize, 0usize);
    let mut rules_ab: Option<RulesAb> = None;
    let mut scopes: Vec<Scope> = Vec::with_capacity(conversations.len());
    for c in conversations {
        let scope = scope_of(c)?;
        for s in 0..c.sessions.len() {
            let req = add_request(&scope, c, s, EvalMode::Raw);
            let texts = memory.raw_embedding_texts(&req)?;
            let embed_only = || -> anyhow::Result<()> {
                let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
                embedder.embed(&refs)?;
                Ok(())
            };
            let embed_first = sessions % 2 == 0;
            if embed_first {
                embed_s += seconds(embed_only)?;
            }
            let off = match rules_off {
                Some(m) => {
                    let off_scope = Scope::user(&format!(
                        "{}-norules",
                        scope.user_id().map_or("bench", |u| u.as_str())
                    ))?;
                    Some((m, add_request(&off_scope, c, s, EvalMode::Raw)))
                }
                None => None,
            };
            let mut off_ms = 0.0;
            if !embed_first {
                off_ms = timed_add(off.clone()).await?;
            }
            let add_t = Instant::now();
            memory.add(req).await?;
            add_ms.push(add_t.elapsed().as_secs_f64() * 1e3);
            if embed_first {
                off_ms = timed_add(off).await?;
            }
            if rules_off.is_some() {
                let ab = rules_ab.get_or_insert_with(RulesAb::default);
                ab.on_ms += add_ms[add_ms.len() - 1];
                ab.off_ms += off_ms;
            }
            if !embed_first {
                embed_s += seconds(embed_only)?;
            }
            embedded += texts.len();
            turns += c.sessions[s].turns.len();
            sessions += 1;
        }
        scopes.push(scope);
    }
    Ok(Ingested {
        add_ms,
        embed_s,
        embedded,
        turns,
        sessions,
        scopes,
        rules_ab,
    })
}

/// One add's wall time in ms; 0 when there is none to make.
async fn timed_add(add: Option<(&Memory, mnemo::AddRequest)>) -> anyhow::Result<f64> {
    let Some((m, req)) = add else {
        return Ok(0.0);
    };
    let t = Instant::now();
    m.add(req).await?;
    Ok(t.elapsed().as_secs_f64() * 1e3)
}

/// Per-question timings in ms, each sorted ascending.
struct Searched {
    with_embed: Vec<f64>,
    no_embed: Vec<f64>,
    embed_alone: Vec<f64>,
    tracking_on: Vec<f64>,
    tracking_off: Vec<f64>,
    /// Usage rows the final flush wrote.
    visits_written: u64,
}

/// Searches every question in its conversation's scope: with the query embedding, with the
/// vector given, the embedding alone, and with usage bookkeeping on and off.
async fn search(
    memory: &Memory,
    embedder: &dyn Embedder,
    scopes: &[Scope],
    questions: &[(&Scope, &str)],
    top_k: usize,
) -> anyhow::Result<Searched> {
    // Query vectors for the searches without embedding, in calls of at most one model batch.
    let mut qvecs = Vec::with_capacity(questions.len());
    for chunk in questions.chunks(16) {
        let refs: Vec<&str> = chunk.iter().map(|(_, q)| *q).collect();
        qvecs.extend(embedder.embed(&refs)?);
    }
    // Warm-up: one unmeasured search per conversation (the Mem0 side does the same).
    for scope in scopes {
        memory
            .search(SearchRequest::new(scope.clone(), "warm up", top_k))
            .await?;
    }
    let (mut with_embed, mut no_embed, mut embed_alone) = (Vec::new(), Vec::new(), Vec::new());
    for (i, ((scope, q), v)) in questions.iter().zip(&qvecs).enumerate() {
        let req = SearchRequest::new((*scope).clone(), *q, top_k);
        // The two parts of a search measured apart: retrieval with the vector given, and the
        // query's embedding alone.
        let parts = |no_embed: &mut Vec<f64>, embed_alone: &mut Vec<f64>| -> anyhow::Result<()> {
            let t = Instant::now();
            memory.search_with_vector_blocking(&req, v)?;
            no_embed.push(t.elapsed().as_secs_f64() * 1e3);
            let t = Instant::now();
            embedder.embed(&[*q])?;
            embed_alone.push(t.elapsed().as_secs_f64() * 1e3);
            Ok(())
        };
        if i % 2 == 0 {
            parts(&mut no_embed, &mut embed_alone)?;
        }
        let t = Instant::now();
        memory.search(req.clone()).await?;
        with_embed.push(t.elapsed().as_secs_f64() * 1e3);
        if i % 2 == 1 {
            parts(&mut no_embed, &mut embed_alone)?;
        }
    }
    // What usage bookkeeping costs a search here, where its hits come from segments' pages
    // (read counts and segment visits, written in the background): the same searches with it on
    // and off, alternating per question (and which goes first).
    let (tracked, untracked) = (
        memory.clone().with_usage_tracking(true),
        memory.clone().with_usage_tracking(false),
    );
    let (mut tracking_on, mut tracking_off) = (Vec::new(), Vec::new());
    for (i, ((scope, q), v)) in questions.iter().zip(&qvecs).enumerate() {
        let mut runs = [
            (&tracked, &mut tracking_on),
            (&untracked, &mut tracking_off),
        ];
        if i % 2 == 1 {
            runs.reverse();
        }
        for (m, out) in runs {
            let req = SearchRequest::new((*scope).clone(), *q, top_k);
            let t = Instant::now();
            m.search_with_vector(req, v.clone()).await?;
            out.push(t.elapsed().as_secs_f64() * 1e3);
        }
    }
    let visits_written = memory.flush_usage().await?;
    for v in [
        &mut with_embed,
        &mut no_embed,
        &mut embed_alone,
        &mut tracking_on,
        &mut tracking_off,
    ] {
        v.sort_by(f64::total_cmp);
    }
    Ok(Searched {
        with_embed,
        no_embed,
        embed_alone,
        tracking_on,
        tracking_off,
        visits_written,
    })
}
