//! `mnemo sessions list|messages|show|delete` and `mnemo segments list|pages`: the
//! conversation log as the library shows it (the log's visibility rule applied).

use crate::args::ScopeArgs;
use crate::commands::scope_of;
use crate::io::{outln, print_json};
use clap::Subcommand;
use mnemo::{LogMessage, Memory, PageView};
use mnemo_core::*;

#[derive(Debug, Subcommand)]
pub enum SessionsAction {
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
pub enum SegmentsAction {
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

fn message_line(m: &LogMessage) -> String {
    let who = m.name.as_deref().unwrap_or(m.role.as_str());
    format!("{}  {who}: {}", m.created_at.to_rfc3339(), m.text)
}

fn print_pages(pages: &[PageView]) {
    for p in pages {
        outln!("page {} ({}, {} tokens)", p.id, p.tier.as_str(), p.tokens);
        for m in &p.messages {
            outln!("  {}", message_line(m));
        }
    }
}

fn next(cursor: &Option<String>) {
    if let Some(c) = cursor {
        outln!("(more: --cursor {c})");
    }
}

pub async fn sessions(memory: &Memory, action: SessionsAction, json: bool) -> anyhow::Result<()> {
    match action {
        SessionsAction::List {
            scope,
            limit,
            cursor,
        } => {
            let out = memory.sessions(scope_of(&scope)?, cursor, limit).await?;
            if json {
                return print_json(&out);
            }
            for s in &out.sessions {
                outln!(
                    "{}  {} → {}  {} messages, {} pages",
                    s.session_id,
                    s.first_at.to_rfc3339(),
                    s.last_at.to_rfc3339(),
                    s.messages,
                    s.pages
                );
            }
            next(&out.next_cursor);
        }
        SessionsAction::Messages {
            scope,
            limit,
            cursor,
            session_id,
        } => {
            let out = memory
                .session_messages(scope_of(&scope)?, session_id, cursor, limit)
                .await?;
            if json {
                return print_json(&out);
            }
            for m in &out.messages {
                outln!("{}", message_line(m));
            }
            next(&out.next_cursor);
        }
        SessionsAction::Show { scope, session_id } => {
            let out = memory.session(scope_of(&scope)?, session_id).await?;
            if json {
                return print_json(&out);
            }
            let s = &out.session;
            outln!(
                "{}  {} → {}  {} messages, {} pages; window:",
                s.session_id,
                s.first_at.to_rfc3339(),
                s.last_at.to_rfc3339(),
                s.messages,
                s.pages
            );
            print_pages(&out.window);
        }
        SessionsAction::Delete {
            scope,
            reason,
            session_id,
        } => {
            let ctx = WriteContext {
                actor: Some("cli".into()),
                reason,
                ..WriteContext::default()
            };
            let n = memory
                .delete_session(scope_of(&scope)?, session_id.clone(), ctx)
                .await?;
            if json {
                return print_json(&serde_json::json!({ "deleted": n }));
            }
            outln!("deleted {n} memories of session {session_id}");
        }
    }
    Ok(())
}

pub async fn segments(memory: &Memory, action: SegmentsAction, json: bool) -> anyhow::Result<()> {
    match action {
        SegmentsAction::List { scope } => {
            let segments = memory.segments_view(scope_of(&scope)?).await?;
            if json {
                return print_json(&serde_json::json!({ "segments": segments }));
            }
            for s in &segments {
                outln!(
                    "{}  {}  heat {:.2}  {} pages  {}",
                    s.id,
                    s.state,
                    s.heat,
                    s.pages,
                    s.summary.as_deref().unwrap_or("(no visible page)")
                );
            }
        }
        SegmentsAction::Pages { scope, id } => {
            let pages = memory
                .segment_pages(scope_of(&scope)?, SegmentId::parse(&id)?)
                .await?;
            if json {
                return print_json(&serde_json::json!({ "pages": pages }));
            }
            print_pages(&pages);
        }
    }
    Ok(())
}
