//! Step 3's store reads: per new note, its nearest notes and (rule mode) the notes sharing its
//! rare names and the speaker rule's lexical candidates, looked up several notes at a time on
//! rayon's threads; then what they found loaded once for the call.

use super::speaker::{self, SpeakerPool};
use super::{note_query, NotesInput, Pipeline};
use crate::error::Result;
use crate::memory::*;
use crate::note::NoteConfig;
use crate::scope::Scope;
use crate::store::{EntityQuery, Store};
use std::collections::HashMap;

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
pub(super) struct Found {
    /// (cosine, record), nearest first.
    pub near: Vec<(f32, Memory)>,
    /// (the shared name's informativeness, record).
    pub by_name: Vec<(f32, Memory)>,
    pub entities: Vec<crate::entity::EntityMention>,
}

/// Every note's store reads (one per note of `inputs`, embedded as `vectors`), several notes at
/// a time (rayon keeps the order), then their records loaded.
pub(super) fn find(
    run: &Pipeline<'_>,
    inputs: &[NotesInput<'_>],
    vectors: &[Vec<f32>],
) -> Result<(Vec<Found>, SpeakerPool)> {
    let jobs: Vec<(&Scope, &Message, &[f32])> = inputs
        .iter()
        .flat_map(|input| input.messages.iter().map(move |m| (input.scope, m)))
        .zip(vectors)
        .map(|((scope, m), v)| (scope, m, v.as_slice()))
        .collect();
    let (store, notes_cfg, rules) = (run.store, run.notes_cfg, run.chat.is_none());
    let run_all = || {
        use rayon::prelude::*;
        jobs.par_iter()
            .map(|(scope, m, v)| lookups(store, notes_cfg, scope, (m, v), rules))
            .collect::<Result<Vec<_>>>()
    };
    // Core's own pool (rebuilt after a fork, see `parallel`); rayon's global one otherwise.
    let found = match crate::parallel::pool() {
        Some(pool) => pool.install(run_all)?,
        None => run_all()?,
    };
    load(store, inputs, found)
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

/// The store reads of one new note (`m`, embedded as `vector`) for linking it.
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
            .entity_candidates(&EntityQuery {
                query: eq,
                names: &names,
                pooled: &pooled,
            })?
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
