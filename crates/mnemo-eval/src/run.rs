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
//!
//! [`run_locomo`] is a list of steps, each in its own file: the engines opened (`engines`), and
//! per conversation its sessions ingested into every engine (`ingest`, with the requests of
//! `requests`), then per question the searches scored against the evidence, link expansion
//! included (`ask`, `expand`), and QA; at the end the report (`summary`).

mod ask;
mod engines;
mod expand;
mod ingest;
mod requests;
mod summary;

pub use expand::merged_by_score;
pub use requests::{add_request, note_request, scope_of};

use crate::locomo::{Conversation, Question};
use crate::metrics::RetrievalTally;
use crate::qa::{QaModels, QaOutcome};
use crate::report::{Counts, Report};
use anyhow::{bail, Context, Result};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use mnemo::WindowIndexing;
use mnemo_core::{ChatModel, Embedder, Hit, MessageId, RankParams};
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

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
    pub indexing: WindowIndexing,
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
    /// Graph search on mnemo's engine (`RelationConfig::graph_search`); the other engines
    /// search as they would without it.
    pub graph: bool,
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

/// What the steps of a run count and time, summed over every conversation.
#[derive(Default)]
struct Tally {
    counts: Counts,
    mnemo: RetrievalTally,
    bm25: RetrievalTally,
    dense: RetrievalTally,
    compare: RetrievalTally,
    notes: RetrievalTally,
    /// The notes store with link expansion, merged by score.
    expanded: RetrievalTally,
    /// The same searches' direct hits alone (the matched control of `expanded`).
    per_request: RetrievalTally,
    /// mnemo's searches with temporal search off (the control of `mnemo`).
    temporal_off: RetrievalTally,
    /// Add and search latencies in ms, per engine.
    add_ms: Vec<f64>,
    search_ms: Vec<f64>,
    compare_add_ms: Vec<f64>,
    compare_search_ms: Vec<f64>,
    notes_add_ms: Vec<f64>,
    /// Memories returned to the answer model, their tokens and the turns they cover, and the
    /// searches that returned them.
    returned: usize,
    tokens: usize,
    covered_turns: usize,
    returned_total: usize,
    /// Linked results in the notes store's `top_k`, and the questions they were counted over.
    linked_in_top: usize,
    expanded_questions: usize,
    qa: Vec<QaOutcome>,
    pack: crate::pack::PackTally,
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
    let engines = engines::open_engines(opts).await?;
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
    let mut tally = Tally {
        counts: Counts {
            conversations: conversations.len(),
            ..Counts::default()
        },
        pack: crate::pack::PackTally::new(&opts.pack_budgets),
        ..Tally::default()
    };
    let (ingest_bar, ask_bar) = bars(opts, &conversations);
    for c in &conversations {
        let scope = scope_of(c)?;
        ingest_bar.set_message(c.sample_id.clone());
        let turns =
            ingest::conversation(&engines, &scope, c, opts, &ingest_bar, &mut tally).await?;
        let asker = ask::Asker {
            opts,
            engines: &engines,
            scope: &scope,
            turns: &turns,
            bpe: &bpe,
            counter: counter.as_ref(),
            // Questions are asked after the conversation: "last week" means the week before
            // its last session.
            reference: c.sessions.iter().map(|s| s.date).max(),
        };
        for q in asked(c, opts) {
            asker.question(q, &mut tally).await?;
            ask_bar.inc(1);
        }
    }
    let store = engines.mnemo.store().clone();
    tally.counts.memories = tokio::task::spawn_blocking(move || store.stats())
        .await??
        .memories as usize;
    ingest_bar.finish_and_clear();
    ask_bar.finish_and_clear();
    Ok(summary::report(opts, tally, counter.name()))
}

/// The questions of `c` the run asks (the first `max_questions`).
fn asked<'a>(c: &'a Conversation, opts: &EvalOptions) -> &'a [Question] {
    &c.questions[..opts
        .max_questions
        .map_or(c.questions.len(), |m| m.min(c.questions.len()))]
}

/// The progress bars of ingestion (every turn into every engine) and of the questions.
fn bars(opts: &EvalOptions, conversations: &[Conversation]) -> (ProgressBar, ProgressBar) {
    let total_turns: usize = conversations.iter().map(|c| c.turns().count()).sum();
    let total_questions: usize = conversations.iter().map(|c| asked(c, opts).len()).sum();
    let copies = 1
        + usize::from(opts.baselines)
        + usize::from(opts.notes.is_some())
        + usize::from(opts.compare_store.is_some());
    (
        bar((total_turns * copies) as u64, "ingest", opts.progress),
        bar(total_questions as u64, "questions", opts.progress),
    )
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

/// The turns each hit covers (its source messages mapped to turn ids).
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

/// A question with evidence that scored nothing: the evidence was checked non-empty before the
/// searches, so this is a bug in the eval, reported as one rather than a panic.
fn unscored() -> mnemo_core::Error {
    mnemo_core::Error::internal("a question with evidence could not be scored")
}
