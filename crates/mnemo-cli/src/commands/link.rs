//! `mnemo link`: list a memory's links (only ID given), add one (ID TO), or remove one
//! (`--remove`).

use super::{id_of, scope_of};
use crate::args::LinkArgs;
use crate::io::{outln, print_json};
use mnemo::Memory;
use mnemo_core::{Author, Error, Link, LinkKind};

pub(super) async fn run(memory: &Memory, args: LinkArgs, json: bool) -> anyhow::Result<()> {
    let LinkArgs {
        scope,
        strength,
        kind,
        reason,
        remove,
        id,
        to,
    } = args;
    let scope = scope_of(&scope)?;
    let from = id_of(&id)?;
    let kind = kind
        .as_deref()
        .map(str::parse::<LinkKind>)
        .transpose()?
        .unwrap_or(LinkKind::Related);
    match (to, remove) {
        (None, false) => {
            let links = memory.links(scope, from).await?;
            if json {
                print_json(&serde_json::json!({"results": links}))?;
            } else {
                for l in &links {
                    outln!(
                        "{} -> {}  {} {:.2} by {}  {}",
                        l.from,
                        l.to,
                        l.kind,
                        l.strength,
                        l.author,
                        l.reason.as_deref().unwrap_or("")
                    );
                }
            }
        }
        (None, true) => {
            return Err(Error::invalid("to", "--remove needs the linked memory's id").into())
        }
        (Some(to), true) => {
            let removed = memory.remove_link(scope, from, id_of(&to)?, kind).await?;
            if !removed {
                return Err(Error::not_found("link", to).into());
            }
            if json {
                print_json(&serde_json::json!({"removed": true}))?;
            } else {
                outln!("link removed");
            }
        }
        (Some(to), false) => {
            if kind == LinkKind::Supersedes {
                return Err(Error::invalid(
                    "kind",
                    "supersedes links are written by updates, not by callers",
                )
                .into());
            }
            let link = Link {
                from,
                to: id_of(&to)?,
                kind,
                strength,
                author: Author::Caller,
                created_at: chrono::Utc::now(),
                reason,
            };
            memory.add_links(scope.clone(), vec![link]).await?;
            let links = memory.links(scope, from).await?;
            if json {
                print_json(&serde_json::json!({"results": links}))?;
            } else {
                outln!("linked {from} -> {to}");
            }
        }
    }
    Ok(())
}
