//! Steps 3 and 4 for one add: each new note linked (by the model's `evolve` call, or by the
//! rules: similarity, shared rare names, the speaker rule), changed neighbours re-embedded, and
//! everything put in the plan.

use super::evolve::{evolve, Shown};
use super::lookup::Found;
use super::speaker::SpeakerPool;
use super::{cosine, NotePlan, NotesInput, Pipeline};
use crate::chat::ChatModel;
use crate::error::Result;
use crate::memory::*;
use crate::note;
use crate::pipeline::{CallLog, InferConfig};
use crate::store::Evolution;
use std::collections::{BTreeMap, HashMap};

/// One add's notes, ready to link.
pub(super) struct Add<'a> {
    pub input: &'a NotesInput<'a>,
    /// Per note: its fields (rule keywords are written here, once its neighbours are known).
    pub fields: Vec<NoteFields>,
    /// Whether the rules write the keywords.
    pub rule_keywords: bool,
    /// Per note: its conversation window lines.
    pub suffixes: &'a [String],
    pub vectors: &'a [Vec<f32>],
    /// The speaker rule's candidates of the call, and this add's position in it.
    pub speakers: (&'a SpeakerPool, usize),
    /// Per note: what its lookups found.
    pub found: Vec<Found>,
}

/// Neighbour changes by id: the neighbour as it was, its new fields and the reason. A later
/// note of the same add sees an earlier one's change.
type Evolved = BTreeMap<MemoryId, (Memory, NoteFields, Option<String>)>;

/// Links (and, with a model, evolutions) of one add's notes, given their embeddings.
pub(super) fn link_and_evolve(
    run: &Pipeline<'_>,
    add: Add<'_>,
    log: &mut CallLog,
    plan: &mut NotePlan,
) -> Result<()> {
    let now = chrono::Utc::now();
    let mut evolved = Evolved::new();
    let Add {
        input,
        fields,
        rule_keywords,
        suffixes,
        vectors,
        speakers,
        found,
    } = add;
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
        let links = match run.chat {
            Some(chat) => {
                let new = (m.content.as_str(), &f);
                model_links((chat, run.cfg), input, new, &near, &mut evolved, log, plan)?
            }
            None => {
                let rules = RuleLinks {
                    near: &near,
                    by_name: &by_name,
                    vector,
                    vectors,
                    speakers,
                };
                rule_links(run, input, (i, m), &rules, plan)
            }
        };
        plan.links.extend(
            links
                .into_iter()
                .map(|(to, strength, author, reason)| Link {
                    from: id,
                    to,
                    kind: LinkKind::Related,
                    strength,
                    author,
                    created_at: now,
                    reason,
                }),
        );
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
            event_time: crate::pipeline::event_time::of_message(
                m,
                &crate::time::TaggerOptions::default(),
            ),
        });
    }
    plan.evolutions.extend(embed_evolutions(run, evolved, log)?);
    Ok(())
}

/// A link from the new note: (to, strength, author, reason).
type NewLink = (MemoryId, f32, Author, Option<String>);

/// The model's links for the new note `(text, fields)`: one `evolve` call over its nearest
/// notes (as earlier notes of the add changed them); the neighbours it changes go to `evolved`.
fn model_links(
    (chat, cfg): (&dyn ChatModel, &InferConfig),
    input: &NotesInput<'_>,
    (text, fields): (&str, &NoteFields),
    near: &[(f32, Memory)],
    evolved: &mut Evolved,
    log: &mut CallLog,
    plan: &mut NotePlan,
) -> Result<Vec<NewLink>> {
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
    let shown = Shown {
        text,
        fields,
        table: &table,
    };
    let decided = evolve(chat, cfg, input, shown, log, &mut plan.warnings)?;
    for (n, new, reason) in decided.updates {
        let old = &table[n];
        evolved.insert(old.id, (old.clone(), new, reason));
    }
    Ok(decided
        .links
        .into_iter()
        .map(|(n, strength, reason)| (table[n].id, strength, Author::Model, reason))
        .collect())
}

/// What the link rules read for one new note.
struct RuleLinks<'a> {
    /// Its nearest notes of the scope, (cosine, record).
    near: &'a [(f32, Memory)],
    /// Notes sharing a rare name with it, (informativeness, record).
    by_name: &'a [(f32, Memory)],
    vector: &'a [f32],
    /// Every note of the add's vectors (earlier ones are candidates too).
    vectors: &'a [Vec<f32>],
    speakers: (&'a SpeakerPool, usize),
}

/// The rule links of note `i` (message `m`) of the add: similarity to its nearest notes and to
/// earlier notes of the add, shared rare names, the speaker rule; the strongest
/// `max_rule_links`.
fn rule_links(
    run: &Pipeline<'_>,
    input: &NotesInput<'_>,
    (i, m): (usize, &Message),
    rules: &RuleLinks<'_>,
    plan: &NotePlan,
) -> Vec<NewLink> {
    let notes_cfg = run.notes_cfg;
    let mut links: HashMap<MemoryId, (f32, String)> = HashMap::new();
    for (score, n) in rules.near {
        if *score >= notes_cfg.link_similarity {
            links.insert(n.id, (*score, format!("similarity {score:.2}")));
        }
    }
    // Earlier notes of the same add: by similarity, unless a conversation window already ties
    // them (their vectors share turns, so similarity says nothing).
    if input.window.is_none() {
        for (j, earlier) in plan.memories.iter().enumerate() {
            let score = cosine(rules.vector, &rules.vectors[j]);
            if score >= notes_cfg.link_similarity {
                links.insert(earlier.id, (score, format!("similarity {score:.2}")));
            }
        }
    }
    for (score, n) in rules.by_name {
        let e = links.entry(n.id).or_insert((0.0, String::new()));
        if *score > e.0 {
            *e = (*score, format!("shares a rare name (weight {score:.2})"));
        }
    }
    let (speakers, input_at) = rules.speakers;
    speakers.links(input_at, i, m, notes_cfg, &mut links);
    let mut links: Vec<(MemoryId, (f32, String))> = links.into_iter().collect();
    links.sort_by(|a, b| b.1 .0.total_cmp(&a.1 .0).then(a.0.cmp(&b.0)));
    links.truncate(notes_cfg.max_rule_links);
    links
        .into_iter()
        .map(|(to, (strength, reason))| (to, strength.clamp(0.0, 1.0), Author::Rule, Some(reason)))
        .collect()
}

/// The changed neighbours' new enriched texts, embedded in one batch.
fn embed_evolutions(
    run: &Pipeline<'_>,
    evolved: Evolved,
    log: &mut CallLog,
) -> Result<Vec<Evolution>> {
    if evolved.is_empty() {
        return Ok(Vec::new());
    }
    let texts: Vec<String> = evolved
        .values()
        .map(|(old, f, _)| note::enriched_text(&old.text, f))
        .collect();
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let vectors = log.embed(run.embedder, &refs)?;
    Ok(evolved
        .into_iter()
        .zip(texts)
        .zip(vectors)
        .map(|(((id, (_, f, reason)), text), vector)| Evolution {
            id,
            note: f,
            index_text: text,
            vector,
            reason,
        })
        .collect())
}
