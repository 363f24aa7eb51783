//! Core memory blocks for the Python package: one entry point (`Engine.block_call`) takes the
//! operation's name and its keyword arguments, so the Python methods (`blocks`, `block`,
//! `create_block`, `append_block`, …) stay thin. The package edits as the owner: it holds the
//! whole store, as an owner's key does.

use crate::convert::{to_value, Parts};
use crate::errors::Failure;
use mnemo::Memory;
use mnemo_core::blocks::BlockActor;
use mnemo_core::*;
use serde_json::{json, Value};

/// The arguments of one block call, as read from Python keywords.
#[derive(Debug, Default)]
pub(crate) struct BlockArgs {
    pub label: Option<String>,
    pub value: Option<String>,
    pub text: Option<String>,
    pub old: Option<String>,
    pub new: Option<String>,
    pub description: Option<String>,
    pub limit: Option<usize>,
    pub read_only: Option<bool>,
    pub agents: Option<Vec<String>>,
    pub expected_version: Option<usize>,
    pub reason: Option<String>,
    pub cursor: Option<String>,
}

fn label(a: &BlockArgs) -> Result<BlockLabel, Failure> {
    let raw = a
        .label
        .as_deref()
        .ok_or_else(|| Error::invalid("label", "must be given"))?;
    Ok(BlockLabel::new(raw)?)
}

fn required(field: &'static str, v: Option<String>) -> Result<String, Failure> {
    Ok(v.ok_or_else(|| Error::invalid(field, "must be given"))?)
}

pub(crate) async fn call(
    mem: Memory,
    op: String,
    parts: Parts,
    a: BlockArgs,
) -> Result<Value, Failure> {
    let scope = parts.scope()?;
    let edit = |change: BlockChange, a: &BlockArgs| -> Result<BlockEdit, Failure> {
        Ok(BlockEdit {
            scope: scope.clone(),
            label: label(a)?,
            change,
            expected_version: a.expected_version.map(|v| v as u64),
            actor: BlockActor::owner(),
            reason: a.reason.clone(),
        })
    };
    match op.as_str() {
        "list" => {
            let limit = a.limit.unwrap_or(100);
            let page = mem
                .blocks(BlockQuery {
                    scope,
                    limit,
                    cursor: a.cursor,
                })
                .await?;
            Ok(json!({ "results": page.blocks, "next_cursor": page.next_cursor }))
        }
        "get" => to_value(&mem.block(scope, label(&a)?).await?),
        "create" => {
            let agents = a
                .agents
                .clone()
                .unwrap_or_default()
                .iter()
                .map(|x| AgentId::new(x))
                .collect::<Result<Vec<_>>>()?;
            let new = NewBlock {
                description: a.description.clone().unwrap_or_default(),
                limit: a.limit.map(|l| u32::try_from(l).unwrap_or(u32::MAX)),
                read_only: a.read_only.unwrap_or(false),
                agents,
                reason: a.reason.clone(),
                ..NewBlock::new(
                    scope.clone(),
                    label(&a)?,
                    a.value.clone().unwrap_or_default(),
                )
            };
            to_value(&mem.create_block(new).await?)
        }
        "append" => {
            let change = BlockChange::Append {
                text: required("text", a.text.clone())?,
            };
            to_value(&mem.edit_block(edit(change, &a)?).await?)
        }
        "replace" => {
            let change = BlockChange::Replace {
                old: required("old", a.old.clone())?,
                new: a.new.clone().unwrap_or_default(),
            };
            to_value(&mem.edit_block(edit(change, &a)?).await?)
        }
        "rewrite" => {
            let change = BlockChange::Rewrite {
                value: required("value", a.value.clone())?,
            };
            to_value(&mem.edit_block(edit(change, &a)?).await?)
        }
        "delete" => to_value(
            &mem.delete_block(scope, label(&a)?, BlockActor::owner(), a.reason)
                .await?,
        ),
        "history" => {
            let events = mem
                .block_history(scope, label(&a)?, a.limit.unwrap_or(100))
                .await?;
            Ok(json!({ "results": events }))
        }
        "seed" => {
            let (block, source) = mem.seed_human_block(scope, BlockActor::owner()).await?;
            Ok(json!({ "block": block, "source": source }))
        }
        other => Err(Error::invalid("op", format!("unknown block operation {other:?}")).into()),
    }
}
