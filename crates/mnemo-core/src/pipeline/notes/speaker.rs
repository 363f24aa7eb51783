//! The speaker-and-subject link rule ([`note::speaker_topic_links`]) for every note of one
//! `notes_many` call at once.
//!
//! Each new note's words find earlier notes through the lexical index (`speaker_link_pool` of
//! them); those of the same speaker that share a rare word with it are linked. The rule reads
//! only a candidate's id, speaker and topic words, and the notes of one call draw largely on
//! the same earlier notes. So the candidates are looked up note by note, but loaded once per
//! scope for the whole call (the union of their keys) and each one's words are worked out
//! once, where loading every note's pool on its own repeated both for most candidates. The
//! lookups themselves run with the note pipeline's other store reads, several notes at a time.
//!
//! The links are the same as with a load per note: a loaded row does not depend on which
//! other keys are loaded with it, the rule does not depend on the order of its candidates,
//! and the call plans against the store as it was before it. Earlier notes of the same add are
//! not in the store yet, so a conversation's session never links to itself this way (its turns
//! share a window anyway).

use super::{note_query, NotesInput};
use crate::error::Result;
use crate::memory::{MemoryId, Message};
use crate::note::{self, NoteConfig};
use crate::scope::Scope;
use crate::store::Store;
use std::collections::{HashMap, HashSet};

/// Keys per `fetch` of a scope's union (bounds one statement's parameters).
const FETCH_CHUNK: usize = 500;

/// What the rule reads of a candidate.
struct Candidate {
    id: MemoryId,
    actor: Option<String>,
    words: HashSet<String>,
}

/// One new note's part: its topic words and its candidates' keys, best first.
pub(super) struct Lookup {
    words: HashSet<String>,
    keys: Vec<i64>,
}

/// The rule's candidates for every note of one call, looked up and loaded before linking.
#[derive(Default)]
pub(super) struct SpeakerPool {
    /// Per input, per message: `None` where the rule does not apply (no speaker, no words).
    notes: Vec<Vec<Option<Lookup>>>,
    /// Per input: the entry of `loaded` that holds its scope's candidates.
    group: Vec<usize>,
    loaded: Vec<HashMap<i64, Candidate>>,
}

impl SpeakerPool {
    /// Loads, per scope, the union of the candidates `found` names: one [`lookup`] per message
    /// of `inputs`, in order (the note pipeline looks them up with its other store reads).
    pub(super) fn gather(
        store: &dyn Store,
        cfg: &NoteConfig,
        inputs: &[NotesInput<'_>],
        found: Vec<Option<Lookup>>,
    ) -> Result<Self> {
        let mut pool = Self::default();
        let mut found = found.into_iter();
        let mut scopes: Vec<(&Scope, Vec<i64>)> = Vec::new();
        for input in inputs {
            let at = match scopes.iter().position(|(s, _)| *s == input.scope) {
                Some(at) => at,
                None => {
                    scopes.push((input.scope, Vec::new()));
                    scopes.len() - 1
                }
            };
            pool.group.push(at);
            let per: Vec<Option<Lookup>> = found.by_ref().take(input.messages.len()).collect();
            for l in per.iter().flatten() {
                scopes[at].1.extend(&l.keys);
            }
            pool.notes.push(per);
        }
        for (scope, mut keys) in scopes {
            keys.sort_unstable();
            keys.dedup();
            let q = note_query(scope, cfg.speaker_link_pool);
            let mut loaded = HashMap::with_capacity(keys.len());
            for chunk in keys.chunks(FETCH_CHUNK) {
                for (key, n) in store.fetch(&q, chunk)? {
                    let words = note::topic_words(&n.text);
                    loaded.insert(
                        key,
                        Candidate {
                            id: n.id,
                            actor: n.actor,
                            words,
                        },
                    );
                }
            }
            pool.loaded.push(loaded);
        }
        Ok(pool)
    }

    /// Adds the rule's links of message `i` (`m`) of input `input` to `links`, keeping the
    /// stronger of two reasons for one note.
    pub(super) fn links(
        &self,
        input: usize,
        i: usize,
        m: &Message,
        cfg: &NoteConfig,
        links: &mut HashMap<MemoryId, (f32, String)>,
    ) {
        let (Some(speaker), Some(Some(l))) = (
            m.name.as_deref(),
            self.notes.get(input).and_then(|per| per.get(i)),
        ) else {
            return;
        };
        let Some(loaded) = self.group.get(input).and_then(|g| self.loaded.get(*g)) else {
            return;
        };
        let found: Vec<&Candidate> = l.keys.iter().filter_map(|k| loaded.get(k)).collect();
        let candidates: Vec<(bool, &HashSet<String>)> = found
            .iter()
            .map(|c| (c.actor.as_deref() == Some(speaker), &c.words))
            .collect();
        let linked = note::speaker_topic_links(&l.words, &candidates, cfg.speaker_link_df);
        for (at, strength, shared) in linked {
            let e = links.entry(found[at].id).or_insert((0.0, String::new()));
            if strength > e.0 {
                *e = (
                    strength,
                    format!("same speaker, shares rare words: {}", shared.join(", ")),
                );
            }
        }
    }
}

/// The lexical candidates of one new note, or `None` where the rule does not apply.
pub(super) fn lookup(
    store: &dyn Store,
    scope: &Scope,
    cfg: &NoteConfig,
    m: &Message,
) -> Result<Option<Lookup>> {
    if m.name.is_none() || cfg.speaker_link_df == 0 || cfg.speaker_link_pool == 0 {
        return Ok(None);
    }
    let words = note::topic_words(&m.content);
    if words.is_empty() {
        return Ok(None);
    }
    let mut terms: Vec<String> = crate::text::query_terms(&m.content);
    terms.retain(|t| t.chars().count() >= 4);
    if terms.is_empty() {
        return Ok(None);
    }
    let q = note_query(scope, cfg.speaker_link_pool);
    let keys = store
        .lexical_candidates(&q, &terms)?
        .iter()
        .map(|c| c.key)
        .collect();
    Ok(Some(Lookup { words, keys }))
}
