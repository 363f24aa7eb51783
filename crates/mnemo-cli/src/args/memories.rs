//! The commands on memories: add, search, get, list, update, delete, erase, delete-all,
//! history, link and context.

use super::ScopeArgs;
use clap::Args;

/// `mnemo add`.
#[derive(Debug, Args, Clone)]
pub(crate) struct AddArgs {
    #[command(flatten)]
    pub scope: ScopeArgs,
    /// Extract facts with a chat model (default when one is configured) or store raw.
    #[arg(long)]
    pub infer: Option<bool>,
    /// `note`: store each message as a note (keywords, tags, context, links; rules without
    /// a chat model). `procedural`: summarise an agent's steps (needs --agent-id and a chat
    /// model).
    #[arg(long)]
    pub memory_type: Option<String>,
    /// A note's keywords, comma-separated, kept as given ("" for none).
    #[arg(long)]
    pub keywords: Option<String>,
    /// A note's tags, comma-separated, kept as given ("" for none).
    #[arg(long)]
    pub tags: Option<String>,
    /// A note's context line, kept as given.
    #[arg(long)]
    pub context: Option<String>,
    /// Extra extraction instructions for this add.
    #[arg(long)]
    pub instructions: Option<String>,
    /// The conversation session the messages belong to.
    #[arg(long)]
    pub session_id: Option<String>,
    /// Metadata as a JSON object.
    #[arg(long)]
    pub metadata: Option<String>,
    /// When the memory expires (RFC 3339).
    #[arg(long)]
    pub expires_at: Option<String>,
    /// Back-date the memory (RFC 3339).
    #[arg(long)]
    pub timestamp: Option<String>,
    #[arg(long)]
    pub idempotency_key: Option<String>,
    /// A JSON list of {role, content, name?} instead of TEXT.
    #[arg(long)]
    pub messages: Option<String>,
    pub text: Option<String>,
}

/// `mnemo search`.
#[derive(Debug, Args, Clone)]
pub(crate) struct SearchArgs {
    #[command(flatten)]
    pub scope: ScopeArgs,
    #[arg(long, default_value_t = 10)]
    pub top_k: usize,
    #[arg(long)]
    pub threshold: Option<f32>,
    /// Comma-separated kinds (raw, fact, procedural, …).
    #[arg(long)]
    pub kinds: Option<String>,
    /// Filter expression as JSON.
    #[arg(long)]
    pub filters: Option<String>,
    #[arg(long)]
    pub include_expired: bool,
    /// Also search superseded memories (what used to be true).
    #[arg(long)]
    pub include_inactive: bool,
    /// Search what was valid at this time (RFC 3339), superseded facts included.
    #[arg(long)]
    pub as_of: Option<String>,
    /// hybrid (default), dense or lexical.
    #[arg(long, default_value = "hybrid", value_parser = parse_mode)]
    pub mode: mnemo::core::SearchMode,
    /// Also return up to N linked notes per hit, after the hits (marked with `via`).
    #[arg(long, default_value_t = 0)]
    pub expand_links: usize,
    /// What the query's relative time ("last week") is resolved against (RFC 3339; default
    /// now).
    #[arg(long)]
    pub reference_date: Option<String>,
    /// Graph search for this query: also walk the relations of the entities it names (one or
    /// two hops) and rank the memories that state them; the edges used are printed after the
    /// hits (`relations` with --json). Without it, the configured default (off).
    #[arg(long)]
    pub graph: bool,
    pub query: String,
}

/// `mnemo get`.
#[derive(Debug, Args, Clone)]
pub(crate) struct GetArgs {
    #[command(flatten)]
    pub scope: ScopeArgs,
    #[arg(long)]
    pub include_expired: bool,
    /// The audit view: any state, with the source messages, links and entities.
    #[arg(long)]
    pub detail: bool,
    pub id: String,
}

/// `mnemo list`.
#[derive(Debug, Args, Clone)]
pub(crate) struct ListArgs {
    #[command(flatten)]
    pub scope: ScopeArgs,
    #[arg(long, default_value_t = 100)]
    pub limit: usize,
    #[arg(long)]
    pub cursor: Option<String>,
    #[arg(long)]
    pub kinds: Option<String>,
    #[arg(long)]
    pub filters: Option<String>,
    #[arg(long)]
    pub include_expired: bool,
    /// List what was valid at this time (RFC 3339), superseded facts included.
    #[arg(long)]
    pub as_of: Option<String>,
}

/// `mnemo graph`.
#[derive(Debug, Args, Clone)]
pub(crate) struct GraphArgs {
    #[command(flatten)]
    pub scope: ScopeArgs,
    /// The entity's name (near matches count: "Carolin" finds "Caroline").
    #[arg(long)]
    pub entity: String,
    /// Hops to walk, 1 to 3.
    #[arg(long, default_value_t = 1)]
    pub depth: u8,
    /// The graph as it was at this time (RFC 3339).
    #[arg(long)]
    pub as_of: Option<String>,
    /// The most edges shown.
    #[arg(long, default_value_t = 50)]
    pub limit: usize,
}

/// `mnemo update`.
#[derive(Debug, Args, Clone)]
pub(crate) struct UpdateArgs {
    #[command(flatten)]
    pub scope: ScopeArgs,
    #[arg(long)]
    pub text: Option<String>,
    #[arg(long)]
    pub metadata: Option<String>,
    #[arg(long)]
    pub expires_at: Option<String>,
    /// Why (kept in the memory's history).
    #[arg(long)]
    pub reason: Option<String>,
    pub id: String,
}

/// `mnemo delete`.
#[derive(Debug, Args, Clone)]
pub(crate) struct DeleteArgs {
    #[command(flatten)]
    pub scope: ScopeArgs,
    #[arg(long)]
    pub hard: bool,
    /// Why (kept in the memory's history).
    #[arg(long)]
    pub reason: Option<String>,
    pub id: String,
}

/// `mnemo erase`.
#[derive(Debug, Args, Clone)]
pub(crate) struct EraseArgs {
    #[command(flatten)]
    pub scope: ScopeArgs,
    /// Also erase the content of the messages a fact came from (a raw memory's message is
    /// always erased).
    #[arg(long)]
    pub sources: bool,
    /// Why (kept in the ERASE event).
    #[arg(long)]
    pub reason: Option<String>,
    /// Erase this session of the scope: its messages, pages and every memory from them.
    #[arg(long, conflicts_with_all = ["id", "all"])]
    pub session_id: Option<String>,
    /// Erase everything the scope covers ("forget this user"); needs --confirm.
    #[arg(long, conflicts_with = "id")]
    pub all: bool,
    /// Confirms --all.
    #[arg(long)]
    pub confirm: bool,
    pub id: Option<String>,
}

/// `mnemo delete-all`.
#[derive(Debug, Args, Clone)]
pub(crate) struct DeleteAllArgs {
    #[command(flatten)]
    pub scope: ScopeArgs,
    #[arg(long)]
    pub hard: bool,
}

/// `mnemo history`.
#[derive(Debug, Args, Clone)]
pub(crate) struct HistoryArgs {
    #[command(flatten)]
    pub scope: ScopeArgs,
    pub id: String,
}

/// `mnemo link`.
#[derive(Debug, Args, Clone)]
pub(crate) struct LinkArgs {
    #[command(flatten)]
    pub scope: ScopeArgs,
    /// In [0, 1].
    #[arg(long, default_value_t = 1.0)]
    pub strength: f32,
    /// related (default), continues or derived_from.
    #[arg(long)]
    pub kind: Option<String>,
    #[arg(long)]
    pub reason: Option<String>,
    /// Remove the link ID → TO instead of adding it.
    #[arg(long)]
    pub remove: bool,
    pub id: String,
    pub to: Option<String>,
}

/// `mnemo context`.
#[derive(Debug, Args, Clone)]
pub(crate) struct ContextArgs {
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
    /// Leave the core memory blocks out (a pack starts with them otherwise).
    #[arg(long)]
    pub no_blocks: bool,
    /// The tokenizer to count with: cl100k_base (default), o200k_base, p50k_base, r50k_base.
    #[arg(long)]
    pub tokenizer: Option<String>,
    pub query: String,
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

/// `mnemo timeline`.
#[derive(Debug, Args, Clone)]
pub(crate) struct TimelineArgs {
    #[command(flatten)]
    pub scope: ScopeArgs,
    /// Only events that end after this time (RFC 3339).
    #[arg(long)]
    pub from: Option<String>,
    /// Only events that start before this time (RFC 3339).
    #[arg(long)]
    pub to: Option<String>,
    /// Comma-separated kinds (raw, fact, note, …).
    #[arg(long)]
    pub kinds: Option<String>,
    #[arg(long, default_value_t = 100)]
    pub limit: usize,
    /// The cursor a previous page printed.
    #[arg(long)]
    pub cursor: Option<String>,
}
