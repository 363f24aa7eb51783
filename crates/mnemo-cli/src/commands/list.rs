//! `mnemo list`: a scope's memories, oldest first, a page at a time.

use super::{kinds_of, scope_of};
use crate::args::ListArgs;
use crate::io::{human_memory, outln, parse_json_arg, parse_time_arg, print_json};
use mnemo::{ListRequest, Memory};

pub(super) async fn run(memory: &Memory, args: ListArgs, json: bool) -> anyhow::Result<()> {
    let ListArgs {
        scope,
        limit,
        cursor,
        kinds,
        filters,
        include_expired,
        as_of,
    } = args;
    let page = memory
        .list(ListRequest {
            scope: scope_of(&scope)?,
            kinds: kinds_of(&kinds)?,
            filters: filters.map(|f| parse_json_arg("filters", &f)).transpose()?,
            limit,
            cursor,
            include_expired,
            as_of: as_of.map(|t| parse_time_arg("as_of", &t)).transpose()?,
        })
        .await?;
    if json {
        print_json(&page)?;
    } else {
        for m in &page.results {
            outln!("{}", human_memory(m));
        }
        if let Some(c) = &page.next_cursor {
            outln!("next cursor: {c}");
        }
    }
    Ok(())
}
