//! `mnemo erase`: a memory, a session (`--session-id`) or a whole scope (`--all --confirm`),
//! for good.

use super::{id_of, scope_of};
use crate::args::EraseArgs;
use crate::io::{outln, print_json};
use mnemo::Memory;
use mnemo_core::{Error, WritePlan};

pub(super) async fn run(memory: &Memory, args: EraseArgs, json: bool) -> anyhow::Result<()> {
    let EraseArgs {
        scope,
        sources,
        reason,
        session_id,
        all,
        confirm,
        id,
    } = args;
    let ctx = WritePlan {
        actor: Some("cli".into()),
        reason,
        ..WritePlan::default()
    };
    let log = match (id, session_id, all) {
        (Some(id), None, false) => {
            let report = memory
                .erase(scope_of(&scope)?, id_of(&id)?, sources, ctx)
                .await?;
            if json {
                print_json(&report)?;
            } else if report.messages_kept > 0 {
                outln!(
                    "erased {} ({} source message(s) kept; --sources erases them)",
                    report.id,
                    report.messages_kept
                );
            } else {
                outln!("erased {}", report.id);
            }
            return Ok(());
        }
        (None, Some(session), false) => {
            memory
                .erase_session(scope_of(&scope)?, session, ctx)
                .await?
        }
        (None, None, true) => memory.erase_scope(scope_of(&scope)?, confirm, ctx).await?,
        _ => {
            return Err(Error::invalid(
                "id",
                "give a memory id, --session-id or --all (one of them)",
            )
            .into())
        }
    };
    if json {
        print_json(&log)?;
    } else {
        outln!(
            "erased {} memories, {} messages, {} pages, {} segment summaries",
            log.memories_erased,
            log.messages_erased,
            log.pages_scrubbed,
            log.segments_scrubbed
        );
    }
    Ok(())
}
