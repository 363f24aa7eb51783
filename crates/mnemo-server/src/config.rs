//! Server settings. The binary reads them from flags > `MNEMO_*` environment > `mnemo.toml` >
//! defaults: [`FileConfig`] is the file's shape (unknown keys are errors), and each of its values
//! becomes the default of the flag that reads the same `MNEMO_*` variable (mnemo-cli's
//! `config.rs`; the process environment is never written), so an environment variable or a flag
//! always wins. [`ServerConfig`] is the validated result. `mnemo.example.toml` documents every
//! key; a test parses it.

use mnemo_core::{Error, Result};
use serde::Deserialize;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

/// The engine's sections, shared with the library (`mnemo::Settings`) so a key means the same
/// thing to `mnemo serve` and to the Python package.
pub use mnemo::settings::{LlmSection, NotesSection, StoreSection, TiersSection};

/// The longest header or body read timeout accepted, a day: hyper adds the timeout to the
/// current instant, which overflows (and panics every connection) for values near `u64::MAX`.
pub const MAX_READ_TIMEOUT_SECS: u64 = 86_400;

/// Validated settings of `mnemo serve`.
#[derive(Debug, Clone)]
pub struct ServerConfig {
    pub bind: SocketAddr,
    /// Accept requests without an API key; refused unless `bind` is a loopback address.
    pub no_auth: bool,
    pub max_body_bytes: usize,
    /// Requests per minute per API key (0: unlimited) and the burst allowed at once; `None`:
    /// the default of the server's kind ([`RateLimits::default_for`]).
    pub rate_limit_per_minute: Option<u32>,
    pub rate_limit_burst: Option<u32>,
    /// Milliseconds of a request's work that cost one more token, past its first
    /// `FREE_WORK_SHARES` such shares (0: work is not priced; see [`crate::ratelimit`]);
    /// `None`: the default of the server's kind.
    pub rate_limit_work_ms: Option<u32>,
    /// Origins CORS allows; empty (the default) sends no CORS headers.
    pub cors_origins: Vec<String>,
    /// Write memory text and queries into the logs.
    pub log_content: bool,
    pub max_in_flight: usize,
    /// A `keys.db` file from before API keys lived in the store (default: the one in the
    /// data directory). `mnemo serve` imports its keys into the store at start, once (keys
    /// already there are kept as they are); the server itself only reads the store.
    pub keys_path: PathBuf,
    /// Let keys bound to no user (agent or run keys) add to and change memories of a user they
    /// name. Off by default: such a write would appear in that user's own searches.
    pub allow_agent_writes_for_users: bool,
    /// How long a client may take to send a request's headers (also how long a kept-alive
    /// connection may idle), and its whole body; slower clients are disconnected (408).
    pub header_read_timeout_secs: u64,
    pub body_read_timeout_secs: u64,
    /// Messages one add may carry (and a batch of adds in all); at most the library's
    /// `MAX_MESSAGES_PER_ADD`, which is also the default.
    pub max_messages_per_add: usize,
    /// Workers running background jobs (async adds) in this server; 0 leaves them to other
    /// servers on the same store.
    pub job_workers: usize,
}

/// The rate limits a server applies to each API key (see [`crate::ratelimit`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RateLimits {
    /// Tokens per minute (0: no limit).
    pub per_minute: u32,
    pub burst: u32,
    /// Work time one token pays for, in ms (0: work is not priced).
    pub work_ms: u32,
}

impl RateLimits {
    /// What a keyed server shares between its tenants: 1200 tokens a minute, 100 at once, and
    /// 10 ms of work a token, so no tenant takes more than its share of the server's time.
    pub const KEYED: RateLimits = RateLimits {
        per_minute: 1200,
        burst: 100,
        work_ms: 10,
    };
    /// What a `--no-auth` server gives its one local user: no limit, as the CLI has none. Such
    /// a server listens on loopback only, so nobody else shares it.
    pub const SINGLE_USER: RateLimits = RateLimits {
        per_minute: 0,
        burst: 100,
        work_ms: 0,
    };

    /// The defaults of a server with (`no_auth = false`) or without API keys.
    pub fn default_for(no_auth: bool) -> Self {
        if no_auth {
            Self::SINGLE_USER
        } else {
            Self::KEYED
        }
    }
}

impl ServerConfig {
    /// The limits this server applies: those given, the default of its kind for the rest.
    pub fn rate_limits(&self) -> RateLimits {
        let d = RateLimits::default_for(self.no_auth);
        RateLimits {
            per_minute: self.rate_limit_per_minute.unwrap_or(d.per_minute),
            burst: self.rate_limit_burst.unwrap_or(d.burst),
            work_ms: self.rate_limit_work_ms.unwrap_or(d.work_ms),
        }
    }

    pub fn new(bind: SocketAddr, keys_path: PathBuf) -> Self {
        Self {
            bind,
            no_auth: false,
            max_body_bytes: 1 << 20,
            rate_limit_per_minute: None,
            rate_limit_burst: None,
            rate_limit_work_ms: None,
            cors_origins: Vec::new(),
            log_content: false,
            max_in_flight: 64,
            keys_path,
            allow_agent_writes_for_users: false,
            header_read_timeout_secs: 10,
            body_read_timeout_secs: 30,
            max_messages_per_add: mnemo_core::limits::MAX_MESSAGES_PER_ADD,
            job_workers: 2,
        }
    }

    pub fn validate(&self) -> Result<()> {
        if self.no_auth && !self.bind.ip().is_loopback() {
            return Err(Error::invalid(
                "no_auth",
                format!(
                    "--no-auth is only allowed on a loopback address, not {}",
                    self.bind
                ),
            ));
        }
        if self.max_body_bytes < 1024 {
            return Err(Error::invalid("max_body_bytes", "must be at least 1024"));
        }
        let timeouts = 1..=MAX_READ_TIMEOUT_SECS;
        if !timeouts.contains(&self.header_read_timeout_secs)
            || !timeouts.contains(&self.body_read_timeout_secs)
        {
            return Err(Error::invalid(
                "read_timeout",
                format!(
                    "header and body read timeouts must be between 1 and {MAX_READ_TIMEOUT_SECS} seconds"
                ),
            ));
        }
        let cap = mnemo_core::limits::MAX_MESSAGES_PER_ADD;
        if self.max_messages_per_add == 0 || self.max_messages_per_add > cap {
            return Err(Error::invalid(
                "max_messages_per_add",
                format!("must be between 1 and {cap}"),
            ));
        }
        if self.max_in_flight == 0 {
            return Err(Error::invalid("max_in_flight", "must be at least 1"));
        }
        for o in &self.cors_origins {
            if !(o.starts_with("http://") || o.starts_with("https://")) || o.ends_with('/') {
                return Err(Error::invalid(
                    "cors_origins",
                    format!("{o:?} is not an origin like https://app.example.com"),
                ));
            }
        }
        Ok(())
    }
}

/// The shape of `mnemo.toml`.
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct FileConfig {
    pub data_dir: Option<PathBuf>,
    pub models_dir: Option<PathBuf>,
    pub embedder: Option<String>,
    pub threads: Option<usize>,
    #[serde(default)]
    pub store: StoreSection,
    #[serde(default)]
    pub server: ServerSection,
    #[serde(default)]
    pub llm: LlmSection,
    #[serde(default)]
    pub notes: NotesSection,
    #[serde(default)]
    pub tiers: TiersSection,
    #[serde(default)]
    pub jobs: JobsSection,
    /// Count reads (access counts, segment visits); see `MemoryConfig::usage_tracking`.
    pub usage_tracking: Option<bool>,
}

#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ServerSection {
    pub bind: Option<String>,
    pub no_auth: Option<bool>,
    pub max_body_bytes: Option<usize>,
    pub rate_limit_per_minute: Option<u32>,
    pub rate_limit_burst: Option<u32>,
    pub rate_limit_work_ms: Option<u32>,
    pub cors_origins: Option<Vec<String>>,
    pub log_content: Option<bool>,
    pub max_in_flight: Option<usize>,
    pub keys_path: Option<PathBuf>,
    pub allow_agent_writes_for_users: Option<bool>,
    pub header_read_timeout_secs: Option<u64>,
    pub body_read_timeout_secs: Option<u64>,
    pub max_messages_per_add: Option<usize>,
    /// Job workers of `mnemo serve` (`--job-workers`).
    pub job_workers: Option<usize>,
}

/// `[jobs]`: retries, leases and the queue's admission limit (the CLI's `--job-*` flags).
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct JobsSection {
    pub max_attempts: Option<u32>,
    pub backoff_base_ms: Option<u64>,
    pub backoff_max_ms: Option<u64>,
    pub lease_secs: Option<u64>,
    pub max_queue_depth: Option<u64>,
    pub poll_ms: Option<u64>,
}

impl FileConfig {
    pub fn parse(text: &str) -> Result<Self> {
        let c: Self =
            toml::from_str(text).map_err(|e| Error::invalid("mnemo.toml", e.to_string()))?;
        // A NUL in a value is refused here, as the command line and the environment cannot
        // carry one either (TOML strings can: `"\u0000"`), so all three sources accept the
        // same values.
        if let Some((key, _)) = c.env_defaults().iter().find(|(_, v)| v.contains('\0')) {
            return Err(Error::invalid(
                "mnemo.toml",
                format!("the value for {key} contains a NUL character"),
            ));
        }
        Ok(c)
    }

    pub fn load(path: &Path) -> Result<Self> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| Error::invalid("config", format!("{}: {e}", path.display())))?;
        Self::parse(&text)
    }

    /// Each setting the file gives, keyed by the `MNEMO_*` variable of the flag it defaults.
    pub fn env_defaults(&self) -> Vec<(&'static str, String)> {
        let mut out = Vec::new();
        let mut put = |k: &'static str, v: Option<String>| {
            if let Some(v) = v {
                out.push((k, v));
            }
        };
        let path = |p: &Option<PathBuf>| p.as_ref().map(|p| p.display().to_string());
        let s = &self.server;
        let l = &self.llm;
        put("MNEMO_DATA_DIR", path(&self.data_dir));
        put("MNEMO_MODELS_DIR", path(&self.models_dir));
        put("MNEMO_EMBEDDER", self.embedder.clone());
        put("MNEMO_THREADS", self.threads.map(|v| v.to_string()));
        put("MNEMO_STORE_URL", self.store.url.clone());
        put(
            "MNEMO_STORE_POOL_SIZE",
            self.store.pool_size.map(|v| v.to_string()),
        );
        put("MNEMO_BIND", s.bind.clone());
        put("MNEMO_NO_AUTH", s.no_auth.map(|v| v.to_string()));
        put(
            "MNEMO_MAX_BODY_BYTES",
            s.max_body_bytes.map(|v| v.to_string()),
        );
        put(
            "MNEMO_RATE_LIMIT_PER_MINUTE",
            s.rate_limit_per_minute.map(|v| v.to_string()),
        );
        put(
            "MNEMO_RATE_LIMIT_BURST",
            s.rate_limit_burst.map(|v| v.to_string()),
        );
        put(
            "MNEMO_RATE_LIMIT_WORK_MS",
            s.rate_limit_work_ms.map(|v| v.to_string()),
        );
        put(
            "MNEMO_CORS_ORIGINS",
            s.cors_origins.as_ref().map(|v| v.join(",")),
        );
        put("MNEMO_LOG_CONTENT", s.log_content.map(|v| v.to_string()));
        put(
            "MNEMO_MAX_IN_FLIGHT",
            s.max_in_flight.map(|v| v.to_string()),
        );
        put("MNEMO_KEYS_PATH", path(&s.keys_path));
        put(
            "MNEMO_ALLOW_AGENT_WRITES_FOR_USERS",
            s.allow_agent_writes_for_users.map(|v| v.to_string()),
        );
        put(
            "MNEMO_HEADER_READ_TIMEOUT_SECS",
            s.header_read_timeout_secs.map(|v| v.to_string()),
        );
        put(
            "MNEMO_BODY_READ_TIMEOUT_SECS",
            s.body_read_timeout_secs.map(|v| v.to_string()),
        );
        put(
            "MNEMO_MAX_MESSAGES_PER_ADD",
            s.max_messages_per_add.map(|v| v.to_string()),
        );
        put("MNEMO_JOB_WORKERS", s.job_workers.map(|v| v.to_string()));
        let j = &self.jobs;
        put(
            "MNEMO_JOB_MAX_ATTEMPTS",
            j.max_attempts.map(|v| v.to_string()),
        );
        put(
            "MNEMO_JOB_BACKOFF_BASE_MS",
            j.backoff_base_ms.map(|v| v.to_string()),
        );
        put(
            "MNEMO_JOB_BACKOFF_MAX_MS",
            j.backoff_max_ms.map(|v| v.to_string()),
        );
        put("MNEMO_JOB_LEASE_SECS", j.lease_secs.map(|v| v.to_string()));
        put(
            "MNEMO_MAX_QUEUE_DEPTH",
            j.max_queue_depth.map(|v| v.to_string()),
        );
        put("MNEMO_JOB_POLL_MS", j.poll_ms.map(|v| v.to_string()));
        put("MNEMO_LLM_BASE_URL", l.base_url.clone());
        put("MNEMO_LLM_MODEL", l.model.clone());
        put("MNEMO_LLM_API_KEY_ENV", l.api_key_env.clone());
        put("MNEMO_LLM_GGUF", path(&l.gguf));
        put(
            "MNEMO_LLM_TIMEOUT_SECS",
            l.timeout_secs.map(|v| v.to_string()),
        );
        put(
            "MNEMO_ADDITIVE_ONLY",
            l.additive_only.map(|v| v.to_string()),
        );
        put("MNEMO_LLM_VISION", l.vision.map(|v| v.to_string()));
        let n = &self.notes;
        put("MNEMO_NOTE_NEIGHBOURS", n.neighbours.map(|v| v.to_string()));
        put(
            "MNEMO_NOTE_LINK_SIMILARITY",
            n.link_similarity.map(|v| v.to_string()),
        );
        put(
            "MNEMO_NOTE_LINK_ENTITY",
            n.link_entity.map(|v| v.to_string()),
        );
        put("MNEMO_NOTE_MAX_LINKS", n.max_links.map(|v| v.to_string()));
        put(
            "MNEMO_NOTE_SPEAKER_LINK_DF",
            n.speaker_link_df.map(|v| v.to_string()),
        );
        put(
            "MNEMO_NOTE_SPEAKER_LINK_POOL",
            n.speaker_link_pool.map(|v| v.to_string()),
        );
        let t = &self.tiers;
        let num = |v: Option<f64>| v.map(|v| v.to_string());
        put(
            "MNEMO_SHORT_TERM_CAPACITY",
            t.short_term_capacity.map(|v| v.to_string()),
        );
        put(
            "MNEMO_MID_TERM_CAPACITY",
            t.mid_term_capacity.map(|v| v.to_string()),
        );
        put(
            "MNEMO_JOIN_THRESHOLD",
            t.join_threshold.map(|v| v.to_string()),
        );
        put(
            "MNEMO_CONTINUITY_THRESHOLD",
            t.continuity_threshold.map(|v| v.to_string()),
        );
        put("MNEMO_HEAT_VISITS", num(t.heat_visits));
        put("MNEMO_HEAT_LENGTH", num(t.heat_length));
        put("MNEMO_HEAT_RECENCY", num(t.heat_recency));
        put("MNEMO_HEAT_TAU_HOURS", num(t.heat_tau_hours));
        put(
            "MNEMO_PROFILE_HEAT_THRESHOLD",
            num(t.profile_heat_threshold),
        );
        put(
            "MNEMO_USAGE_TRACKING",
            self.usage_tracking.map(|v| v.to_string()),
        );
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_example_file_parses_and_maps_every_key() {
        let text = include_str!("../../../mnemo.example.toml");
        let c = FileConfig::parse(text).unwrap();
        assert_eq!(c.server.bind.as_deref(), Some("127.0.0.1:8750"));
        assert_eq!(c.server.no_auth, Some(false));
        // The example sets every key but `llm.gguf`, `tiers.mid_term_capacity` (unbounded),
        // `jobs.max_queue_depth` (no limit) and `store.url` (the embedded file by default).
        let env = c.env_defaults();
        assert_eq!(env.len(), 46, "{env:?}");
        assert!(env.contains(&("MNEMO_LLM_VISION", "false".to_string())));
        assert!(env.contains(&("MNEMO_RATE_LIMIT_WORK_MS", "10".to_string())));
        assert!(env.contains(&("MNEMO_JOB_WORKERS", "2".to_string())));
        assert!(env.contains(&("MNEMO_JOB_LEASE_SECS", "300".to_string())));
        assert!(!env.iter().any(|(k, _)| *k == "MNEMO_MAX_QUEUE_DEPTH"));
        assert!(env.contains(&("MNEMO_NOTE_SPEAKER_LINK_DF", "3".to_string())));
        assert!(env.contains(&("MNEMO_NOTE_SPEAKER_LINK_POOL", "40".to_string())));
        assert!(env.contains(&("MNEMO_STORE_POOL_SIZE", "16".to_string())));
        assert!(env.contains(&("MNEMO_SHORT_TERM_CAPACITY", "10".to_string())));
        assert!(env.contains(&("MNEMO_USAGE_TRACKING", "true".to_string())));
        assert!(!env.iter().any(|(k, _)| *k == "MNEMO_LLM_GGUF"));
        assert!(env.contains(&("MNEMO_RATE_LIMIT_PER_MINUTE", "1200".to_string())));
    }

    #[test]
    fn the_store_section_becomes_the_store_variables() {
        let c = FileConfig::parse("[store]\nurl = \"postgres://m@127.0.0.1/mnemo\"\npool_size = 4")
            .unwrap();
        let env = c.env_defaults();
        assert!(env.contains(&(
            "MNEMO_STORE_URL",
            "postgres://m@127.0.0.1/mnemo".to_string()
        )));
        assert!(env.contains(&("MNEMO_STORE_POOL_SIZE", "4".to_string())));
        assert!(FileConfig::parse("[store]\nuri = \"x\"").is_err());
    }

    #[test]
    fn unknown_keys_and_wrong_types_are_refused() {
        assert!(FileConfig::parse("[server]\nbindd = \"x\"").is_err());
        assert!(FileConfig::parse("[server]\nmax_body_bytes = \"big\"").is_err());
        assert!(FileConfig::parse("").unwrap() == FileConfig::default());
    }

    #[test]
    fn nul_characters_are_refused_before_they_reach_the_environment() {
        for text in [
            "[server]\nbind = \"127.0.0.1:1\\u0000\"",
            "data_dir = \"/tmp/a\\u0000b\"",
            "[llm]\napi_key_env = \"K\\u0000\"",
        ] {
            let err = FileConfig::parse(text).unwrap_err();
            assert!(err.to_string().contains("NUL"), "{text}: {err}");
        }
    }

    #[test]
    fn no_auth_is_refused_off_loopback() {
        let mut c = ServerConfig::new("0.0.0.0:8750".parse().unwrap(), "k.db".into());
        c.no_auth = true;
        assert!(c.validate().is_err());
        c.bind = "127.0.0.1:8750".parse().unwrap();
        assert!(c.validate().is_ok());
        c.bind = "[::1]:8750".parse().unwrap();
        assert!(c.validate().is_ok());
        c.cors_origins = vec!["example.com".into()];
        assert!(c.validate().is_err());
    }

    #[test]
    fn read_timeouts_are_bounded() {
        let mut c = ServerConfig::new("127.0.0.1:8750".parse().unwrap(), "k.db".into());
        for (header, body, ok) in [
            (MAX_READ_TIMEOUT_SECS, MAX_READ_TIMEOUT_SECS, true),
            (0, 30, false),
            (10, 0, false),
            (u64::MAX, 30, false),
            (10, MAX_READ_TIMEOUT_SECS + 1, false),
        ] {
            c.header_read_timeout_secs = header;
            c.body_read_timeout_secs = body;
            assert_eq!(c.validate().is_ok(), ok, "{header} {body}");
        }
    }
}
