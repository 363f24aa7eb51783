//! Step 1: the fields of each note: the caller's, then with a chat model one `enrich` call for
//! the missing ones of every note of the add, or the rules of [`crate::note`].

use super::{items, number, string_list, NotesInput, Pipeline};
use crate::chat::ChatModel;
use crate::error::Result;
use crate::memory::*;
use crate::note::{self, NoteInput};
use crate::pipeline::prompts::ENRICH_SYSTEM;
use crate::pipeline::{json_request, model_json, shape_error, CallLog, InferConfig};
use serde_json::Value;

/// Which fields of an add's notes the rules made.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct ByRules {
    pub keywords: bool,
    pub context: bool,
}

impl ByRules {
    /// The fields a note's vector is made from: all but the rule-made ones.
    pub(super) fn embedded(&self, f: &NoteFields) -> NoteFields {
        NoteFields {
            keywords: if self.keywords {
                Vec::new()
            } else {
                f.keywords.clone()
            },
            tags: f.tags.clone(),
            context: if self.context {
                String::new()
            } else {
                f.context.clone()
            },
        }
    }
}

/// The fields of each note of one add: the caller's, then the model's or the rules'; and
/// which of them the rules made.
pub(super) fn fields_of(
    run: &Pipeline<'_>,
    input: &NotesInput<'_>,
    log: &mut CallLog,
    warnings: &mut Vec<String>,
) -> Result<(Vec<NoteFields>, ByRules)> {
    let (chat, cfg) = (run.chat, run.cfg);
    let given = input.given.validated()?;
    let by_rules = ByRules {
        keywords: chat.is_none() && given.keywords.is_none(),
        context: chat.is_none() && given.context.is_none(),
    };
    let mut fields: Vec<NoteFields> = input
        .messages
        .iter()
        .map(|m| NoteFields {
            keywords: given.keywords.clone().unwrap_or_default(),
            tags: given.tags.clone().unwrap_or_default(),
            context: given.context.clone().unwrap_or_else(|| {
                if chat.is_some() {
                    String::new()
                } else {
                    note::rule_context(
                        m.name.as_deref(),
                        m.session_id.as_deref(),
                        Some(m.created_at),
                    )
                }
            }),
        })
        .collect();
    match chat {
        Some(chat) if !given.is_complete() => {
            enrich(chat, cfg, input, &given, &mut fields, log, warnings)?;
        }
        Some(_) => {}
        // Rule keywords are written once the note's nearest notes are known (after embedding:
        // they are not part of what is embedded), see `link_and_evolve`.
        None => {}
    }
    Ok((fields, by_rules))
}

/// One call writes the missing fields of every note of the add. A note the model skips or
/// answers unusably for keeps what it has (and the add says so in a warning).
fn enrich(
    chat: &dyn ChatModel,
    cfg: &InferConfig,
    input: &NotesInput<'_>,
    given: &NoteInput,
    fields: &mut [NoteFields],
    log: &mut CallLog,
    warnings: &mut Vec<String>,
) -> Result<()> {
    let missing: Vec<&str> = [
        (given.keywords.is_none(), "keywords"),
        (given.tags.is_none(), "tags"),
        (given.context.is_none(), "context"),
    ]
    .into_iter()
    .filter(|(m, _)| *m)
    .map(|(_, f)| f)
    .collect();
    let mut user = format!("Missing fields: {}\n\nNOTES:\n", missing.join(", "));
    for (i, m) in input.messages.iter().enumerate() {
        user.push_str(&format!(
            "note {}: {}\n",
            i + 1,
            crate::pipeline::render_message(None, m).trim_start_matches("- ")
        ));
    }
    let req = json_request(ENRICH_SYSTEM, user, cfg, input.instructions);
    let answer = log.chat(chat, "enrich", &req)?;
    let value = model_json(chat, "enrich", &answer.content)?;
    let mut answered = vec![false; fields.len()];
    for (pos, item) in items(chat, "enrich", &value, "notes")?.iter().enumerate() {
        let Value::Object(o) = item else {
            return Err(shape_error(chat, "enrich", "a note is not an object"));
        };
        let at = match number(o.get("note")) {
            Some(n) if n >= 1 && (n as usize) <= fields.len() => n as usize - 1,
            Some(n) => {
                warnings.push(format!("enrichment for unknown note {n} ignored"));
                continue;
            }
            None if pos < fields.len() => pos,
            None => continue,
        };
        let f = &mut fields[at];
        let mut candidate = f.clone();
        if given.keywords.is_none() {
            candidate.keywords = string_list(o.get("keywords")).unwrap_or_default();
        }
        if given.tags.is_none() {
            candidate.tags = string_list(o.get("tags")).unwrap_or_default();
        }
        if given.context.is_none() {
            candidate.context = o
                .get("context")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string();
        }
        // Model lists may be long or repeat themselves: cut to the bounds, then clean.
        candidate.keywords.truncate(note::MAX_LIST_ENTRIES);
        candidate.tags.truncate(note::MAX_LIST_ENTRIES);
        candidate.keywords.retain(|k| !k.trim().is_empty());
        candidate.tags.retain(|k| !k.trim().is_empty());
        candidate.context = candidate.context.replace(['\n', '\r', '\t'], " ");
        match candidate.validated() {
            Ok(c) => {
                *f = c;
                answered[at] = true;
            }
            Err(e) => warnings.push(format!("enrichment of note {} ignored: {e}", at + 1)),
        }
    }
    for (i, done) in answered.iter().enumerate() {
        if !done {
            warnings.push(format!(
                "the model wrote no fields for note {}; its missing fields stay empty",
                i + 1
            ));
        }
    }
    Ok(())
}
