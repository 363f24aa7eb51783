//! `mnemo search`: hybrid (or dense, or lexical) search within a scope.

use super::{kinds_of, scope_of};
use crate::args::SearchArgs;
use crate::io::{human_memory, outln, parse_json_arg, parse_time_arg, print_json};
use mnemo::Memory;
use mnemo_core::{Filter, ReadOptions, SearchRequest, Via};

pub(super) async fn run(memory: &Memory, args: SearchArgs, json: bool) -> anyhow::Result<()> {
    let SearchArgs {
        scope,
        top_k,
        threshold,
        kinds,
        filters,
        include_expired,
        include_inactive,
        as_of,
        mode,
        expand_links,
        reference_date,
        graph,
        query,
    } = args;
    let filter = match filters {
        Some(f) => Filter::from_json(&parse_json_arg("filters", &f)?)?,
        None => None,
    };
    let req = SearchRequest {
        scope: scope_of(&scope)?,
        query,
        top_k,
        threshold,
        kinds: kinds_of(&kinds)?,
        filter,
        read: ReadOptions {
            include_expired,
            include_inactive,
            as_of: as_of.map(|t| parse_time_arg("as_of", &t)).transpose()?,
            ..ReadOptions::default()
        },
        mode,
        expand_links,
        expand_limit: None,
        reference_date: reference_date
            .map(|t| parse_time_arg("reference_date", &t))
            .transpose()?,
        temporal: None,
        // The flag turns graph search on for this query; without it the engine's setting holds.
        graph: graph.then_some(true),
    };
    let resp = memory.search(req).await?;
    if json {
        print_json(&resp)?;
    } else {
        if let Some(t) = &resp.temporal {
            outln!(
                "time: {:?} = {} to {}",
                t.phrase,
                t.start.to_rfc3339(),
                t.end.to_rfc3339()
            );
        }
        for h in &resp.results {
            match h.via.as_ref().and_then(Via::link) {
                Some(v) => outln!(
                    "{:.3}  {}  (via {} {} {:.2})",
                    h.score,
                    human_memory(&h.memory),
                    v.memory_id,
                    v.kind,
                    v.strength
                ),
                None => outln!("{:.3}  {}", h.score, human_memory(&h.memory)),
            }
        }
        for r in &resp.relations {
            outln!(
                "relation: {} — {} → {}  ({})",
                r.subject.name,
                r.predicate,
                r.object.name,
                r.fact
            );
        }
    }
    Ok(())
}
