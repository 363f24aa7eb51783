//! `mnemo sessions list|messages|show|delete` and `mnemo segments list|pages`: the
//! conversation log as the library shows it (the log's visibility rule applied).

use crate::args::{SegmentsAction, SessionsAction};
use crate::commands::scope_of;
use crate::io::{outln, print_json};
use mnemo::{LogMessage, Memory, PageView};
use mnemo_core::*;

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

pub(super) async fn sessions(
    memory: &Memory,
    action: SessionsAction,
    json: bool,
) -> anyhow::Result<()> {
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
            let ctx = WritePlan {
                actor: Some("cli".into()),
                reason,
                ..WritePlan::default()
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

pub(super) async fn segments(
    memory: &Memory,
    action: SegmentsAction,
    json: bool,
) -> anyhow::Result<()> {
    match action {
        SegmentsAction::List { scope } => {
            let segments = memory.segments_view(scope_of(&scope)?).await?;
            if json {
                return print_json(&serde_json::json!({ "segments": segments }));
            }
            for s in &segments {
                let happened = s
                    .event_time
                    .as_ref()
                    .map(|e| format!("  {}", mnemo::core::pack::dates::when(e)))
                    .unwrap_or_default();
                outln!(
                    "{}  {}  heat {:.2}  {} pages{happened}  {}",
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
