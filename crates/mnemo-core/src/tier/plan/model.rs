//! The chat model's part in the hierarchy: a topic summary with keywords for each segment pages
//! join, and the continuity judgement between consecutive pages of a session. Each is one JSON
//! call; a failed call or an answer that cannot be read is an error, and the caller plans
//! nothing (no page moves, nothing is written).

use super::MAX_SEGMENT_KEYWORDS;
use crate::chat::{ChatMessage, ChatModel, ChatRequest};
use crate::error::Result;
use crate::pipeline::prompts::{CONTINUITY_SYSTEM, SUMMARY_SYSTEM};
use crate::pipeline::{model_json, shape_error, CallLog};
use serde_json::Value;

/// The most tokens a summary or continuity answer may use.
const MAX_ANSWER_TOKENS: u32 = 512;
/// The longest summary kept from a model, in characters.
const MAX_SUMMARY_CHARS: usize = 2_000;

fn request(system: &str, user: String) -> ChatRequest {
    ChatRequest {
        messages: vec![ChatMessage::system(system), ChatMessage::user(user)],
        max_tokens: Some(MAX_ANSWER_TOKENS),
        temperature: Some(0.0),
        json: true,
    }
}

/// A segment's summary and keywords written by the model from its old ones and the texts of
/// the pages joining it.
pub(crate) fn summarise(
    chat: &dyn ChatModel,
    log: &mut CallLog,
    summary: &str,
    keywords: &[String],
    new_pages: &[&str],
) -> Result<(String, Vec<String>)> {
    let mut user = format!(
        "SUMMARY: {summary}\nKEYWORDS: {}\nNEW exchanges:\n",
        keywords.join(", ")
    );
    for (i, p) in new_pages.iter().enumerate() {
        user.push_str(&format!("[{}]\n{p}\n", i + 1));
    }
    let answer = log.chat(chat, "summarise", &request(SUMMARY_SYSTEM, user))?;
    let json = model_json(chat, "summarise", &answer.content)?;
    let bad = |why: &str| shape_error(chat, "summarise", why.to_string());
    let summary = json
        .get("summary")
        .and_then(Value::as_str)
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .ok_or_else(|| bad("no non-empty \"summary\" string"))?;
    if summary.chars().count() > MAX_SUMMARY_CHARS {
        return Err(bad("the summary is longer than 2000 characters"));
    }
    let listed = json
        .get("keywords")
        .and_then(Value::as_array)
        .ok_or_else(|| bad("no \"keywords\" list"))?;
    let mut out: Vec<String> = Vec::new();
    for k in listed {
        let k = k
            .as_str()
            .map(str::trim)
            .ok_or_else(|| bad("a keyword is not a string"))?;
        // Unusable entries are skipped rather than failing a good summary.
        if k.is_empty() || k.contains('\n') || k.chars().count() > crate::note::MAX_ENTRY_CHARS {
            continue;
        }
        if !out.iter().any(|o| o.eq_ignore_ascii_case(k)) && out.len() < MAX_SEGMENT_KEYWORDS {
            out.push(k.to_string());
        }
    }
    Ok((summary.to_string(), out))
}

/// For each (earlier, later) pair of page texts, whether the later continues the earlier. A
/// pair the answer leaves out does not continue (no link is better than an invented one).
pub(crate) fn continuity(
    chat: &dyn ChatModel,
    log: &mut CallLog,
    pairs: &[(&str, &str)],
) -> Result<Vec<bool>> {
    let mut user = String::new();
    for (i, (earlier, later)) in pairs.iter().enumerate() {
        user.push_str(&format!(
            "PAIR {}\nEARLIER:\n{earlier}\nLATER:\n{later}\n\n",
            i + 1
        ));
    }
    let answer = log.chat(chat, "continuity", &request(CONTINUITY_SYSTEM, user))?;
    let json = model_json(chat, "continuity", &answer.content)?;
    let items = json
        .get("pairs")
        .and_then(Value::as_array)
        .ok_or_else(|| shape_error(chat, "continuity", "no \"pairs\" list"))?;
    let mut out = vec![false; pairs.len()];
    for item in items {
        let n = item.get("pair").and_then(Value::as_u64);
        let yes = item.get("continues").and_then(Value::as_bool);
        match (n, yes) {
            (Some(n), Some(yes)) if (1..=pairs.len() as u64).contains(&n) => {
                out[n as usize - 1] = yes;
            }
            (Some(_), Some(_)) => {}
            _ => {
                return Err(shape_error(
                    chat,
                    "continuity",
                    "each pair needs a number \"pair\" and a boolean \"continues\"",
                ))
            }
        }
    }
    Ok(out)
}
