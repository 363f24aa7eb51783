//! Extraction and reconciliation: new messages → candidate facts → ADD / UPDATE / DELETE / NONE
//! against the nearest existing memories.

use super::prompts::EXTRACT_SYSTEM;
use super::{json_request, model_json, render_message, shape_error, CallLog, InferConfig, Plan};
use crate::chat::ChatModel;
use crate::embed::Embedder;
use crate::entity::{extract_entities, normalize_entity, EntityMention};
use crate::error::Result;
use crate::memory::*;
use crate::scope::Scope;
use crate::search::{hybrid_search, RankParams, SearchRequest};
use crate::store::{CandidateQuery, ReadOptions, Store, Supersession};
use serde_json::Value;
use std::collections::{BTreeMap, HashMap, HashSet};

mod reconcile;
use reconcile::{reconcile, Decision, Event};

/// One inferred add, as the facade hands it over.
pub struct InferInput<'a> {
    pub scope: &'a Scope,
    /// The add's messages (already validated, with ids and times), not yet stored.
    pub messages: &'a [Message],
    pub metadata: &'a Metadata,
    pub expires_at: Option<Timestamp>,
    /// Instructions for this call, added to those of the configuration.
    pub instructions: Option<&'a str>,
}

/// A candidate fact as extracted.
#[derive(Debug, Clone)]
struct Fact {
    text: String,
    speaker: Option<String>,
    sources: Vec<MessageId>,
    entities: Vec<EntityMention>,
    vector: Vec<f32>,
    /// The model's answer for when it happened, as given.
    when: Option<String>,
}

const FORGET: &str = "forget:";

/// The numbers of a text (digit-bearing words), sorted.
fn numbers(text: &str) -> Vec<String> {
    let mut n: Vec<String> = text
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| w.chars().any(|c| c.is_ascii_digit()))
        .map(str::to_string)
        .collect();
    n.sort();
    n
}

/// True when two close texts agree on their particulars: the same numbers, and every name
/// either one mentions appears in the other (case aside). Only then are they one fact.
pub(crate) fn same_particulars(a: &str, b: &str) -> bool {
    if numbers(a) != numbers(b) {
        return false;
    }
    let (la, lb) = (normalize_entity(a), normalize_entity(b));
    let words = |s: &str| {
        s.split_whitespace()
            .map(str::to_string)
            .collect::<HashSet<String>>()
    };
    let (wa, wb) = (words(&la), words(&lb));
    let mentions = |text: &str, other: &HashSet<String>| {
        extract_entities(text).into_iter().all(|e| {
            normalize_entity(&e.name)
                .split_whitespace()
                .all(|w| other.contains(w))
        })
    };
    mentions(a, &wb) && mentions(b, &wa)
}

fn is_forget(text: &str) -> bool {
    text.trim().to_lowercase().starts_with(FORGET)
}

/// Runs extraction and reconciliation for one add. Model calls are recorded in `log` even when
/// the pipeline fails.
pub fn infer(
    store: &dyn Store,
    embedder: &dyn Embedder,
    chat: &dyn ChatModel,
    cfg: &InferConfig,
    rank: &RankParams,
    input: &InferInput<'_>,
    log: &mut CallLog,
) -> Result<Plan> {
    let mut plan = Plan::default();
    let new: Vec<&Message> = input.messages.iter().collect();
    if new.is_empty() {
        return Ok(plan);
    }
    // The log as every reader sees it: a deleted or erased turn is not shown to the model again,
    // and the add's own turns (logged already when it was queued) are new, not recent.
    let recent = crate::store::visible_messages(
        store,
        input.scope,
        crate::store::earlier_turns(
            store,
            input.scope,
            None,
            input.messages,
            cfg.recent_messages,
        )?,
        &crate::ReadOptions::default(),
    )?;
    let joined: String = new
        .iter()
        .map(|m| m.content.as_str())
        .collect::<Vec<_>>()
        .join("\n");
    // The new messages together may be longer than a query may be; their head finds the
    // similar memories.
    let query = crate::limits::truncate_chars(joined.trim_start(), crate::limits::MAX_QUERY_CHARS);
    let similar = if cfg.similar_memories > 0 && crate::text::has_visible_content(query) {
        let v = log.embed(embedder, &[&joined])?.remove(0);
        let mut req = SearchRequest::new(input.scope.clone(), query, cfg.similar_memories);
        req.kinds = Some(vec![MemoryKind::Fact]);
        hybrid_search(store, &req, &v, rank)?
            .into_iter()
            .map(|h| h.memory)
            .collect()
    } else {
        Vec::new()
    };
    let facts = extract(chat, cfg, input, &recent, &similar, &new, log)?;
    if facts.is_empty() {
        return Ok(plan);
    }
    let texts: Vec<&str> = facts.iter().map(|f| f.0.as_str()).collect();
    let vectors = log.embed(embedder, &texts)?;
    let mut candidates: Vec<Fact> = Vec::new();
    let mut seen = HashSet::new();
    for ((text, speaker, sources, entities, when), vector) in facts.into_iter().zip(vectors) {
        if !seen.insert(content_hash(&text)) {
            plan.warnings.push(format!(
                "fact {text:?} repeated in one extraction; kept once"
            ));
            continue;
        }
        candidates.push(Fact {
            text,
            speaker,
            sources,
            entities,
            vector,
            when,
        });
    }
    // Exact duplicates anywhere in the scope are dropped without asking the model.
    let hashes: Vec<String> = candidates.iter().map(|f| content_hash(&f.text)).collect();
    let existing: HashSet<String> = store
        .find_by_hash(input.scope, &hashes)?
        .into_iter()
        .map(|(h, _)| h)
        .collect();
    let fact_kinds = [MemoryKind::Fact];
    let cq = CandidateQuery {
        scope: input.scope,
        kinds: Some(&fact_kinds),
        filter: None,
        read: ReadOptions::default(),
        limit: cfg.neighbours_per_fact.max(1),
    };
    // Neighbours of every remaining fact, numbered 0.. in order of first appearance.
    let mut table: Vec<Memory> = Vec::new();
    let mut kept: Vec<Fact> = Vec::new();
    for fact in candidates {
        if existing.contains(&content_hash(&fact.text)) {
            plan.warnings
                .push(format!("fact {:?} is already stored; skipped", fact.text));
            continue;
        }
        let near = store.dense_candidates(&cq, &fact.vector)?;
        let keys: Vec<i64> = near.iter().map(|c| c.key).collect();
        let neighbours = store.fetch(&cq, &keys)?;
        if let Some(top) = near.first().filter(|c| c.score >= cfg.near_duplicate) {
            let text = neighbours
                .iter()
                .find(|(k, _)| *k == top.key)
                .map(|(_, m)| m.text.as_str())
                .unwrap_or_default();
            // Close in embedding space is not the same fact when a number, date or name
            // differs ("the wedding is on June 14" vs "on June 21"): the model decides those.
            if !is_forget(&fact.text) && same_particulars(&fact.text, text) {
                plan.warnings.push(format!(
                    "fact {:?} nearly repeats {text:?} (cosine {:.3}); skipped",
                    fact.text, top.score
                ));
                continue;
            }
        }
        for (_, m) in neighbours {
            if !table.iter().any(|t| t.id == m.id) {
                table.push(m);
            }
        }
        kept.push(fact);
    }
    if kept.is_empty() {
        return Ok(plan);
    }
    let decisions = if table.is_empty() {
        // Nothing to reconcile against: every fact is new.
        (0..kept.len()).map(|i| (i, Decision::add())).collect()
    } else {
        reconcile(chat, cfg, &table, &kept, log, &mut plan.warnings)?
    };
    apply(
        embedder, cfg, input, &table, kept, decisions, log, &mut plan,
    )?;
    Ok(plan)
}

/// A fact as extracted: text, speaker, sources, entities and the model's event time answer.
type Extracted = (
    String,
    Option<String>,
    Vec<MessageId>,
    Vec<EntityMention>,
    Option<String>,
);

fn extract(
    chat: &dyn ChatModel,
    cfg: &InferConfig,
    input: &InferInput<'_>,
    recent: &[Message],
    similar: &[Memory],
    new: &[&Message],
    log: &mut CallLog,
) -> Result<Vec<Extracted>> {
    let mut user = String::new();
    if !recent.is_empty() {
        user.push_str("EARLIER messages (context only):\n");
        for m in recent {
            user.push_str(&render_message(None, m));
            user.push('\n');
        }
        user.push('\n');
    }
    if !similar.is_empty() {
        user.push_str("KNOWN memories (context only):\n");
        for m in similar {
            user.push_str(&format!("- {}\n", m.text));
        }
        user.push('\n');
    }
    user.push_str("NEW messages:\n");
    for (i, m) in new.iter().enumerate() {
        user.push_str(&render_message(Some(i + 1), m));
        user.push('\n');
    }
    let req = json_request(EXTRACT_SYSTEM, user, cfg, input.instructions);
    let answer = log.chat(chat, "extract", &req)?;
    let value = model_json(chat, "extract", &answer.content)?;
    let items = match &value {
        Value::Object(o) => match o.get("facts") {
            Some(Value::Array(a)) => a.clone(),
            Some(Value::Null) | None if o.is_empty() => Vec::new(),
            _ => return Err(shape_error(chat, "extract", "expected {\"facts\": [...]}")),
        },
        Value::Array(a) => a.clone(),
        _ => return Err(shape_error(chat, "extract", "expected a JSON object")),
    };
    let mut out = Vec::new();
    for item in items {
        let (text, speaker, sources, entities, when) = match item {
            Value::String(s) => (s, None, Vec::new(), Vec::new(), None),
            Value::Object(o) => {
                let text = o
                    .get("text")
                    .or_else(|| o.get("fact"))
                    .and_then(Value::as_str)
                    .ok_or_else(|| shape_error(chat, "extract", "a fact has no \"text\""))?
                    .to_string();
                let speaker = o.get("speaker").and_then(Value::as_str).map(str::to_string);
                let sources: Vec<MessageId> = o
                    .get("sources")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .filter_map(|n| n.as_u64().or_else(|| n.as_str()?.trim().parse().ok()))
                    .filter_map(|n| new.get((n as usize).checked_sub(1)?).map(|m| m.id))
                    .collect();
                let entities = o
                    .get("entities")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .filter_map(|e| {
                        let (name, ty) = match e {
                            Value::String(s) => (s.clone(), "other".to_string()),
                            Value::Object(e) => (
                                e.get("name")?.as_str()?.to_string(),
                                e.get("type")
                                    .and_then(Value::as_str)
                                    .unwrap_or("other")
                                    .to_string(),
                            ),
                            _ => return None,
                        };
                        let normalized = normalize_entity(&name);
                        (!normalized.is_empty()).then_some(EntityMention {
                            name: name.trim().to_string(),
                            normalized,
                            entity_type: ty.to_lowercase(),
                        })
                    })
                    .collect();
                let when = o
                    .get("event_time")
                    .and_then(Value::as_str)
                    .map(str::to_string);
                (text, speaker, sources, entities, when)
            }
            _ => {
                return Err(shape_error(
                    chat,
                    "extract",
                    "a fact is neither text nor an object",
                ))
            }
        };
        let text = text.trim().to_string();
        if text.is_empty() {
            continue;
        }
        // A fact the model cites no (existing) message for stays unattributed: empty
        // `sources`. Crediting it to every message of the add would claim a provenance nobody
        // established (and inflate any evidence-based score of the memories).
        let entities = if entities.is_empty() {
            extract_entities(&text)
        } else {
            entities
        };
        out.push((
            text,
            speaker.filter(|s| !s.trim().is_empty()),
            sources,
            entities,
            when,
        ));
    }
    Ok(out)
}

/// The table row a new memory supersedes, with the model's reason.
type Replaces = (usize, Option<String>);

#[expect(
    clippy::too_many_arguments,
    reason = "each input is a separate part of the step; a context struct is the planned fix"
)]
fn apply(
    embedder: &dyn Embedder,
    cfg: &InferConfig,
    input: &InferInput<'_>,
    table: &[Memory],
    facts: Vec<Fact>,
    decisions: BTreeMap<usize, Decision>,
    log: &mut CallLog,
    plan: &mut Plan,
) -> Result<()> {
    let at = input
        .messages
        .iter()
        .map(|m| m.created_at)
        .max()
        .unwrap_or_else(chrono::Utc::now);
    let role_of: HashMap<MessageId, Role> = input.messages.iter().map(|m| (m.id, m.role)).collect();
    let mut retired: HashSet<usize> = HashSet::new();
    // Texts that differ from the extracted fact need their own vectors.
    let mut to_embed: Vec<(usize, String)> = Vec::new();
    // Each new memory with the table row it replaces (and why), if any.
    let mut staged: Vec<(NewMemory, Option<Replaces>)> = Vec::new();
    for (i, mut fact) in facts.into_iter().enumerate() {
        let d = decisions.get(&i).cloned().unwrap_or_else(Decision::add);
        let mut event = d.event.clone();
        if cfg.additive_only {
            event = match event {
                Event::Update(_) => Event::Add,
                Event::Delete(_) => {
                    plan.warnings.push(format!(
                        "additive-only: deletion proposed by fact {:?} skipped",
                        fact.text
                    ));
                    Event::None
                }
                e => e,
            };
        }
        if let Event::Update(t) | Event::Delete(t) = event {
            if !retired.insert(t) {
                plan.warnings.push(format!(
                    "memory {:?} was already changed by an earlier fact in this add",
                    table[t].text
                ));
                event = match event {
                    Event::Update(_) => Event::Add,
                    _ => Event::None,
                };
            }
        }
        if is_forget(&fact.text) && matches!(event, Event::Add | Event::Update(_)) {
            plan.warnings.push(format!(
                "request {:?} matched no stored memory; nothing was forgotten",
                fact.text
            ));
            if let Event::Update(t) = event {
                retired.remove(&t);
            }
            continue;
        }
        match event {
            Event::None => {
                plan.warnings.push(format!(
                    "fact {:?}: no change ({})",
                    fact.text,
                    d.reason.as_deref().unwrap_or("model chose NONE")
                ));
            }
            Event::Delete(t) => plan.changes.push(Supersession {
                old: table[t].id,
                by: None,
                state: MemoryState::Deleted,
                valid_until: at,
                reason: d.reason.clone(),
            }),
            Event::Add | Event::Update(_) => {
                if let (Event::Update(_), Some(text)) = (&event, &d.text) {
                    if *text != fact.text {
                        fact.text = text.clone();
                        fact.entities = extract_entities(text)
                            .into_iter()
                            .chain(std::mem::take(&mut fact.entities))
                            .collect();
                        to_embed.push((staged.len(), text.clone()));
                    }
                }
                let role = fact.sources.first().and_then(|s| role_of.get(s)).copied();
                let mut entities: Vec<EntityMention> = Vec::new();
                for e in fact.entities {
                    if !entities.iter().any(|x| x.normalized == e.normalized) {
                        entities.push(e);
                    }
                }
                let event_time = super::event_time::of_fact(
                    &super::event_time::FactTime {
                        text: &fact.text,
                        model: fact.when.as_deref(),
                        sources: &fact.sources,
                        messages: input.messages,
                        fallback: at,
                    },
                    &crate::time::TaggerOptions::default(),
                );
                let memory = NewMemory {
                    id: MemoryId::new(),
                    scope: input.scope.clone(),
                    kind: MemoryKind::Fact,
                    text: fact.text,
                    index_text: None,
                    metadata: input.metadata.clone(),
                    created_at: at,
                    expires_at: input.expires_at,
                    valid_from: Some(at),
                    actor: fact.speaker,
                    role,
                    vector: fact.vector,
                    sources: fact.sources,
                    entities,
                    reason: d.reason.clone(),
                    note: None,
                    event_time,
                };
                let replaces = match event {
                    Event::Update(t) => Some((t, d.reason.clone())),
                    _ => None,
                };
                staged.push((memory, replaces));
            }
        }
    }
    if !to_embed.is_empty() {
        let texts: Vec<&str> = to_embed.iter().map(|(_, t)| t.as_str()).collect();
        let vectors = log.embed(embedder, &texts)?;
        for ((idx, _), v) in to_embed.iter().zip(vectors) {
            staged[*idx].0.vector = v;
        }
    }
    for (memory, replaces) in staged {
        if let Some((t, reason)) = replaces {
            plan.changes.push(Supersession {
                old: table[t].id,
                by: Some(memory.id),
                state: MemoryState::Superseded,
                valid_until: at,
                reason,
            });
        }
        plan.memories.push(memory);
    }
    Ok(())
}
