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
//!
//! The steps by file: `enrich` (step 1: fields), `embed` (step 2: texts and window vectors),
//! `lookup` (step 3's store reads, and their records loaded once), `link` (steps 3 and 4: rule
//! links, or the model's through `evolve`), and [`speaker`] (the speaker rule).

use super::{shape_error, CallLog, InferConfig};
use crate::chat::ChatModel;
use crate::embed::Embedder;
use crate::error::Result;
use crate::memory::*;
use crate::note::{NoteConfig, NoteInput};
use crate::scope::Scope;
use crate::store::{CandidateQuery, Evolution, ReadOptions, Store};
use serde_json::Value;

mod embed;
mod enrich;
mod evolve;
mod link;
mod lookup;
mod speaker;

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
/// `WindowIndexing`): the note's own line repeated `own_weight` times in all, then up to
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

/// What one run of the pipeline works with (the store as it was before the call, the models and
/// the settings); the call log is passed on its own, as it is written to.
#[derive(Clone, Copy)]
struct Pipeline<'a> {
    store: &'a dyn Store,
    embedder: &'a dyn Embedder,
    /// `None` in rule mode.
    chat: Option<&'a dyn ChatModel>,
    cfg: &'a InferConfig,
    notes_cfg: &'a NoteConfig,
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
    crate::embed::dot(a, b)
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
    let run = Pipeline {
        store,
        embedder,
        chat,
        cfg,
        notes_cfg,
    };
    let mut plans = Vec::with_capacity(inputs.len());
    let mut fields = Vec::with_capacity(inputs.len());
    for input in inputs {
        let mut plan = NotePlan::default();
        fields.push(enrich::fields_of(&run, input, log, &mut plan.warnings)?);
        plans.push(plan);
    }
    let embedded = embed::embed(&run, inputs, &fields, log)?;
    let (found, speakers) = lookup::find(&run, inputs, &embedded.vectors)?;
    let mut found = found.into_iter();
    let mut at = 0;
    for (k, ((input, (fields, by_rules)), plan)) in
        inputs.iter().zip(fields).zip(&mut plans).enumerate()
    {
        let n = input.messages.len();
        let add = link::Add {
            input,
            fields,
            rule_keywords: by_rules.keywords,
            suffixes: &embedded.suffixes[at..at + n],
            vectors: &embedded.vectors[at..at + n],
            speakers: (&speakers, k),
            found: found.by_ref().take(n).collect(),
        };
        link::link_and_evolve(&run, add, log, plan)?;
        at += n;
    }
    Ok(plans)
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
