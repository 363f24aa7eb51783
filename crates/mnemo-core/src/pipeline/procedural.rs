//! Procedural memory: an agent's step history becomes one `procedural` memory.
//!
//! The model names the task, the progress and each step's action; the outputs are copied from
//! the messages by code, so they are verbatim whatever the model writes. Every assistant or tool
//! message the model did not cite is appended as a step of its own, so no output is lost.

use super::prompts::PROCEDURAL_SYSTEM;
use super::{json_request, model_json, render_message, shape_error, CallLog, InferConfig, Plan};
use crate::chat::ChatModel;
use crate::embed::Embedder;
use crate::entity::extract_entities;
use crate::error::{Error, Result};
use crate::memory::*;
use crate::pipeline::InferInput;
use serde_json::Value;
use std::collections::HashSet;

/// Summarises the add's messages into one procedural memory of the agent in scope.
pub fn procedural(
    embedder: &dyn Embedder,
    chat: &dyn ChatModel,
    cfg: &InferConfig,
    input: &InferInput<'_>,
    log: &mut CallLog,
) -> Result<Plan> {
    if input.scope.agent_id().is_none() {
        return Err(Error::invalid(
            "agent_id",
            "procedural memory belongs to an agent: give an agent_id",
        ));
    }
    let msgs = input.messages;
    let mut user = String::from("Agent history:\n");
    for (i, m) in msgs.iter().enumerate() {
        user.push_str(&render_message(Some(i + 1), m));
        user.push('\n');
    }
    let req = json_request(PROCEDURAL_SYSTEM, user, cfg, input.instructions);
    let answer = log.chat(chat, "procedural", &req)?;
    let value = model_json(chat, "procedural", &answer.content)?;
    let Value::Object(o) = value else {
        return Err(shape_error(chat, "procedural", "expected a JSON object"));
    };
    let field = |k: &str| {
        o.get(k)
            .and_then(Value::as_str)
            .map(str::trim)
            .unwrap_or("")
    };
    let (task, progress) = (field("task").to_string(), field("progress").to_string());
    let mut steps: Vec<(String, usize)> = Vec::new();
    for s in o
        .get("steps")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let action = s.get("action").and_then(Value::as_str).unwrap_or("").trim();
        let source = s
            .get("source")
            .and_then(|v| v.as_u64().or_else(|| v.as_str()?.trim().parse().ok()))
            .map(|n| n as usize);
        match source {
            Some(n) if n >= 1 && n <= msgs.len() => steps.push((action.to_string(), n - 1)),
            _ => tracing::warn!(
                ?source,
                "procedural step cites no message of this add; ignored"
            ),
        }
    }
    let cited: HashSet<usize> = steps.iter().map(|s| s.1).collect();
    for (i, m) in msgs.iter().enumerate() {
        if matches!(m.role, Role::Assistant | Role::Tool) && !cited.contains(&i) {
            steps.push((String::new(), i));
        }
    }
    steps.sort_by_key(|s| s.1);
    let mut text = String::new();
    if !task.is_empty() {
        text.push_str(&format!("Task: {task}\n"));
    }
    if !progress.is_empty() {
        text.push_str(&format!("Progress: {progress}\n"));
    }
    for (n, (action, i)) in steps.iter().enumerate() {
        let m = &msgs[*i];
        let action = if action.is_empty() {
            "(not described)"
        } else {
            action
        };
        text.push_str(&format!(
            "\nStep {}: {action}\nOutput ({}):\n{}\n",
            n + 1,
            m.role,
            m.content
        ));
    }
    let text = text.trim().to_string();
    if text.is_empty() {
        return Err(shape_error(chat, "procedural", "the summary is empty"));
    }
    let vector = log.embed(embedder, &[&text])?.remove(0);
    let at = msgs
        .iter()
        .map(|m| m.created_at)
        .max()
        .unwrap_or_else(chrono::Utc::now);
    let memory = NewMemory {
        id: MemoryId::new(),
        scope: input.scope.clone(),
        kind: MemoryKind::Procedural,
        entities: extract_entities(&task),
        text,
        index_text: None,
        metadata: input.metadata.clone(),
        created_at: at,
        expires_at: input.expires_at,
        valid_from: Some(at),
        actor: input.scope.agent_id().map(|a| a.as_str().to_string()),
        role: Some(Role::Assistant),
        vector,
        sources: msgs.iter().map(|m| m.id).collect(),
        reason: Some("procedural summary of the agent's steps".into()),
        note: None,
        event_time: None,
    };
    Ok(Plan {
        memories: vec![memory],
        changes: Vec::new(),
        warnings: Vec::new(),
    })
}
