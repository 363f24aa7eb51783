//! `mnemo delete` (one memory) and `mnemo delete-all` (a scope's): soft unless `--hard`, kept
//! for audit; `mnemo erase` is what removes text.

use super::{id_of, scope_of};
use crate::args::{DeleteAllArgs, DeleteArgs};
use crate::io::{outln, print_json};
use mnemo::Memory;
use mnemo_core::{DeleteMode, WritePlan};

fn mode(hard: bool) -> DeleteMode {
    if hard {
        DeleteMode::Hard
    } else {
        DeleteMode::Soft
    }
}

pub(super) async fn run(memory: &Memory, args: DeleteArgs, json: bool) -> anyhow::Result<()> {
    let DeleteArgs {
        scope,
        hard,
        reason,
        id,
    } = args;
    let id = id_of(&id)?;
    let ctx = WritePlan {
        actor: Some("cli".into()),
        reason,
        ..WritePlan::default()
    };
    memory
        .delete(scope_of(&scope)?, id, mode(hard), ctx)
        .await?;
    if json {
        print_json(&serde_json::json!({"id": id, "event": "DELETE"}))?;
    } else {
        outln!("deleted {id}");
    }
    Ok(())
}

pub(super) async fn all(memory: &Memory, args: DeleteAllArgs, json: bool) -> anyhow::Result<()> {
    let n = memory
        .delete_all(
            scope_of(&args.scope)?,
            mode(args.hard),
            WritePlan::default(),
        )
        .await?;
    if json {
        print_json(&serde_json::json!({"deleted": n}))?;
    } else {
        outln!("deleted {n} memories");
    }
    Ok(())
}
