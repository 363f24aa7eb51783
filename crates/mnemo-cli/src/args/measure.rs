//! `mnemo bench` and `mnemo eval`: the workloads and their knobs.

use clap::{Args, Subcommand};
use std::path::PathBuf;

/// `mnemo bench`.
#[derive(Debug, Args, Clone)]
pub(crate) struct BenchArgs {
    #[arg(long, default_value_t = 10_000)]
    pub memories: usize,
    #[arg(long, default_value_t = 300)]
    pub queries: usize,
    /// Memories added through the full add path (embedding included) for add_per_s.
    #[arg(long, default_value_t = 3000)]
    pub add_sample: usize,
    /// Keep the bulk embeddings in this file and reuse them on the next run with the same
    /// texts and model (the embed-only baseline then comes from the add sample alone).
    #[arg(long)]
    pub vector_cache: Option<PathBuf>,
    /// Build the benchmark store in this directory and keep it (for `mnemo serve` load
    /// runs); it must not exist yet. Default: a temporary directory, removed afterwards.
    #[arg(long)]
    pub store_dir: Option<PathBuf>,
    /// On PostgreSQL (`--store postgres://…`): build the benchmark store in this schema and
    /// keep it (it must not exist yet), or with `--search-only` reopen it. Default: a
    /// throwaway schema, dropped afterwards.
    #[arg(long, conflicts_with = "store_dir")]
    pub schema: Option<String>,
    /// Reopen the store a previous run left in `--store-dir` or `--schema` (same
    /// `--memories` and `--add-sample`) and measure search only; the bulk vectors come from
    /// `--vector-cache`.
    #[arg(long, requires = "vector_cache")]
    pub search_only: bool,
    /// Measure conversation ingestion and search on this LoCoMo file instead: each session
    /// one add, as `eval locomo` adds it, into one store (one scope per conversation).
    #[arg(long, conflicts_with_all = ["vector_cache", "search_only"])]
    pub conversations: Option<PathBuf>,
    /// Results per search in the conversation workload.
    #[arg(long, default_value_t = 10, requires = "conversations")]
    pub top_k: usize,
    /// In the conversation workload, also add every session with the relation rules off (into
    /// a scope of its own, alternating with the rules-on add) and report the ratio.
    #[arg(long, requires = "conversations")]
    pub compare_relation_rules: bool,
    /// How the local ONNX embedder hands its int8 weights to ONNX Runtime, in place of the
    /// coding this CPU sums exactly and fastest: `offset` runs the u8·u8 kernels a CPU without
    /// VNNI uses, on any CPU, so the add path can be measured at that embedding speed.
    #[arg(long, value_enum)]
    pub onnx_weights: Option<OnnxWeights>,
}

/// `mnemo bench --onnx-weights`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum OnnxWeights {
    /// s8 weights, the u8·s8 kernels (exact only where the CPU has VNNI).
    Signed,
    /// u8 weights around 128, the u8·u8 kernels (exact on every CPU).
    Offset,
}

impl From<OnnxWeights> for mnemo_models::WeightCoding {
    fn from(w: OnnxWeights) -> Self {
        match w {
            OnnxWeights::Signed => Self::Signed,
            OnnxWeights::Offset => Self::Offset,
        }
    }
}

#[derive(Debug, Subcommand)]
pub(crate) enum EvalWorkload {
    /// LoCoMo: ingest each conversation into a fresh scope, ask its questions, score.
    Locomo(Box<LocomoArgs>),
    /// Memory correctness scenarios (moves, job changes, reversals, forgetting, corrections).
    Correctness(CorrectnessArgs),
    /// LoCoMo's temporal questions: does the tagger date the evidence as the gold answer does?
    Temporal(TemporalArgs),
    /// Precision and recall of the rule relation extractor on hand-labelled sentences.
    Relations(RelationsArgs),
}

#[derive(Debug, Args, Clone)]
pub(crate) struct TemporalArgs {
    /// The LoCoMo JSON file.
    #[arg(long)]
    pub data: PathBuf,
    /// Where the report JSON goes (default: stdout only).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Read numeric dates such as 05/08/2023 day first (5 August) instead of month first.
    #[arg(long)]
    pub day_first: bool,
    /// Also run the retrieval evaluation (raw adds, the configured embedder) and report the
    /// temporal category's recall@10 with temporal search on and off, from the same run.
    #[arg(long)]
    pub recall: bool,
}

#[derive(Debug, Args, Clone)]
pub(crate) struct RelationsArgs {
    /// The LoCoMo JSON file the dev labels refer to (without it only the built-in own set runs).
    #[arg(long)]
    pub data: Option<PathBuf>,
    /// Dev labels to use instead of the built-in ones (needs --data).
    #[arg(long)]
    pub labels: Option<PathBuf>,
    /// Where the report JSON goes (default: stdout only).
    #[arg(long)]
    pub out: Option<PathBuf>,
}

#[derive(Debug, Args, Clone)]
pub(crate) struct CorrectnessArgs {
    /// A directory of scenario JSON files (default: the built-in scenarios).
    #[arg(long)]
    pub scenarios: Option<PathBuf>,
    /// Score a real model at an OpenAI-compatible endpoint instead of the scenarios' scripts.
    #[arg(long)]
    pub model: Option<String>,
    #[arg(long)]
    pub base_url: Option<String>,
    #[arg(long)]
    pub api_key_env: Option<String>,
    /// Where the report JSON goes (default: stdout only).
    #[arg(long)]
    pub out: Option<PathBuf>,
}

#[derive(Debug, Args, Clone)]
pub(crate) struct LocomoArgs {
    /// The LoCoMo JSON file.
    #[arg(long)]
    pub data: PathBuf,
    /// raw: one memory per turn; infer: memories extracted by a chat model.
    #[arg(long, default_value = "raw", value_parser = ["raw", "infer"])]
    pub mode: String,
    /// Memories handed to the answer model (retrieval is scored down to 20 regardless).
    #[arg(long, default_value_t = 20)]
    pub top_k: usize,
    /// Where the report JSON goes.
    #[arg(long)]
    pub out: PathBuf,
    #[arg(long)]
    pub markdown: Option<PathBuf>,
    /// Directory for the SVG and PNG charts.
    #[arg(long)]
    pub plots: Option<PathBuf>,
    /// Only the first N questions of each conversation.
    #[arg(long)]
    pub max_questions: Option<usize>,
    /// Only the first N conversations.
    #[arg(long)]
    pub max_conversations: Option<usize>,
    /// Skip the BM25-alone and dense-alone baselines (faster tuning runs).
    #[arg(long)]
    pub no_baselines: bool,
    /// Also store every turn as a note (rules, no model) and score notes without and with
    /// link expansion, per category, in the same run.
    #[arg(long)]
    pub notes: bool,
    /// With --notes: linked notes per hit in the expanded ranking.
    #[arg(long, default_value_t = 2)]
    pub expand_links: usize,
    /// Link expansion: a linked result scores its own score × (1 + this × the sum of its
    /// parents' scores × link strengths).
    #[arg(long)]
    pub link_weight: Option<f32>,

    /// Keep the stores the run built (under <data dir>/eval/).
    #[arg(long)]
    pub keep_stores: bool,
    /// Also run mnemo on this PostgreSQL database (a fresh schema, dropped afterwards) over the
    /// same conversations and questions, and report both recalls and their difference.
    #[arg(long, value_name = "POSTGRES_URL")]
    pub compare_store: Option<String>,
    /// Graph search: mnemo's searches walk the relations of the entities each question names
    /// and rank the memories stating them (the run's other settings unchanged). With
    /// `--mode infer` the chat model also extracts the relations (one more call per add).
    #[arg(long)]
    pub graph: bool,
    /// Chat model that answers from the retrieved memories (enables QA).
    #[arg(long)]
    pub answer_model: Option<String>,
    /// OpenAI-compatible base URL of the answer model, e.g. http://127.0.0.1:11434/v1.
    #[arg(long)]
    pub answer_base_url: Option<String>,
    /// Environment variable holding the answer endpoint's API key.
    #[arg(long)]
    pub answer_api_key_env: Option<String>,
    /// Judge model (default: the answer model), on the answer endpoint unless given.
    #[arg(long)]
    pub judge_model: Option<String>,
    #[arg(long)]
    pub judge_base_url: Option<String>,
    #[arg(long)]
    pub judge_api_key_env: Option<String>,
    /// Context indexing: earlier messages in a memory's index text (default: mnemo's).
    #[arg(long)]
    pub context_before: Option<usize>,
    /// Context indexing: later messages of the same add call.
    #[arg(long)]
    pub context_after: Option<usize>,
    /// Context indexing: earlier messages in the embedded text.
    #[arg(long)]
    pub embed_before: Option<usize>,
    /// Context indexing: later messages in the embedded text.
    #[arg(long)]
    pub embed_after: Option<usize>,
    /// Context indexing: repetitions of a memory's own line in its lexical index text.
    #[arg(long)]
    pub own_weight: Option<usize>,
    /// Prefix index lines with the speaker's name.
    #[arg(long)]
    pub speaker: Option<bool>,
    /// Fusion weight of the dense signal.
    #[arg(long)]
    pub dense_weight: Option<f32>,
    /// Fusion weight of the BM25 signal.
    #[arg(long)]
    pub lexical_weight: Option<f32>,
    /// Candidates taken from each side: max(min, top_k × this factor).
    #[arg(long)]
    pub candidate_factor: Option<usize>,
    /// Weight of the entity signal (default 0.1; 0 turns entity candidates off).
    #[arg(long)]
    pub entity_weight: Option<f32>,
    /// Also score context packs against plain search cut to the same token budgets, e.g.
    /// `250,500,1000,2000` (cl100k tokens).
    #[arg(long, value_delimiter = ',')]
    pub pack_budgets: Vec<u32>,
    /// Packs: exchanges shown each side of a matched one (default: mnemo's).
    #[arg(long)]
    pub pack_neighbours: Option<usize>,
    /// Packs: a neighbour's value per step away, as a share of its source's.
    #[arg(long)]
    pub pack_neighbour_decay: Option<f32>,
    /// Packs: items are taken by value / tokens^this (0: by value; 1: by value per token).
    #[arg(long)]
    pub pack_size_exponent: Option<f32>,
    /// Packs: a segment summary's value as a share of the page that reached it (0: no
    /// summaries).
    #[arg(long)]
    pub pack_summary_weight: Option<f32>,
    /// Packs: clip excerpts inside long sentences (see `ContextTuning::clip`).
    #[arg(long)]
    pub pack_clip: Option<bool>,
    /// Packs: memories retrieved = budget / this (between 20 and 200).
    #[arg(long)]
    pub pack_tokens_per_candidate: Option<u32>,
    /// Packs: retrieved turns longer than this many words show their sentences that share
    /// words with the question (0: whole turns).
    #[arg(long)]
    pub pack_excerpt_words: Option<usize>,
}

#[cfg(test)]
mod tests {
    use super::OnnxWeights;
    use crate::args::{Cli, Command};
    use clap::Parser;

    fn bench(extra: &[&str]) -> Result<Option<OnnxWeights>, clap::Error> {
        let argv = [&["mnemo", "bench", "--memories", "10"][..], extra].concat();
        match Cli::try_parse_from(argv)?.command {
            Command::Bench(b) => Ok(b.onnx_weights),
            other => panic!("parsed as {other:?}"),
        }
    }

    #[test]
    fn the_bench_takes_a_weight_coding_and_names_a_wrong_one() {
        assert_eq!(bench(&[]).unwrap(), None);
        assert_eq!(
            bench(&["--onnx-weights", "offset"]).unwrap(),
            Some(OnnxWeights::Offset)
        );
        assert_eq!(
            mnemo_models::WeightCoding::from(
                bench(&["--onnx-weights", "signed"]).unwrap().unwrap()
            ),
            mnemo_models::WeightCoding::Signed
        );
        let err = bench(&["--onnx-weights", "int4"]).unwrap_err().to_string();
        assert!(
            err.contains("--onnx-weights") && err.contains("offset"),
            "{err}"
        );
    }
}
