//! Running LoCoMo: ingest every conversation into fresh stores, ask every question, score.
//!
//! Two stores are built per run under a fresh work directory: mnemo's (the configured context
//! indexing and hybrid search) and a plain one (each memory indexed with its own text only),
//! which serves the BM25-alone and dense-alone baselines. Both hold the same units — one memory
//! per turn in raw mode — and share one embedder, so query vectors are computed once.
//!
//! Stores are SQLite files in the work directory, or, with `store_url`, each a fresh schema of
//! that PostgreSQL database, dropped when the run ends. `compare_store` adds a second mnemo
//! engine on PostgreSQL that ingests the same conversations and answers the same questions
//! beside the first, so one run reports recall on both backends and their difference.

use crate::locomo::{Conversation, Turn};
use crate::metrics::{percentile, score_question, RetrievalTally};
use crate::qa::{answer_and_score, summarize, QaModels, QaOutcome};
use crate::report::{ContextCost, Counts, Latency, Percentiles, QaSection, Report};
use anyhow::{bail, Context, Result};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use mnemo::{AddInput, AddRequest, ContextIndexing, Memory};
use mnemo_core::{
    ChatModel, Embedder, Hit, InputMessage, MessageId, RankParams, Role, Scope, SearchMode,
    SearchRequest,
};
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EvalMode {
    /// One memory per turn, no model.
    Raw,
    /// Memories extracted by the configured chat model.
    Infer,
}

impl EvalMode {
    pub fn as_str(self) -> &'static str {
        match self {
            EvalMode::Raw => "raw",
            EvalMode::Infer => "infer",
        }
    }
}

pub struct EvalOptions {
    pub data: PathBuf,
    pub mode: EvalMode,
    /// Memories handed to the answer model; retrieval is always scored down to 20.
    pub top_k: usize,
    /// Fresh stores are created here; it must not exist or be empty.
    pub work_dir: PathBuf,
    pub embedder: Arc<dyn Embedder>,
    pub rank: RankParams,
    pub indexing: ContextIndexing,
    pub qa: Option<QaModels>,
    pub progress: bool,
    /// Only the first N questions of each conversation (quick runs).
    pub max_questions: Option<usize>,
    /// Also build the plain store and score the BM25-alone and dense-alone baselines.
    pub baselines: bool,
    /// The chat model that extracts memories in infer mode (required there).
    pub infer_model: Option<Arc<dyn ChatModel>>,
    /// Only the first N conversations.
    pub max_conversations: Option<usize>,
    /// Also ingest every turn as a note (rules, no model) into a third store and score it
    /// without and with link expansion (this many linked notes per hit).
    pub notes: Option<usize>,
    /// Note settings of the notes store (neighbours, link rules).
    pub note_config: mnemo::NoteConfig,
    /// Token budgets at which context packs are scored against plain search cut to the same
    /// budget (see [`crate::pack`]); empty: not scored.
    pub pack_budgets: Vec<u32>,
    /// How packs are gathered and chosen.
    pub pack_tuning: mnemo::ContextTuning,
    /// A PostgreSQL database (`postgres://…`) holding every store of the run, each in a fresh
    /// schema dropped afterwards; `None`: SQLite files in `work_dir`.
    pub store_url: Option<String>,
    /// A PostgreSQL database where a second mnemo engine (same embedder, indexing and ranking,
    /// fresh schema) answers every question beside the first (`compare_store` in the report).
    pub compare_store: Option<String>,
}

impl std::fmt::Debug for EvalOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EvalOptions")
            .field("data", &self.data)
            .field("mode", &self.mode)
            .field("top_k", &self.top_k)
            .finish_non_exhaustive()
    }
}

/// The deepest cut-off scored.
const SCORED_DEPTH: usize = 20;

struct Engines {
    mnemo: Memory,
    plain: Option<Memory>,
    notes: Option<Memory>,
    /// mnemo again, on the `compare_store` database.
    compare: Option<Memory>,
    /// The PostgreSQL schemas the engines live in; declared last, so they are dropped (with
    /// everything in them) after the engines.
    _schemas: Vec<mnemo::ScratchSchema>,
}

/// One engine's store: a SQLite file under the work directory, or a fresh schema of the
/// PostgreSQL database `pg` (kept in `schemas`, so it lives as long as the run).
async fn open_engine(
    opts: &EvalOptions,
    name: &str,
    indexing: ContextIndexing,
    pg: Option<&str>,
    schemas: &mut Vec<mnemo::ScratchSchema>,
) -> Result<Memory> {
    let (embedder, rank) = (opts.embedder.clone(), opts.rank);
    let config = match pg {
        Some(url) => {
            let schema = mnemo::ScratchSchema::create(url, &format!("mnemo_eval_{name}"))
                .with_context(|| format!("creating a schema for the {name} store"))?;
            let config = mnemo::StoreConfig::Postgres {
                url: schema.url(),
                pool_size: 4,
            };
            schemas.push(schema);
            config
        }
        None => {
            let dir = opts.work_dir.join(name);
            std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
            mnemo::StoreConfig::embedded(&dir)
        }
    };
    // Opening and binding the embedder block (the PostgreSQL driver must not block a worker).
    let memory = tokio::task::spawn_blocking(move || -> Result<Memory> {
        let store = mnemo::open_store(&config)?;
        Ok(Memory::from_parts_with(store, embedder, rank, indexing)?)
    })
    .await??;
    Ok(memory)
}

async fn open_engines(opts: &EvalOptions) -> Result<Engines> {
    if opts.work_dir.exists()
        && std::fs::read_dir(&opts.work_dir)
            .map(|mut d| d.next().is_some())
            .unwrap_or(true)
    {
        bail!(
            "work directory {} is not empty; eval needs fresh stores",
            opts.work_dir.display()
        );
    }
    let (pg, mut schemas) = (opts.store_url.as_deref(), Vec::new());
    let with_chat = |mnemo: Memory| -> Result<Memory> {
        Ok(match (opts.mode, &opts.infer_model) {
            (EvalMode::Infer, Some(model)) => {
                mnemo.with_chat(model.clone(), mnemo::InferConfig::default())
            }
            (EvalMode::Infer, None) => bail!(
                "--mode infer needs a chat model to extract memories (--llm-base-url and --llm-model)"
            ),
            (EvalMode::Raw, _) => mnemo,
        })
    };
    let mnemo = with_chat(open_engine(opts, "mnemo", opts.indexing, pg, &mut schemas).await?)?;
    let plain = if opts.baselines {
        Some(open_engine(opts, "plain", ContextIndexing::plain(), pg, &mut schemas).await?)
    } else {
        None
    };
    let notes = match opts.notes {
        Some(_) => Some(
            open_engine(opts, "notes", opts.indexing, pg, &mut schemas)
                .await?
                .with_note_config(opts.note_config),
        ),
        None => None,
    };
    let compare = match opts.compare_store.as_deref() {
        Some(url) => Some(with_chat(
            open_engine(opts, "compare", opts.indexing, Some(url), &mut schemas).await?,
        )?),
        None => None,
    };
    Ok(Engines {
        mnemo,
        plain,
        notes,
        compare,
        _schemas: schemas,
    })
}

fn bar(len: u64, label: &str, show: bool) -> ProgressBar {
    let b = ProgressBar::with_draw_target(
        Some(len),
        if show {
            ProgressDrawTarget::stderr()
        } else {
            ProgressDrawTarget::hidden()
        },
    );
    b.set_style(
        ProgressStyle::with_template("{prefix:>9} [{bar:30}] {pos}/{len} {msg} ({eta})")
            .expect("static template")
            .progress_chars("=> "),
    );
    b.set_prefix(label.to_string());
    b
}

/// The scope a conversation is stored in (its sample id, whitespace replaced).
pub fn scope_of(c: &Conversation) -> Result<Scope> {
    let id: String = c
        .sample_id
        .chars()
        .map(|ch| if ch.is_whitespace() { '-' } else { ch })
        .collect();
    Ok(Scope::user(&id)?)
}

/// Session `s` of a conversation as one add: its turns as messages with speaker names, the
/// session's date as the timestamp, and a session id of its own. `mnemo bench --conversations`
/// ingests with the same requests.
pub fn add_request(scope: &Scope, c: &Conversation, s: usize, mode: EvalMode) -> AddRequest {
    let session = &c.sessions[s];
    let messages = session
        .turns
        .iter()
        .map(|t: &Turn| InputMessage {
            role: Role::User,
            content: t.text.clone(),
            name: Some(t.speaker.clone()).filter(|n| !n.is_empty()),
        })
        .collect();
    let mut req = AddRequest::text(scope.clone(), "");
    req.input = AddInput::Messages(messages);
    req.timestamp = Some(session.date);
    req.session_id = Some(format!("{}-session-{}", c.sample_id, session.number));
    req.infer = Some(mode == EvalMode::Infer);
    req
}

/// Session `s` as a note add: the same messages, each stored as a note by the rules (no model).
pub fn note_request(scope: &Scope, c: &Conversation, s: usize) -> AddRequest {
    let mut req = add_request(scope, c, s, EvalMode::Raw);
    req.memory_type = Some(mnemo_core::MemoryKind::Note);
    req
}

/// Hits of a link-expanded search in one ranking by score (direct hits and linked results, see
/// `mnemo_core::search::linked_score`), cut to `depth`, so linked results count among the
/// `depth` memories returned.
pub fn merged_by_score(mut hits: Vec<Hit>, depth: usize) -> Vec<Hit> {
    hits.sort_by(|a, b| b.score.total_cmp(&a.score));
    hits.truncate(depth);
    hits
}

/// A question's scores with link expansion, at an equal number of returned memories: for each
/// cut-off k, the search a caller asking for k memories makes (`top_k` = k, with expansion),
/// its direct hits and linked results merged by score and cut at k; and, as the matched
/// control, the same searches' direct hits alone (what a caller asking for k memories gets
/// without expansion). Also how many linked results the `top_k` list holds.
#[expect(
    clippy::too_many_arguments,
    reason = "each input is a separate part of the step; a context struct is the planned fix"
)]
fn expanded_scores(
    engine: &Memory,
    req: &SearchRequest,
    expand: usize,
    vector: &[f32],
    rank: &RankParams,
    top_k: usize,
    evidence: &[String],
    turn_of: &HashMap<MessageId, String>,
) -> Result<(Scored, Scored, usize)> {
    let mut out = crate::metrics::QuestionScores::default();
    let mut direct_out = crate::metrics::QuestionScores::default();
    let mut linked = 0;
    let mut ks: Vec<usize> = crate::metrics::KS.to_vec();
    if !ks.contains(&top_k) {
        ks.push(top_k);
    }
    for k in ks {
        let wide = SearchRequest {
            top_k: k,
            expand_links: expand,
            ..req.clone()
        };
        let hits = mnemo_core::search::hybrid_search(engine.store().as_ref(), &wide, vector, rank)?;
        // The direct hits come first, in rank order (expansion appends the linked results):
        // without expansion the search returns these.
        let direct_n = hits.iter().take_while(|h| h.via.is_none()).count();
        let direct = covered(&hits[..direct_n], turn_of);
        let hits = merged_by_score(hits, k);
        if k == top_k {
            linked = hits.iter().filter(|h| h.via.is_some()).count();
        }
        for (turns, out) in [
            (covered(&hits, turn_of), &mut out),
            (direct, &mut direct_out),
        ] {
            let s = score_question(evidence, &turns).ok_or_else(unscored)?;
            if let Some(i) = crate::metrics::KS.iter().position(|x| *x == k) {
                out.recall[i] = s.recall[i];
                out.hit[i] = s.hit[i];
                if k == *crate::metrics::KS.last().unwrap_or(&k) {
                    out.reciprocal_rank = s.reciprocal_rank;
                }
            }
        }
    }
    Ok((out, direct_out, linked))
}

type Scored = crate::metrics::QuestionScores;

/// Ingests one conversation into an engine; returns add-call latencies, the map from the
/// stored messages to turn ids, and the inferred adds a model failed (counted, not fatal: the
/// session's messages are still logged, and its questions are scored on what was remembered).
async fn ingest(
    engine: &Memory,
    scope: &Scope,
    c: &Conversation,
    mode: EvalMode,
    notes: bool,
    progress: &ProgressBar,
) -> Result<(Vec<f64>, HashMap<MessageId, String>, usize)> {
    let mut latencies = Vec::new();
    let mut failed = 0;
    for s in 0..c.sessions.len() {
        let req = if notes {
            note_request(scope, c, s)
        } else {
            add_request(scope, c, s, mode)
        };
        let t = Instant::now();
        match engine.add(req).await {
            Ok(_) => {}
            Err(e) if mode == EvalMode::Infer && e.kind().is_retryable() => {
                tracing::warn!(
                    session = c.sessions[s].number,
                    error_kind = e.kind().as_str(),
                    "inferred add failed"
                );
                failed += 1;
            }
            Err(e) => {
                return Err(anyhow::Error::new(e)
                    .context(format!("adding session {}", c.sessions[s].number)))
            }
        }
        latencies.push(t.elapsed().as_secs_f64() * 1e3);
        progress.inc(c.sessions[s].turns.len() as u64);
    }
    let turns: Vec<&Turn> = c.turns().collect();
    let (store_scope, n) = (scope.clone(), turns.len());
    let store = engine.store().clone();
    let messages =
        tokio::task::spawn_blocking(move || store.messages(&store_scope, None, n)).await??;
    if messages.len() != turns.len()
        || messages
            .iter()
            .zip(&turns)
            .any(|(m, t)| m.content != t.text)
    {
        bail!(
            "the message log of {} does not match its turns ({} messages for {} turns)",
            c.sample_id,
            messages.len(),
            turns.len()
        );
    }
    let map = messages
        .iter()
        .zip(&turns)
        .map(|(m, t)| (m.id, t.dia_id.clone()))
        .collect();
    Ok((latencies, map, failed))
}

fn covered(hits: &[Hit], turn_of: &HashMap<MessageId, String>) -> Vec<Vec<String>> {
    hits.iter()
        .map(|h| {
            h.memory
                .sources
                .iter()
                .filter_map(|m| turn_of.get(m).cloned())
                .collect()
        })
        .collect()
}

pub async fn run_locomo(opts: &EvalOptions) -> Result<Report> {
    if opts.top_k == 0 || opts.top_k > mnemo_core::search::MAX_TOP_K {
        bail!("--top-k must be between 1 and 1000");
    }
    let mut conversations = crate::locomo::load(&opts.data)?;
    if let Some(n) = opts.max_conversations {
        conversations.truncate(n);
    }
    if conversations.is_empty() {
        bail!("{} holds no conversations", opts.data.display());
    }
    let engines = open_engines(opts).await?;
    let bpe = tiktoken_rs::cl100k_base().context("loading the cl100k tokenizer")?;
    let counter = mnemo_models::token_counter(mnemo_core::pack::DEFAULT_TOKENIZER)?;
    for &b in &opts.pack_budgets {
        if b == 0 || b > mnemo_core::pack::MAX_BUDGET_TOKENS {
            bail!(
                "--pack-budgets: each budget must be between 1 and {}",
                mnemo_core::pack::MAX_BUDGET_TOKENS
            );
        }
    }
    let mut pack_tally = crate::pack::PackTally::new(&opts.pack_budgets);
    let depth = opts.top_k.max(SCORED_DEPTH);

    let mut counts = Counts {
        conversations: conversations.len(),
        ..Counts::default()
    };
    let mut mnemo_tally = RetrievalTally::default();
    let mut bm25_tally = RetrievalTally::default();
    let mut dense_tally = RetrievalTally::default();
    let (mut add_ms, mut search_ms) = (Vec::new(), Vec::new());
    let (mut returned, mut tokens, mut covered_turns, mut returned_total) =
        (0usize, 0usize, 0usize, 0usize);
    let mut qa_outcomes: Vec<QaOutcome> = Vec::new();

    let total_turns: usize = conversations.iter().map(|c| c.turns().count()).sum();
    let total_questions: usize = conversations
        .iter()
        .map(|c| {
            opts.max_questions
                .map_or(c.questions.len(), |m| m.min(c.questions.len()))
        })
        .sum();
    let copies = 1
        + usize::from(opts.baselines)
        + usize::from(opts.notes.is_some())
        + usize::from(opts.compare_store.is_some());
    let mut compare_tally = RetrievalTally::default();
    let (mut compare_add_ms, mut compare_search_ms) = (Vec::new(), Vec::new());
    let (mut notes_tally, mut expanded_tally, mut per_request_tally) = (
        RetrievalTally::default(),
        RetrievalTally::default(),
        RetrievalTally::default(),
    );
    let mut notes_add_ms = Vec::new();
    let (mut linked_in_top, mut expanded_questions) = (0usize, 0usize);
    let ingest_bar = bar((total_turns * copies) as u64, "ingest", opts.progress);
    let ask_bar = bar(total_questions as u64, "questions", opts.progress);

    for c in &conversations {
        let scope = scope_of(c)?;
        ingest_bar.set_message(c.sample_id.clone());
        let (lat, turn_of, failed) =
            ingest(&engines.mnemo, &scope, c, opts.mode, false, &ingest_bar).await?;
        add_ms.extend(lat);
        counts.failed_adds += failed;
        let plain_turn_of = match &engines.plain {
            Some(plain) => {
                ingest(plain, &scope, c, EvalMode::Raw, false, &ingest_bar)
                    .await?
                    .1
            }
            None => HashMap::new(),
        };
        let notes_turn_of = match &engines.notes {
            Some(notes) => {
                let (lat, map, _) =
                    ingest(notes, &scope, c, EvalMode::Raw, true, &ingest_bar).await?;
                notes_add_ms.extend(lat);
                map
            }
            None => HashMap::new(),
        };
        let compare_turn_of = match &engines.compare {
            Some(compare) => {
                let (lat, map, _) =
                    ingest(compare, &scope, c, opts.mode, false, &ingest_bar).await?;
                compare_add_ms.extend(lat);
                map
            }
            None => HashMap::new(),
        };
        counts.sessions += c.sessions.len();
        counts.turns += c.turns().count();

        let questions = &c.questions[..opts
            .max_questions
            .map_or(c.questions.len(), |m| m.min(c.questions.len()))];
        for q in questions {
            counts.questions += 1;
            *counts
                .per_category
                .entry(q.category.to_string())
                .or_default() += 1;
            let req = SearchRequest::new(scope.clone(), q.question.clone(), depth);
            let t = Instant::now();
            let resp = engines.mnemo.search(req.clone()).await?;
            search_ms.push(t.elapsed().as_secs_f64() * 1e3);
            let hits = resp.results;
            let top: &[Hit] = &hits[..hits.len().min(opts.top_k)];
            returned += top.len();
            for h in top {
                tokens += bpe.encode_ordinary(&h.memory.text).len();
                covered_turns += h
                    .memory
                    .sources
                    .iter()
                    .filter(|m| turn_of.contains_key(m))
                    .count();
            }
            returned_total += 1;

            match score_question(&q.evidence, &covered(&hits, &turn_of)) {
                Some(s) => {
                    counts.questions_with_evidence += 1;
                    mnemo_tally.push(q.category, &s);
                    if !opts.pack_budgets.is_empty() {
                        pack_tally
                            .ask(
                                &engines.mnemo,
                                &scope,
                                &q.question,
                                &q.evidence,
                                &turn_of,
                                counter.as_ref(),
                                opts.pack_tuning,
                            )
                            .await?;
                    }
                    if let Some(compare) = &engines.compare {
                        let t = Instant::now();
                        let hits = compare.search(req.clone()).await?.results;
                        compare_search_ms.push(t.elapsed().as_secs_f64() * 1e3);
                        let s = score_question(&q.evidence, &covered(&hits, &compare_turn_of))
                            .ok_or_else(unscored)?;
                        compare_tally.push(q.category, &s);
                    }
                    if let Some(plain) = &engines.plain {
                        for (mode, tally) in [
                            (SearchMode::Lexical, &mut bm25_tally),
                            (SearchMode::Dense, &mut dense_tally),
                        ] {
                            let req = SearchRequest {
                                mode,
                                ..req.clone()
                            };
                            let hits = plain.search(req).await?.results;
                            let s = score_question(&q.evidence, &covered(&hits, &plain_turn_of))
                                .ok_or_else(unscored)?;
                            tally.push(q.category, &s);
                        }
                    }
                    if let (Some(notes), Some(expand)) = (&engines.notes, opts.notes) {
                        let hits = notes.search(req.clone()).await?.results;
                        let s = score_question(&q.evidence, &covered(&hits, &notes_turn_of))
                            .ok_or_else(unscored)?;
                        notes_tally.push(q.category, &s);
                        let vector = notes.embed(vec![q.question.clone()]).await?;
                        let vector = vector.first().ok_or_else(unscored)?;
                        let (s, direct, linked) = expanded_scores(
                            notes,
                            &req,
                            expand,
                            vector,
                            &opts.rank,
                            opts.top_k,
                            &q.evidence,
                            &notes_turn_of,
                        )?;
                        linked_in_top += linked;
                        expanded_questions += 1;
                        expanded_tally.push(q.category, &s);
                        per_request_tally.push(q.category, &direct);
                    }
                }
                None => counts.questions_without_evidence += 1,
            }
            if let Some(models) = &opts.qa {
                let (models, q2, top) = (models.clone(), q.clone(), top.to_vec());
                let outcome = tokio::task::spawn_blocking(move || {
                    answer_and_score(&models, q2.category, &q2.question, &q2.answer, &top)
                })
                .await?
                .with_context(|| format!("answering {:?}", q.question))?;
                qa_outcomes.push(outcome);
            }
            ask_bar.inc(1);
        }
    }
    let store = engines.mnemo.store().clone();
    counts.memories = tokio::task::spawn_blocking(move || store.stats())
        .await??
        .memories as usize;
    ingest_bar.finish_and_clear();
    ask_bar.finish_and_clear();

    let mnemo = mnemo_tally.summary();
    let compare_store = opts.compare_store.is_some().then(|| {
        let store = compare_tally.summary();
        let at10 = |r: &std::collections::BTreeMap<String, f64>| {
            r.get("recall@10").copied().unwrap_or(0.0)
        };
        crate::report::CompareSection {
            backend: "postgresql".into(),
            recall_at_10_difference: at10(&store.retrieval) - at10(&mnemo.retrieval),
            store,
            latency_ms: Latency {
                add: Percentiles {
                    p50: percentile(&compare_add_ms, 0.5),
                    p95: percentile(&compare_add_ms, 0.95),
                },
                search: Percentiles {
                    p50: percentile(&compare_search_ms, 0.5),
                    p95: percentile(&compare_search_ms, 0.95),
                },
            },
        }
    });
    let qa = match &opts.qa {
        Some(models) => QaSection::Scored(Box::new(summarize(models, &qa_outcomes))),
        None => QaSection::Skipped {
            skipped: "no answer model configured (pass --answer-model and --answer-base-url)"
                .into(),
        },
    };
    Ok(Report {
        retrieval: mnemo.retrieval,
        per_category: mnemo.per_category,
        baselines: if opts.baselines {
            [
                ("bm25".to_string(), bm25_tally.summary()),
                ("dense".to_string(), dense_tally.summary()),
            ]
            .into_iter()
            .collect()
        } else {
            Default::default()
        },
        latency_ms: Latency {
            add: Percentiles {
                p50: percentile(&add_ms, 0.5),
                p95: percentile(&add_ms, 0.95),
            },
            search: Percentiles {
                p50: percentile(&search_ms, 0.5),
                p95: percentile(&search_ms, 0.95),
            },
        },
        notes: opts.notes.map(|expand| crate::report::NotesSection {
            expand_links: expand,
            notes: notes_tally.summary(),
            expanded: expanded_tally.summary(),
            per_request: per_request_tally.summary(),
            mean_linked_in_top_k: linked_in_top as f64 / expanded_questions.max(1) as f64,
            add: Percentiles {
                p50: percentile(&notes_add_ms, 0.5),
                p95: percentile(&notes_add_ms, 0.95),
            },
        }),
        pack: (!opts.pack_budgets.is_empty()).then(|| pack_tally.summary(counter.name())),
        compare_store,
        counts,
        context: ContextCost {
            top_k: opts.top_k,
            mean_memories_returned: returned as f64 / returned_total.max(1) as f64,
            mean_tokens_returned: tokens as f64 / returned_total.max(1) as f64,
            mean_evidence_turns_per_memory: covered_turns as f64 / returned.max(1) as f64,
        },
        qa,
        config: serde_json::json!({
            "data": opts.data.display().to_string(),
            "mode": opts.mode.as_str(),
            "store": if opts.store_url.is_some() { "postgresql" } else { "sqlite" },
            "top_k": opts.top_k,
            "embedder": opts.embedder.model_id(),
            "rank": {
                "dense_weight": opts.rank.dense_weight,
                "lexical_weight": opts.rank.lexical_weight,
                "candidate_factor": opts.rank.candidate_factor,
                "min_candidates": opts.rank.min_candidates,
            },
            "indexing": {
                "before": opts.indexing.before,
                "after": opts.indexing.after,
                "embed_before": opts.indexing.embed_before,
                "embed_after": opts.indexing.embed_after,
                "speaker": opts.indexing.speaker,
                "own_weight": opts.indexing.own_weight,
            },
            "max_questions": opts.max_questions,
            "max_conversations": opts.max_conversations,
            "notes_expand_links": opts.notes,
            "link_weight": opts.rank.link_weight,
            "note_config": {
                "neighbours": opts.note_config.neighbours,
                "link_similarity": opts.note_config.link_similarity,
                "link_entity": opts.note_config.link_entity,
                "max_rule_links": opts.note_config.max_rule_links,
                "speaker_link_df": opts.note_config.speaker_link_df,
                "speaker_link_pool": opts.note_config.speaker_link_pool,
            },
            "pack_budgets": opts.pack_budgets,
            "pack_tuning": {
                "neighbours": opts.pack_tuning.neighbours,
                "neighbour_decay": opts.pack_tuning.neighbour_decay,
                "summary_weight": opts.pack_tuning.summary_weight,
                "tokens_per_candidate": opts.pack_tuning.tokens_per_candidate,
                "excerpt_words": opts.pack_tuning.excerpt_words,
                "clip": opts.pack_tuning.clip,
                "size_exponent": opts.pack_tuning.pack.size_exponent,
            },
            "infer_model": opts.infer_model.as_ref().map(|m| m.model_id().to_string()),
            "mnemo_version": env!("CARGO_PKG_VERSION"),
        }),
        search_samples_ms: search_ms,
    })
}

/// A question with evidence that scored nothing: the evidence was checked non-empty before the
/// searches, so this is a bug in the eval, reported as one rather than a panic.
fn unscored() -> mnemo_core::Error {
    mnemo_core::Error::internal("a question with evidence could not be scored")
}
