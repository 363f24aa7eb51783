//! The `evolve` call (model mode): one call per new note decides its links to the numbered
//! neighbours shown and the neighbours' changed fields; numbers it invents are ignored with a
//! warning.

use super::{items, number, string_list, NotesInput};
use crate::chat::ChatModel;
use crate::error::Result;
use crate::memory::*;
use crate::note;
use crate::pipeline::prompts::EVOLVE_SYSTEM;
use crate::pipeline::{json_request, model_json, shape_error, CallLog, InferConfig};
use serde_json::Value;

/// What one evolution call decided, with neighbour numbers mapped to table positions.
pub(super) struct Decided {
    pub links: Vec<(usize, f32, Option<String>)>,
    pub updates: Vec<(usize, NoteFields, Option<String>)>,
}

/// The new note an `evolve` call is about, and the neighbours it is shown (numbered from 1).
pub(super) struct Shown<'a> {
    pub text: &'a str,
    pub fields: &'a NoteFields,
    pub table: &'a [Memory],
}

/// One `evolve` call for the note `shown`, under the add's instructions.
pub(super) fn evolve(
    chat: &dyn ChatModel,
    cfg: &InferConfig,
    input: &NotesInput<'_>,
    shown: Shown<'_>,
    log: &mut CallLog,
    warnings: &mut Vec<String>,
) -> Result<Decided> {
    let Shown {
        text,
        fields,
        table,
    } = shown;
    let mut out = Decided {
        links: Vec::new(),
        updates: Vec::new(),
    };
    if table.is_empty() {
        return Ok(out);
    }
    let show = |f: Option<&NoteFields>| -> String {
        let f = f.cloned().unwrap_or_default();
        format!("context: {} | tags: {}", f.context, f.tags.join(", "))
    };
    let mut user = format!(
        "NEW note: {text}\n{} | keywords: {}\n\nEXISTING notes:\n",
        show(Some(fields)),
        fields.keywords.join(", ")
    );
    for (i, n) in table.iter().enumerate() {
        user.push_str(&format!(
            "{}: {}\n   {}\n",
            i + 1,
            n.text,
            show(n.note.as_ref())
        ));
    }
    let req = json_request(EVOLVE_SYSTEM, user, cfg, input.instructions);
    let answer = log.chat(chat, "evolve", &req)?;
    let value = model_json(chat, "evolve", &answer.content)?;
    let position =
        |o: &serde_json::Map<String, Value>, what: &str, warnings: &mut Vec<String>| match number(
            o.get("id"),
        ) {
            Some(n) if n >= 1 && (n as usize) <= table.len() => Some(n as usize - 1),
            other => {
                let shown = other.map_or_else(|| "(none)".to_string(), |n| n.to_string());
                warnings.push(format!("{what} for unknown note {shown} ignored"));
                tracing::warn!(
                    step = "evolve",
                    "model referred to a note that was not shown"
                );
                None
            }
        };
    let reason = |o: &serde_json::Map<String, Value>| {
        o.get("reason")
            .and_then(Value::as_str)
            .map(|r| note::clean_context("reason", &r.replace(['\n', '\r', '\t'], " ")))
            .transpose()
    };
    for item in items(chat, "evolve", &value, "links")? {
        let Value::Object(o) = item else {
            return Err(shape_error(chat, "evolve", "a link is not an object"));
        };
        let Some(at) = position(&o, "link", warnings) else {
            continue;
        };
        let strength = o
            .get("strength")
            .and_then(Value::as_f64)
            .map_or(0.5, |s| s as f32);
        if !strength.is_finite() || !(0.0..=1.0).contains(&strength) {
            warnings.push(format!(
                "link to note {} ignored: strength {strength} is outside [0, 1]",
                at + 1
            ));
            continue;
        }
        let reason = match reason(&o) {
            Ok(r) => r,
            Err(e) => {
                warnings.push(format!("link to note {} ignored: {e}", at + 1));
                continue;
            }
        };
        out.links.retain(|(n, _, _)| *n != at);
        out.links.push((at, strength, reason));
    }
    for item in items(chat, "evolve", &value, "updates")? {
        let Value::Object(o) = item else {
            return Err(shape_error(chat, "evolve", "an update is not an object"));
        };
        let Some(at) = position(&o, "update", warnings) else {
            continue;
        };
        let old = table[at].note.clone().unwrap_or_default();
        let mut new = old.clone();
        if let Some(c) = o.get("context").and_then(Value::as_str) {
            new.context = c.replace(['\n', '\r', '\t'], " ");
        }
        if let Some(t) = string_list(o.get("tags")) {
            new.tags = t;
        }
        let checked = new.validated().and_then(|n| Ok((n, reason(&o)?)));
        match checked {
            Ok((n, _)) if n == old => {}
            Ok((n, r)) => {
                out.updates.retain(|(p, _, _)| *p != at);
                out.updates.push((at, n, r));
            }
            Err(e) => warnings.push(format!("update of note {} ignored: {e}", at + 1)),
        }
    }
    Ok(out)
}
