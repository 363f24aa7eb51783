//! `mnemo history`: a memory's events, oldest first.

use super::{id_of, scope_of};
use crate::args::HistoryArgs;
use crate::io::{outln, print_json};
use mnemo::Memory;

pub(super) async fn run(memory: &Memory, args: HistoryArgs, json: bool) -> anyhow::Result<()> {
    let events = memory
        .history(scope_of(&args.scope)?, id_of(&args.id)?)
        .await?;
    if json {
        print_json(&serde_json::json!({"results": events}))?;
    } else {
        for e in &events {
            outln!(
                "{} {} {:?} -> {:?}",
                e.created_at.to_rfc3339(),
                e.event,
                e.old_memory,
                e.new_memory
            );
        }
    }
    Ok(())
}
