//! The note add (A-MEM lineage): fields, enriched embedding, links and neighbour evolution.
//!
//! Order of work, all before the store transaction:
//! 1. Each message becomes one note. The caller's fields are kept; with a chat model one
//!    `enrich` call writes the missing ones for every note of the add; without one the rules
//!    of [`crate::note`] do (keywords against the note's nearest notes, once step 3 has them).
//! 2. The notes are embedded in one batch: each text with the fields a caller or the model
//!    wrote (rule-made fields go to BM25 only); a conversation's notes get window vectors.
//! 3. Per new note, its `neighbours` nearest active notes of the scope are the candidates. With
//!    a chat model one `evolve` call per note decides links and neighbour changes (neighbours
//!    are numbered 1..k and mapped back here; unknown numbers are ignored with a warning);
//!    without one, the link rules apply. Earlier notes of the same add are candidates for rule
//!    links too, unless they share a conversation window. What linking reads from the store
//!    (each note's nearest notes and, in rule mode, the notes sharing its rare names and the
//!    speaker rule's lexical candidates) is looked up for all notes of the call first, several
//!    notes at a time on rayon's threads: the lookups are independent reads of the store as it
//!    was before the call. What they found is then loaded once for the call: one fetch of the
//!    union of their keys per scope (a loaded record does not depend on which other keys are
//!    loaded with it), from which the speaker rule's candidates are also read ([`speaker`]).
//! 4. Changed neighbours get their new enriched text embedded (one batch); the plan carries
//!    the new notes, the links and the evolutions for one transaction.
//!
//! A failed or unusable model answer is an error and nothing is planned: the new notes are not
//! written and no neighbour changes (the facade still logs the messages when configured to).

use super::prompts::{ENRICH_SYSTEM, EVOLVE_SYSTEM};
use super::{json_request, model_json, shape_error, CallLog, InferConfig};
use crate::chat::ChatModel;
use crate::embed::Embedder;
use crate::error::Result;
use crate::memory::*;
use crate::note::{self, NoteConfig, NoteInput};
use crate::scope::Scope;
use crate::store::{CandidateQuery, Evolution, ReadOptions, Store};
use serde_json::Value;
use std::collections::{BTreeMap, HashMap};

mod speaker;
use speaker::SpeakerPool;

/// One note add: the messages (each becomes a note) and what the caller gave.
pub struct NotesInput<'a> {
    pub scope: &'a Scope,
    pub messages: &'a [Message],
    pub metadata: &'a Metadata,
    pub expires_at: Option<Timestamp>,
    /// Fields the caller gave; applied to every note of the add.
    pub given: &'a NoteInput,
    pub instructions: Option<&'a str>,
    /// For a conversation: the turns around each note that its lexical entry also holds.
    pub window: Option<NoteWindow<'a>>,
}

/// The conversation window of a note's lexical entry, as raw turns get it (see the facade's
/// `ContextIndexing`): the note's own line repeated `own_weight` times in all, then up to
/// `before` earlier turns (this add's, then `prior`, the session's stored log) and `after`
/// later turns of this add; the vector is the length-weighted mean of the note's own
/// embedding and those of `embed_before` / `embed_after` turns around it. The record keeps
/// the note's own text.
#[derive(Debug, Clone, Copy)]
pub struct NoteWindow<'a> {
    pub prior: &'a [Message],
    pub before: usize,
    pub after: usize,
    pub own_weight: usize,
    pub speaker: bool,
    /// Turns before and after whose embeddings join the note's own in its vector (each
    /// weighted by its length, as raw turns' windows are).
    pub embed_before: usize,
    pub embed_after: usize,
}

impl NoteWindow<'_> {
    fn line(&self, m: &Message) -> String {
        match (&m.name, self.speaker) {
            (Some(n), true) => format!("{n}: {}", m.content),
            _ => m.content.clone(),
        }
    }

    /// The window lines of message `i` of `messages` (empty when there are none).
    fn suffix(&self, messages: &[Message], i: usize) -> String {
        let all: Vec<&Message> = self.prior.iter().chain(messages).collect();
        let at = self.prior.len() + i;
        let mut lines: Vec<String> = Vec::new();
        for _ in 1..self.own_weight.max(1) {
            lines.push(self.line(all[at]));
        }
        for m in &all[at.saturating_sub(self.before)..at] {
            lines.push(self.line(m));
        }
        for m in all.iter().skip(at + 1).take(self.after) {
            lines.push(self.line(m));
        }
        lines.join("\n")
    }
}

/// What a note add will write.
#[derive(Debug, Clone, Default)]
pub struct NotePlan {
    pub memories: Vec<NewMemory>,
    pub links: Vec<Link>,
    pub evolutions: Vec<Evolution>,
    pub warnings: Vec<String>,
}

const NOTE_KINDS: &[MemoryKind] = &[MemoryKind::Note];

fn note_query(scope: &Scope, limit: usize) -> CandidateQuery<'_> {
    CandidateQuery {
        scope,
        kinds: Some(NOTE_KINDS),
        filter: None,
        read: ReadOptions::default(),
        limit,
    }
}

fn cosine(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

/// Runs the note pipeline for one add. `chat` is `None` in rule mode.
pub fn notes(
    store: &dyn Store,
    embedder: &dyn Embedder,
    chat: Option<&dyn ChatModel>,
    cfg: &InferConfig,
    notes_cfg: &NoteConfig,
    input: &NotesInput<'_>,
    log: &mut CallLog,
) -> Result<NotePlan> {
    notes_many(
        store,
        embedder,
        chat,
        cfg,
        notes_cfg,
        std::slice::from_ref(input),
        log,
    )?
    .pop()
    .ok_or_else(|| crate::error::Error::internal("one input, one plan"))
}

/// The note pipeline for several adds at once: their enriched texts are embedded in one call
/// (as raw adds of a batch are), then each add is linked and evolved on its own against the
/// store as it was before the batch. One plan per input, in order.
pub fn notes_many(
    store: &dyn Store,
    embedder: &dyn Embedder,
    chat: Option<&dyn ChatModel>,
    cfg: &InferConfig,
    notes_cfg: &NoteConfig,
    inputs: &[NotesInput<'_>],
    log: &mut CallLog,
) -> Result<Vec<NotePlan>> {
    let mut plans = Vec::with_capacity(inputs.len());
    let mut all_fields = Vec::with_capacity(inputs.len());
    // Per note: its conversation window lines (BM25 only) and the text its vector is made of.
    let (mut suffixes, mut embedded): (Vec<String>, Vec<String>) = (Vec::new(), Vec::new());
    let mut rules: Vec<ByRules> = Vec::with_capacity(inputs.len());
    // Per input: where its prior turns' texts start in `embedded` (after its notes').
    let mut prior_at: Vec<usize> = Vec::with_capacity(inputs.len());
    for input in inputs {
        let mut plan = NotePlan::default();
        let (fields, by_rules) = fields_of(chat, cfg, input, log, &mut plan.warnings)?;
        let first = embedded.len();
        rules.push(by_rules);
        for (i, (m, f)) in input.messages.iter().zip(&fields).enumerate() {
            // What the vector is made from: rule-made fields repeat the text's own words and
            // name the speaker and day, which add model time and no meaning; they are in
            // the lexical entry only. In a conversation the own line names the speaker.
            let own = match &input.window {
                Some(w) => w.line(m),
                None => m.content.clone(),
            };
            embedded.push(note::enriched_text(&own, &by_rules.embedded(f)));
            suffixes.push(match &input.window {
                Some(w) => w.suffix(input.messages, i),
                None => String::new(),
            });
        }
        prior_at.push(embedded.len() - first);
        if let Some(w) = &input.window {
            let from = w.prior.len().saturating_sub(w.embed_before);
            embedded.extend(w.prior[from..].iter().map(|m| w.line(m)));
        }
        plans.push(plan);
        all_fields.push(fields);
    }
    let refs: Vec<&str> = embedded.iter().map(String::as_str).collect();
    let raw_vectors = if refs.is_empty() {
        Vec::new()
    } else {
        log.embed(embedder, &refs)?
    };
    // Each note's vector, in note order: its own, or its conversation window's.
    let mut vectors: Vec<Vec<f32>> = Vec::with_capacity(suffixes.len());
    let mut base = 0;
    for (input, n) in inputs.iter().zip(&prior_at) {
        let n = *n;
        let prior_n = input
            .window
            .map_or(0, |w| w.prior.len().min(w.embed_before));
        for i in 0..n {
            let own = &raw_vectors[base + i];
            let Some(w) = &input.window else {
                vectors.push(own.clone());
                continue;
            };
            // Window positions over [prior..., this add's notes...].
            let at = prior_n + i;
            let lo = at.saturating_sub(w.embed_before);
            let hi = (at + w.embed_after).min(prior_n + n - 1);
            let mut v = vec![0.0f32; own.len()];
            for j in lo..=hi {
                let (vec, text) = if j < prior_n {
                    (&raw_vectors[base + n + j], &embedded[base + n + j])
                } else {
                    (
                        &raw_vectors[base + j - prior_n],
                        &embedded[base + j - prior_n],
                    )
                };
                let weight = text.chars().count().max(1) as f32;
                v.iter_mut().zip(vec).for_each(|(o, x)| *o += weight * x);
            }
            crate::embed::l2_normalize(&mut v);
            vectors.push(v);
        }
        base += n + prior_n;
    }
    // Every note's store reads, several notes at a time (rayon keeps the order).
    let jobs: Vec<(&Scope, &Message, &[f32])> = inputs
        .iter()
        .flat_map(|input| input.messages.iter().map(move |m| (input.scope, m)))
        .zip(&vectors)
        .map(|((scope, m), v)| (scope, m, v.as_slice()))
        .collect();
    let found = {
        use rayon::prelude::*;
        jobs.par_iter()
            .map(|(scope, m, v)| lookups(store, notes_cfg, scope, (m, v), chat.is_none()))
            .collect::<Result<Vec<_>>>()?
    };
    let (found, speakers) = load(store, inputs, found)?;
    let mut found = found.into_iter();
    let mut at = 0;
    for (k, (((input, fields), plan), by_rules)) in inputs
        .iter()
        .zip(all_fields)
        .zip(&mut plans)
        .zip(&rules)
        .enumerate()
    {
        let n = input.messages.len();
        link_and_evolve(
            embedder,
            chat,
            cfg,
            notes_cfg,
            input,
            fields,
            by_rules.keywords,
            &suffixes[at..at + n],
            &vectors[at..at + n],
            (&speakers, k),
            found.by_ref().take(n).collect(),
            log,
            plan,
        )?;
        at += n;
    }
    Ok(plans)
}

/// Which fields of an add's notes the rules made.
#[derive(Debug, Clone, Copy, Default)]
struct ByRules {
    keywords: bool,
    context: bool,
}

impl ByRules {
    /// The fields a note's vector is made from: all but the rule-made ones.
    fn embedded(&self, f: &NoteFields) -> NoteFields {
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
fn fields_of(
    chat: Option<&dyn ChatModel>,
    cfg: &InferConfig,
    input: &NotesInput<'_>,
    log: &mut CallLog,
    warnings: &mut Vec<String>,
) -> Result<(Vec<NoteFields>, ByRules)> {
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

/// What linking one new note reads from the store, looked up before any note is linked (keys
/// only: [`load`] loads the records for the whole call).
struct Lookups {
    /// Its `neighbours` nearest notes of the scope: (store key, cosine), nearest first.
    near: Vec<(i64, f32)>,
    /// Rule mode: notes sharing a name with it at least `link_entity` informative: (store key,
    /// the name's informativeness).
    by_name: Vec<(i64, f32)>,
    entities: Vec<crate::entity::EntityMention>,
    /// Rule mode: the speaker rule's lexical candidates.
    speaker: Option<speaker::Lookup>,
}

/// [`Lookups`] with their records loaded.
struct Found {
    /// (cosine, record), nearest first.
    near: Vec<(f32, Memory)>,
    /// (the shared name's informativeness, record).
    by_name: Vec<(f32, Memory)>,
    entities: Vec<crate::entity::EntityMention>,
}

/// Keys per `fetch` (bounds one statement's parameters).
const FETCH_CHUNK: usize = 500;

/// Loads what the lookups of every note of `inputs` found (one [`Lookups`] per message, in
/// order): one fetch of the union of their keys per scope, in chunks of [`FETCH_CHUNK`]. A key
/// the fetch skips (no longer visible) is dropped where it was found, as before. The speaker
/// rule's candidates are read from the same records.
fn load(
    store: &dyn Store,
    inputs: &[NotesInput<'_>],
    found: Vec<Lookups>,
) -> Result<(Vec<Found>, SpeakerPool)> {
    // Per input: which entry of `scopes` (and later `loaded`) holds its scope.
    let mut scopes: Vec<(&Scope, Vec<i64>)> = Vec::new();
    let mut group: Vec<usize> = Vec::with_capacity(inputs.len());
    let mut per_input = found.iter();
    for input in inputs {
        let at = match scopes.iter().position(|(s, _)| *s == input.scope) {
            Some(at) => at,
            None => {
                scopes.push((input.scope, Vec::new()));
                scopes.len() - 1
            }
        };
        group.push(at);
        let keys = &mut scopes[at].1;
        for l in per_input.by_ref().take(input.messages.len()) {
            keys.extend(l.near.iter().map(|(k, _)| *k));
            keys.extend(l.by_name.iter().map(|(k, _)| *k));
            if let Some(s) = &l.speaker {
                keys.extend(s.keys());
            }
        }
    }
    let mut loaded: Vec<HashMap<i64, Memory>> = Vec::with_capacity(scopes.len());
    for (scope, mut keys) in scopes {
        keys.sort_unstable();
        keys.dedup();
        let q = note_query(scope, FETCH_CHUNK);
        let mut records = HashMap::with_capacity(keys.len());
        for chunk in keys.chunks(FETCH_CHUNK) {
            records.extend(store.fetch(&q, chunk)?);
        }
        loaded.push(records);
    }
    let mut out = Vec::with_capacity(found.len());
    let mut speaker = Vec::with_capacity(found.len());
    let mut found = found.into_iter();
    for (input, g) in inputs.iter().zip(&group) {
        let records = &loaded[*g];
        for l in found.by_ref().take(input.messages.len()) {
            let near = l
                .near
                .iter()
                .filter_map(|(k, score)| records.get(k).map(|n| (*score, n.clone())))
                .collect();
            let by_name = l
                .by_name
                .iter()
                .filter_map(|(k, score)| records.get(k).map(|n| (*score, n.clone())))
                .collect();
            speaker.push(l.speaker);
            out.push(Found {
                near,
                by_name,
                entities: l.entities,
            });
        }
    }
    let pool = SpeakerPool::from_loaded(inputs, speaker, group, &loaded);
    Ok((out, pool))
}

/// The store reads of one new note (`m`, embedded as `vector`) for [`link_and_evolve`].
fn lookups(
    store: &dyn Store,
    notes_cfg: &NoteConfig,
    scope: &Scope,
    (m, vector): (&Message, &[f32]),
    rules: bool,
) -> Result<Lookups> {
    let q = note_query(scope, notes_cfg.neighbours);
    let near = if notes_cfg.neighbours == 0 {
        Vec::new()
    } else {
        let cands = store.dense_candidates(&q, vector)?;
        cands.iter().map(|c| (c.key, c.score)).collect::<Vec<_>>()
    };
    let entities = crate::entity::extract_entities(&m.content);
    let mut by_name = Vec::new();
    let names: Vec<String> = entities
        .iter()
        .filter(|e| e.entity_type != crate::entity::NUMBER)
        .map(|e| e.normalized.clone())
        .collect();
    if rules && !names.is_empty() {
        let pooled: Vec<i64> = near.iter().map(|(k, _)| *k).collect();
        let eq = note_query(scope, notes_cfg.max_rule_links.max(1) * 4);
        by_name = store
            .entity_candidates(&eq, &names, &pooled)?
            .into_iter()
            .filter(|c| c.score >= notes_cfg.link_entity)
            .map(|c| (c.key, c.score))
            .collect();
    }
    let speaker = if rules {
        speaker::lookup(store, scope, notes_cfg, m)?
    } else {
        None
    };
    Ok(Lookups {
        near,
        by_name,
        entities,
        speaker,
    })
}

/// Links (and, with a model, evolutions) of one add's notes, given their embeddings.
#[expect(
    clippy::too_many_arguments,
    reason = "each input is a separate part of the step; a context struct is the planned fix"
)]
fn link_and_evolve(
    embedder: &dyn Embedder,
    chat: Option<&dyn ChatModel>,
    cfg: &InferConfig,
    notes_cfg: &NoteConfig,
    input: &NotesInput<'_>,
    fields: Vec<NoteFields>,
    rule_keywords: bool,
    suffixes: &[String],
    vectors: &[Vec<f32>],
    (speakers, input_at): (&SpeakerPool, usize),
    found: Vec<Found>,
    log: &mut CallLog,
    plan: &mut NotePlan,
) -> Result<()> {
    let now = chrono::Utc::now();
    // Neighbour changes by id; a later note of the same add sees an earlier one's change.
    let mut evolved: BTreeMap<MemoryId, (Memory, NoteFields, Option<String>)> = BTreeMap::new();
    let items = input.messages.iter().zip(fields).zip(vectors).zip(found);
    for (i, (((m, mut f), vector), found)) in items.enumerate() {
        let id = MemoryId::new();
        let Found {
            near,
            by_name,
            entities,
        } = found;
        if rule_keywords {
            // Distinctive against the scope's nearest notes: the ones just found.
            let texts: Vec<&str> = near.iter().map(|(_, n)| n.text.as_str()).collect();
            f.keywords = note::rule_keywords(&m.content, &texts);
        }
        let mut index_text = note::enriched_text(&m.content, &f);
        if !suffixes[i].is_empty() {
            index_text.push('\n');
            index_text.push_str(&suffixes[i]);
        }
        match chat {
            Some(chat) => {
                let table: Vec<Memory> = near
                    .iter()
                    .map(|(_, n)| match evolved.get(&n.id) {
                        Some((_, f, _)) => Memory {
                            note: Some(f.clone()),
                            ..n.clone()
                        },
                        None => n.clone(),
                    })
                    .collect();
                let decided = evolve(
                    chat,
                    cfg,
                    input,
                    &m.content,
                    &f,
                    &table,
                    log,
                    &mut plan.warnings,
                )?;
                for (n, strength, reason) in decided.links {
                    plan.links.push(Link {
                        from: id,
                        to: table[n].id,
                        kind: LinkKind::Related,
                        strength,
                        author: Author::Model,
                        created_at: now,
                        reason,
                    });
                }
                for (n, new, reason) in decided.updates {
                    let old = &table[n];
                    evolved.insert(old.id, (old.clone(), new, reason));
                }
            }
            None => {
                let mut links: HashMap<MemoryId, (f32, String)> = HashMap::new();
                for (score, n) in &near {
                    if *score >= notes_cfg.link_similarity {
                        links.insert(n.id, (*score, format!("similarity {score:.2}")));
                    }
                }
                // Earlier notes of the same add: by similarity, unless a conversation window
                // already ties them (their vectors share turns, so similarity says nothing).
                if input.window.is_none() {
                    for (j, earlier) in plan.memories.iter().enumerate() {
                        let score = cosine(vector, &vectors[j]);
                        if score >= notes_cfg.link_similarity {
                            links.insert(earlier.id, (score, format!("similarity {score:.2}")));
                        }
                    }
                }
                for (score, n) in &by_name {
                    let e = links.entry(n.id).or_insert((0.0, String::new()));
                    if *score > e.0 {
                        *e = (*score, format!("shares a rare name (weight {score:.2})"));
                    }
                }
                speakers.links(input_at, i, m, notes_cfg, &mut links);
                let mut links: Vec<(MemoryId, (f32, String))> = links.into_iter().collect();
                links.sort_by(|a, b| b.1 .0.total_cmp(&a.1 .0).then(a.0.cmp(&b.0)));
                links.truncate(notes_cfg.max_rule_links);
                for (to, (strength, reason)) in links {
                    plan.links.push(Link {
                        from: id,
                        to,
                        kind: LinkKind::Related,
                        strength: strength.clamp(0.0, 1.0),
                        author: Author::Rule,
                        created_at: now,
                        reason: Some(reason),
                    });
                }
            }
        }
        plan.memories.push(NewMemory {
            id,
            scope: input.scope.clone(),
            kind: MemoryKind::Note,
            text: m.content.clone(),
            index_text: Some(index_text),
            metadata: input.metadata.clone(),
            created_at: m.created_at,
            expires_at: input.expires_at,
            valid_from: None,
            actor: m.name.clone(),
            role: Some(m.role),
            vector: vector.clone(),
            sources: vec![m.id],
            entities,
            reason: None,
            note: Some(f.clone()),
        });
    }
    if !evolved.is_empty() {
        let texts: Vec<String> = evolved
            .values()
            .map(|(old, f, _)| note::enriched_text(&old.text, f))
            .collect();
        let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
        let vectors = log.embed(embedder, &refs)?;
        for (((id, (_, f, reason)), text), vector) in evolved.into_iter().zip(texts).zip(vectors) {
            plan.evolutions.push(Evolution {
                id,
                note: f,
                index_text: text,
                vector,
                reason,
            });
        }
    }
    Ok(())
}

fn string_list(v: Option<&Value>) -> Option<Vec<String>> {
    match v? {
        Value::Array(a) => Some(
            a.iter()
                .filter_map(|x| x.as_str().map(str::to_string))
                .collect(),
        ),
        Value::String(s) => Some(
            s.split(',')
                .map(|p| p.trim().to_string())
                .filter(|p| !p.is_empty())
                .collect(),
        ),
        _ => None,
    }
}

fn number(v: Option<&Value>) -> Option<i64> {
    let v = v?;
    v.as_i64()
        .or_else(|| v.as_f64().filter(|f| f.fract() == 0.0).map(|f| f as i64))
        .or_else(|| v.as_str()?.trim().parse().ok())
}

/// The items of `{key: [...]}` (or a bare array) in a model answer.
fn items(chat: &dyn ChatModel, step: &str, value: &Value, key: &str) -> Result<Vec<Value>> {
    match value {
        Value::Object(o) => match o.get(key) {
            Some(Value::Array(a)) => Ok(a.clone()),
            None | Some(Value::Null) => Ok(Vec::new()),
            _ => Err(shape_error(chat, step, format!("\"{key}\" is not a list"))),
        },
        Value::Array(a) => Ok(a.clone()),
        _ => Err(shape_error(chat, step, "expected a JSON object")),
    }
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
            super::render_message(None, m).trim_start_matches("- ")
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

/// What one evolution call decided, with neighbour numbers mapped to table positions.
struct Decided {
    links: Vec<(usize, f32, Option<String>)>,
    updates: Vec<(usize, NoteFields, Option<String>)>,
}

#[expect(
    clippy::too_many_arguments,
    reason = "each input is a separate part of the step; a context struct is the planned fix"
)]
fn evolve(
    chat: &dyn ChatModel,
    cfg: &InferConfig,
    input: &NotesInput<'_>,
    text: &str,
    fields: &NoteFields,
    table: &[Memory],
    log: &mut CallLog,
    warnings: &mut Vec<String>,
) -> Result<Decided> {
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
