//! `mnemo update`: a memory's text, metadata or expiry, with the reason kept in its history.

use super::{id_of, scope_of};
use crate::args::UpdateArgs;
use crate::io::{human_memory, outln, parse_json_arg, parse_time_arg, print_json};
use mnemo::{Memory, UpdateRequest};
use mnemo_core::WritePlan;

pub(super) async fn run(memory: &Memory, args: UpdateArgs, json: bool) -> anyhow::Result<()> {
    let UpdateArgs {
        scope,
        text,
        metadata,
        expires_at,
        reason,
        id,
    } = args;
    let req = UpdateRequest {
        text,
        metadata: metadata
            .map(|m| parse_json_arg("metadata", &m))
            .transpose()?,
        expires_at: expires_at
            .map(|e| parse_time_arg("expires_at", &e).map(Some))
            .transpose()?,
    };
    let ctx = WritePlan {
        actor: Some("cli".into()),
        reason,
        ..WritePlan::default()
    };
    let m = memory
        .update(scope_of(&scope)?, id_of(&id)?, req, ctx)
        .await?;
    if json {
        print_json(&m)?;
    } else {
        outln!("updated {}", human_memory(&m));
    }
    Ok(())
}
