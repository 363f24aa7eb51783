//! The reconciliation call: each candidate fact against the nearest existing memories (numbered
//! for the model), decided ADD, UPDATE, DELETE or NONE; numbers the model invents fall back to
//! ADD or NONE with a warning.

use super::Fact;
use crate::chat::{ChatMessage, ChatModel, ChatRequest};
use crate::error::Result;
use crate::memory::*;
use crate::pipeline::prompts::RECONCILE_SYSTEM;
use crate::pipeline::{model_json, shape_error, CallLog, InferConfig};
use serde_json::Value;
use std::collections::BTreeMap;

#[derive(Debug, Clone, PartialEq)]
pub(super) enum Event {
    Add,
    Update(usize),
    Delete(usize),
    None,
}

#[derive(Debug, Clone)]
pub(super) struct Decision {
    pub event: Event,
    pub text: Option<String>,
    pub reason: Option<String>,
}

impl Decision {
    pub(super) fn add() -> Self {
        Self {
            event: Event::Add,
            text: None,
            reason: None,
        }
    }
}

pub(super) fn reconcile(
    chat: &dyn ChatModel,
    cfg: &InferConfig,
    table: &[Memory],
    facts: &[Fact],
    log: &mut CallLog,
    warnings: &mut Vec<String>,
) -> Result<BTreeMap<usize, Decision>> {
    let mut user = String::from("EXISTING memories:\n");
    for (i, m) in table.iter().enumerate() {
        user.push_str(&format!("{i}: {}\n", m.text));
    }
    user.push_str("\nNEW facts:\n");
    for (i, f) in facts.iter().enumerate() {
        user.push_str(&format!("fact {}: {}\n", i + 1, f.text));
    }
    let req = ChatRequest {
        messages: vec![
            ChatMessage::system(RECONCILE_SYSTEM),
            ChatMessage::user(user),
        ],
        max_tokens: Some(cfg.max_tokens),
        temperature: Some(0.0),
        json: true,
    };
    let answer = log.chat(chat, "reconcile", &req)?;
    let value = model_json(chat, "reconcile", &answer.content)?;
    let items = match &value {
        Value::Object(o) => match o.get("decisions").or_else(|| o.get("memory")) {
            Some(Value::Array(a)) => a.clone(),
            _ => {
                return Err(shape_error(
                    chat,
                    "reconcile",
                    "expected {\"decisions\": [...]}",
                ))
            }
        },
        Value::Array(a) => a.clone(),
        _ => return Err(shape_error(chat, "reconcile", "expected a JSON object")),
    };
    let number = |v: Option<&Value>| -> Option<i64> {
        let v = v?;
        v.as_i64().or_else(|| v.as_str()?.trim().parse().ok())
    };
    let mut out = BTreeMap::new();
    for (pos, item) in items.iter().enumerate() {
        let Value::Object(o) = item else {
            return Err(shape_error(
                chat,
                "reconcile",
                "a decision is not an object",
            ));
        };
        // Decisions without a fact number are taken in order.
        let fact = match number(o.get("fact")) {
            Some(n) if n >= 1 && (n as usize) <= facts.len() => n as usize - 1,
            Some(n) => {
                warnings.push(format!("decision for unknown fact {n} ignored"));
                tracing::warn!(fact = n, "model referred to a fact that does not exist");
                continue;
            }
            None if pos < facts.len() => pos,
            None => continue,
        };
        let event = o
            .get("event")
            .and_then(Value::as_str)
            .unwrap_or("ADD")
            .trim()
            .to_uppercase();
        let id = number(o.get("id"));
        let shown_id = id.map_or_else(|| "(none)".to_string(), |i| i.to_string());
        let known = id
            .filter(|i| *i >= 0 && (*i as usize) < table.len())
            .map(|i| i as usize);
        let text = o
            .get("text")
            .and_then(Value::as_str)
            .map(|t| t.trim().to_string())
            .filter(|t| !t.is_empty());
        let reason = o.get("reason").and_then(Value::as_str).map(str::to_string);
        let event = match (event.as_str(), known) {
            ("ADD", _) => Event::Add,
            ("NONE" | "NOOP", _) => Event::None,
            ("UPDATE", Some(i)) => Event::Update(i),
            ("DELETE", Some(i)) => Event::Delete(i),
            ("UPDATE", None) => {
                warnings.push(format!(
                    "model chose UPDATE of memory number {shown_id}, which it was not shown; fact {} added instead",
                    fact + 1
                ));
                tracing::warn!(?id, "model invented a memory id; adding the fact instead");
                Event::Add
            }
            ("DELETE", None) => {
                warnings.push(format!(
                    "model chose DELETE of memory number {shown_id}, which it was not shown; ignored"
                ));
                tracing::warn!(?id, "model invented a memory id; deletion ignored");
                Event::None
            }
            (other, _) => {
                return Err(shape_error(
                    chat,
                    "reconcile",
                    format!("unknown event {other:?}"),
                ))
            }
        };
        out.entry(fact).or_insert(Decision {
            event,
            text,
            reason,
        });
    }
    for i in 0..facts.len() {
        out.entry(i).or_insert_with(|| {
            warnings.push(format!("no decision for fact {}; added", i + 1));
            Decision::add()
        });
    }
    Ok(out)
}
