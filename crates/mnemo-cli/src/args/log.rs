//! The conversation log (sessions, segments), the job queue and the profile.

use super::ScopeArgs;
use clap::Subcommand;

#[derive(Debug, Subcommand)]
pub(crate) enum SessionsAction {
    /// A scope's sessions, ordered by id: first and last message time, messages, pages.
    List {
        #[command(flatten)]
        scope: ScopeArgs,
        #[arg(long, default_value_t = 100)]
        limit: usize,
        #[arg(long)]
        cursor: Option<String>,
    },
    /// A session's messages in order (deleted, expired and erased turns left out).
    Messages {
        #[command(flatten)]
        scope: ScopeArgs,
        #[arg(long, default_value_t = 100)]
        limit: usize,
        #[arg(long)]
        cursor: Option<String>,
        session_id: String,
    },
    /// A session's summary and its short-term window.
    Show {
        #[command(flatten)]
        scope: ScopeArgs,
        session_id: String,
    },
    /// Delete every memory of a session (kept for audit; `mnemo erase --session-id` removes
    /// the text).
    Delete {
        #[command(flatten)]
        scope: ScopeArgs,
        /// Why (kept in the memories' history).
        #[arg(long)]
        reason: Option<String>,
        session_id: String,
    },
}

#[derive(Debug, Subcommand)]
pub(crate) enum SegmentsAction {
    /// A scope's topic segments: summary, keywords, heat, state, pages.
    List {
        #[command(flatten)]
        scope: ScopeArgs,
    },
    /// A segment's pages with their messages.
    Pages {
        #[command(flatten)]
        scope: ScopeArgs,
        id: String,
    },
}

#[derive(Debug, Subcommand)]
pub(crate) enum JobsAction {
    /// Jobs, newest first: of a scope when one is given, else of every scope.
    List {
        #[command(flatten)]
        scope: ScopeArgs,
        /// pending, running, done or failed.
        #[arg(long)]
        status: Option<String>,
        #[arg(long, default_value_t = 50)]
        limit: usize,
        /// The last job id of the previous page.
        #[arg(long)]
        cursor: Option<String>,
    },
    /// One job: status, attempts, last error and, once done, what the add wrote.
    Show { id: String },
    /// Put a failed job back in the queue (its attempts start again).
    Retry { id: String },
}

#[derive(Debug, Subcommand)]
pub(crate) enum ProfileAction {
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
