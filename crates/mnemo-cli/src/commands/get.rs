//! `mnemo get`: one memory, or with `--detail` its audit view (any state, with the source
//! messages, links and entities).

use super::{id_of, scope_of};
use crate::args::GetArgs;
use crate::io::{human_memory, outln, print_json};
use mnemo::{GetRequest, Memory};

pub(super) async fn run(memory: &Memory, args: GetArgs, json: bool) -> anyhow::Result<()> {
    let GetArgs {
        scope,
        include_expired,
        detail,
        id,
    } = args;
    if detail {
        let d = memory.inspect(scope_of(&scope)?, id_of(&id)?).await?;
        if json {
            print_json(&d)?;
        } else {
            outln!("{} [{}]", human_memory(&d.memory), d.memory.state);
            for m in &d.source_messages {
                outln!(
                    "  from {} {}: {}",
                    m.created_at.to_rfc3339(),
                    m.name.as_deref().unwrap_or(m.role.as_str()),
                    m.content
                );
            }
            for l in &d.links {
                outln!("  link {} {} -> {}", l.kind, l.from, l.to);
            }
            for e in &d.entities {
                outln!("  entity {} ({})", e.name, e.entity_type);
            }
        }
        return Ok(());
    }
    let m = memory
        .get(GetRequest {
            scope: scope_of(&scope)?,
            id: id_of(&id)?,
            include_expired,
        })
        .await?;
    if json {
        print_json(&m)?;
    } else {
        outln!("{}", human_memory(&m));
    }
    Ok(())
}
