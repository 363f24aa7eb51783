//! `mnemo add`: a text or a conversation, raw, inferred or as notes.

use super::scope_of;
use crate::args::AddArgs;
use crate::io::{outln, parse_json_arg, parse_time_arg, print_json};
use mnemo::{AddInput, AddRequest, Memory};
use mnemo_core::{Error, MemoryKind};

pub(super) async fn run(memory: &Memory, args: AddArgs, json: bool) -> anyhow::Result<()> {
    let AddArgs {
        scope,
        infer,
        metadata,
        expires_at,
        timestamp,
        idempotency_key,
        messages,
        text,
        memory_type,
        keywords,
        tags,
        context,
        instructions,
        session_id,
    } = args;
    let list = |raw: Option<String>| {
        raw.map(|r| {
            if r.trim().is_empty() {
                Vec::new()
            } else {
                r.split(',').map(str::to_string).collect()
            }
        })
    };
    let note = mnemo::NoteInput {
        keywords: list(keywords),
        tags: list(tags),
        context,
    };
    let input = match (messages, text) {
        (Some(m), None) => AddInput::Messages(
            serde_json::from_value(parse_json_arg("messages", &m)?).map_err(|e| {
                Error::invalid(
                    "messages",
                    format!("expected a list of {{role, content, name?}}: {e}"),
                )
            })?,
        ),
        (None, Some(t)) => AddInput::Text(t),
        _ => return Err(Error::invalid("add", "give exactly one of TEXT or --messages").into()),
    };
    let req = AddRequest {
        scope: scope_of(&scope)?,
        input,
        metadata: metadata
            .map(|m| parse_json_arg("metadata", &m))
            .transpose()?,
        expires_at: expires_at
            .map(|e| parse_time_arg("expires_at", &e))
            .transpose()?,
        timestamp: timestamp
            .map(|e| parse_time_arg("timestamp", &e))
            .transpose()?,
        idempotency_key,
        infer,
        memory_type: memory_type.map(|k| k.parse::<MemoryKind>()).transpose()?,
        instructions,
        session_id,
        request_id: None,
        actor: None,
        note,
    };
    let out = memory.add(req).await?;
    for w in &out.warnings {
        eprintln!("warning: {w}");
    }
    if json {
        print_json(&out)?;
    } else {
        for r in &out.results {
            outln!("{} {}  {}", r.event, r.id, r.memory);
        }
    }
    Ok(())
}
