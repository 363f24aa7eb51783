//! `mnemo graph`: an entity's relations — its neighbourhood to `--depth` hops (1 to 3), now or
//! `--as-of` an instant — as lines `subject —predicate→ object  [valid from … until …]  "fact"`,
//! or the neighbourhood as JSON with `--json`.

use super::scope_of;
use crate::args::GraphArgs;
use crate::io::{outln, parse_time_arg, print_json};
use mnemo::Memory;

pub(super) async fn run(memory: &Memory, args: GraphArgs, json: bool) -> anyhow::Result<()> {
    let as_of = args
        .as_of
        .as_deref()
        .map(|t| parse_time_arg("as_of", t))
        .transpose()?;
    let n = memory
        .neighbourhood(
            scope_of(&args.scope)?,
            args.entity,
            args.depth,
            as_of,
            args.limit,
        )
        .await?;
    if json {
        print_json(&serde_json::to_value(&n)?)?;
        return Ok(());
    }
    for e in &n.relations {
        let until = e
            .valid_until
            .map_or_else(|| "now".to_string(), |t| t.to_rfc3339());
        outln!(
            "{} —{}→ {}  [{} … {}]  {:?}",
            e.subject.name,
            e.predicate,
            e.object.name,
            e.valid_from.to_rfc3339(),
            until,
            e.fact
        );
    }
    if n.truncated {
        outln!("(more edges beyond --limit {})", args.limit);
    }
    Ok(())
}
