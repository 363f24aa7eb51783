//! Command-line grammar: the global flags ([`Cli`]) and the subcommands ([`Command`]). The
//! arguments live by group: [`settings`] the engine flags every command reads, [`memories`] the
//! commands on memories (add, search, get, list, update, delete, erase, link, history, context),
//! [`log`] the conversation log, jobs and profile, [`admin`] the server, keys, models and the
//! store's import, [`measure`] `bench` and `eval`.

mod admin;
mod log;
mod measure;
mod memories;
mod settings;

pub(crate) use admin::{ImportArgs, KeysAction, ModelsAction, ServeArgs};
pub(crate) use log::{JobsAction, ProfileAction, SegmentsAction, SessionsAction};
pub(crate) use measure::{BenchArgs, CorrectnessArgs, EvalWorkload, LocomoArgs, RelationsArgs};
pub(crate) use memories::{
    AddArgs, ContextArgs, DeleteAllArgs, DeleteArgs, EraseArgs, GetArgs, GraphArgs, HistoryArgs,
    LinkArgs, ListArgs, SearchArgs, UpdateArgs,
};
pub(crate) use settings::{JobArgs, LlmArgs, NoteArgs, RemoteEmbedderArgs, TierArgs};

use clap::{Args, Parser, Subcommand};
use std::path::PathBuf;

#[derive(Debug, Parser)]
#[command(
    name = "mnemo",
    version,
    about = "mnemo: scoped, searchable, auditable memory for LLM agents"
)]
pub(crate) struct Cli {
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

#[derive(Debug, Args, Clone)]
pub(crate) struct ScopeArgs {
    #[arg(long)]
    pub user_id: Option<String>,
    #[arg(long)]
    pub agent_id: Option<String>,
    #[arg(long)]
    pub run_id: Option<String>,
}

#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// Remember a text (or, with --messages, a conversation).
    Add(AddArgs),
    /// Hybrid search within a scope.
    Search(SearchArgs),
    /// What the agent should know now, under a token budget: the profile, the session's recent
    /// exchanges, matched topic segments and memories, as one prompt-ready text.
    Context(ContextArgs),
    /// Show one memory.
    Get(GetArgs),
    /// List memories of a scope, oldest first, a page at a time.
    List(ListArgs),
    /// Change a memory's text and/or metadata.
    Update(UpdateArgs),
    /// Delete a memory (kept for audit unless --hard).
    Delete(DeleteArgs),
    /// Erase for good: a memory (its text leaves the store's files — record, indexes,
    /// history, neighbours' context, stored results, and a raw memory's message), a whole
    /// session (--session-id) or everything of the scope (--all --confirm); ids, times and
    /// ERASE events remain.
    Erase(EraseArgs),
    /// Delete every memory of a scope.
    DeleteAll(DeleteAllArgs),
    /// A memory's history.
    History(HistoryArgs),
    /// An entity's relations: its neighbourhood in the entity graph, now or as of a time.
    Graph(GraphArgs),
    /// Link a memory to another of its scope (`related` unless --kind), or list its links
    /// (only ID given), or remove a link (--remove).
    Link(LinkArgs),
    /// Conversation sessions: list a scope's, read one's messages, show its window, delete
    /// its memories.
    Sessions {
        #[command(subcommand)]
        action: SessionsAction,
    },
    /// Background jobs (async adds): list, show, retry a failed one.
    Jobs {
        #[command(subcommand)]
        action: JobsAction,
    },
    /// Topic segments (mid-term memory) and their pages.
    Segments {
        #[command(subcommand)]
        action: SegmentsAction,
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
    Import(ImportArgs),
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
    Bench(BenchArgs),
}
