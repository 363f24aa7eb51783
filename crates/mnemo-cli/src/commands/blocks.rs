//! `mnemo blocks create|get|list|append|replace|rewrite|attach|detach|delete|history|seed`:
//! core memory blocks through the library, as their owner. Without `--json` a block prints as
//! a header line (label, version, used/limit characters) and its value.

use crate::args::{BlockRef, BlocksAction, EditOpts};
use crate::commands::scope_of;
use crate::io::{outln, print_json};
use mnemo::Memory;
use mnemo_core::blocks::BlockActor;
use mnemo_core::*;

fn show(b: &MemoryBlock) {
    outln!(
        "{} v{} [{}/{} chars{}]{}",
        b.label,
        b.version,
        b.used(),
        b.limit,
        if b.read_only { ", read-only" } else { "" },
        if b.agents.is_empty() {
            String::new()
        } else {
            format!(
                " attached to {}",
                b.agents
                    .iter()
                    .map(|a| a.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        }
    );
    if !b.description.is_empty() {
        outln!("  ({})", b.description);
    }
    outln!("{}", b.value);
}

fn print(b: &MemoryBlock, json: bool) -> anyhow::Result<()> {
    if json {
        return print_json(b);
    }
    show(b);
    Ok(())
}

fn target(r: &BlockRef) -> anyhow::Result<(Scope, BlockLabel)> {
    Ok((scope_of(&r.scope)?, BlockLabel::new(&r.label)?))
}

async fn edit(
    memory: &Memory,
    r: &BlockRef,
    change: BlockChange,
    opts: Option<EditOpts>,
    json: bool,
) -> anyhow::Result<()> {
    let (scope, label) = target(r)?;
    let opts = opts.unwrap_or(EditOpts {
        expected_version: None,
        reason: None,
    });
    let b = memory
        .edit_block(BlockEdit {
            scope,
            label,
            change,
            expected_version: opts.expected_version,
            actor: BlockActor::owner(),
            reason: opts.reason,
        })
        .await?;
    print(&b, json)
}

pub(super) async fn run(memory: &Memory, action: BlocksAction, json: bool) -> anyhow::Result<()> {
    match action {
        BlocksAction::Create {
            block,
            value,
            description,
            limit,
            read_only,
            agents,
        } => {
            let (scope, label) = target(&block)?;
            let new = NewBlock {
                description: description.unwrap_or_default(),
                limit,
                read_only,
                agents: agents
                    .iter()
                    .map(|a| AgentId::new(a))
                    .collect::<Result<_>>()?,
                ..NewBlock::new(scope, label, value)
            };
            print(&memory.create_block(new).await?, json)
        }
        BlocksAction::Get { block } => {
            let (scope, label) = target(&block)?;
            print(&memory.block(scope, label).await?, json)
        }
        BlocksAction::List {
            scope,
            limit,
            cursor,
        } => {
            let page = memory
                .blocks(BlockQuery {
                    scope: scope_of(&scope)?,
                    limit,
                    cursor,
                })
                .await?;
            if json {
                return print_json(&page);
            }
            for b in &page.blocks {
                show(b);
                outln!();
            }
            if let Some(c) = page.next_cursor {
                outln!("next page: --cursor {c}");
            }
            Ok(())
        }
        BlocksAction::Append { block, opts, text } => {
            edit(
                memory,
                &block,
                BlockChange::Append { text },
                Some(opts),
                json,
            )
            .await
        }
        BlocksAction::Replace {
            block,
            opts,
            old,
            new,
        } => {
            edit(
                memory,
                &block,
                BlockChange::Replace { old, new },
                Some(opts),
                json,
            )
            .await
        }
        BlocksAction::Rewrite { block, opts, value } => {
            edit(
                memory,
                &block,
                BlockChange::Rewrite { value },
                Some(opts),
                json,
            )
            .await
        }
        BlocksAction::Attach { block, agent } => {
            let change = BlockChange::Attach {
                agent_id: AgentId::new(&agent)?,
            };
            edit(memory, &block, change, None, json).await
        }
        BlocksAction::Detach { block, agent } => {
            let change = BlockChange::Detach {
                agent_id: AgentId::new(&agent)?,
            };
            edit(memory, &block, change, None, json).await
        }
        BlocksAction::Delete { block, reason } => {
            let (scope, label) = target(&block)?;
            let b = memory
                .delete_block(scope, label, BlockActor::owner(), reason)
                .await?;
            if json {
                return print_json(&b);
            }
            outln!("deleted block {} (was version {})", b.label, b.version);
            Ok(())
        }
        BlocksAction::History { block, limit } => {
            let (scope, label) = target(&block)?;
            let events = memory.block_history(scope, label, limit).await?;
            if json {
                return print_json(&serde_json::json!({ "results": events }));
            }
            for e in &events {
                outln!(
                    "v{} {} {} by {}{}",
                    e.version,
                    e.op.as_str(),
                    e.at.to_rfc3339(),
                    e.actor.as_deref().unwrap_or("owner"),
                    e.reason
                        .as_deref()
                        .map(|r| format!(" ({r})"))
                        .unwrap_or_default()
                );
                if let Some(after) = &e.after {
                    outln!("  -> {}", after.replace('\n', "\n     "));
                }
            }
            Ok(())
        }
        BlocksAction::Seed { scope, .. } => {
            let (b, source) = memory
                .seed_human_block(scope_of(&scope)?, BlockActor::owner())
                .await?;
            if json {
                return print_json(&serde_json::json!({ "block": b, "source": source }));
            }
            eprintln!("seeded from the {source:?}");
            show(&b);
            Ok(())
        }
    }
}
