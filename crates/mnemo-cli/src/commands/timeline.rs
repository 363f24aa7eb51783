//! `mnemo timeline`: a scope's memories in event-time order, each with its event time and the
//! turn it was said in.

use super::{kinds_of, scope_of};
use crate::args::TimelineArgs;
use crate::io::{outln, parse_time_arg, print_json};
use mnemo::{Memory, TimelineRequest};

pub(super) async fn run(memory: &Memory, args: TimelineArgs, json: bool) -> anyhow::Result<()> {
    let TimelineArgs {
        scope,
        from,
        to,
        kinds,
        limit,
        cursor,
    } = args;
    let page = memory
        .timeline(TimelineRequest {
            scope: scope_of(&scope)?,
            from: from.map(|t| parse_time_arg("from", &t)).transpose()?,
            to: to.map(|t| parse_time_arg("to", &t)).transpose()?,
            kinds: kinds_of(&kinds)?,
            limit,
            cursor,
        })
        .await?;
    if json {
        print_json(&page)?;
        return Ok(());
    }
    for e in &page.results {
        let Some(t) = &e.memory.event_time else {
            continue;
        };
        outln!(
            "{}  {}  {}",
            mnemo_core::pack::dates::when(t),
            e.memory.id,
            e.memory.text
        );
        if let Some(said) = &e.source_text {
            outln!(
                "    said {}: {said}",
                e.memory.created_at.format("%-d %B %Y")
            );
        }
    }
    if let Some(c) = &page.next_cursor {
        outln!("next cursor: {c}");
    }
    Ok(())
}
