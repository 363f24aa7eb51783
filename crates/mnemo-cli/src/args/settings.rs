//! The engine flags every command reads (embedder endpoint, chat model, notes, tiers, jobs),
//! flattened into [`Cli`](super::Cli); each also reads its `MNEMO_*` variable.

use clap::Args;
use std::path::PathBuf;

/// Settings of `--embedder openai` (ignored by the local backends).
#[derive(Debug, Args, Clone)]
pub(crate) struct RemoteEmbedderArgs {
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
pub(crate) struct LlmArgs {
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
    /// The chat model reads images: image parts of messages are described by it and stored as
    /// text (never the image); without this they are refused.
    #[arg(long, env = "MNEMO_LLM_VISION")]
    pub llm_vision: bool,
}

/// Note adds (`--memory-type note`): neighbours considered and the link rules.
#[derive(Debug, Args, Clone)]
pub(crate) struct NoteArgs {
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
pub(crate) struct JobArgs {
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
    pub(crate) fn settings(&self) -> mnemo::settings::JobsSection {
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
pub(crate) struct TierArgs {
    /// Pages (exchanges) each session keeps verbatim in its short-term window (at least 1).
    #[arg(long, env = "MNEMO_SHORT_TERM_CAPACITY", default_value_t = 10)]
    pub short_term_capacity: usize,
    /// Active mid-term segments per scope; above it the coldest is evicted (default: no limit).
    #[arg(long, env = "MNEMO_MID_TERM_CAPACITY")]
    pub mid_term_capacity: Option<usize>,
    /// A moving page joins the best segment when 0.7·cosine + 0.3·keyword overlap reaches
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
    pub(crate) fn settings(&self) -> mnemo::settings::TiersSection {
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
