//! The speaker-and-subject link rule ([`note::speaker_topic_links`]) for every note of one
//! `notes_many` call at once.
//!
//! Each new note's words find earlier notes through the lexical index (`speaker_link_pool` of
//! them); those of the same speaker that share a rare word with it are linked. The rule reads
//! only a candidate's id, speaker and topic words, and the notes of one call draw largely on
//! the same earlier notes. So the candidates are looked up note by note, but loaded once per
//! scope for the whole call (with the union of the note pipeline's other lookups, see
//! `notes::load`) and each one's words are worked out once, where loading every note's pool on
//! its own repeated both for most candidates. The lookups themselves run with the note
//! pipeline's other store reads, several notes at a time.
//!
//! The links are the same as with a load per note: a loaded row does not depend on which
//! other keys are loaded with it, the rule does not depend on the order of its candidates,
//! and the call plans against the store as it was before it. Earlier notes of the same add are
//! not in the store yet, so a conversation's session never links to itself this way (its turns
//! share a window anyway).

use super::{note_query, NotesInput};
use crate::error::Result;
use crate::memory::{Memory, MemoryId, Message};
use crate::note::{self, NoteConfig};
use crate::scope::Scope;
use crate::store::Store;
use std::collections::{HashMap, HashSet};

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

impl Lookup {
    /// The candidates' store keys.
    pub(super) fn keys(&self) -> impl Iterator<Item = i64> + '_ {
        self.keys.iter().copied()
    }
}

/// The rule's candidates for every note of one call, looked up and loaded before linking.
pub(super) struct SpeakerPool {
    /// Per input, per message: `None` where the rule does not apply (no speaker, no words).
    notes: Vec<Vec<Option<Lookup>>>,
    /// Per input: the entry of `loaded` that holds its scope's candidates.
    group: Vec<usize>,
    loaded: Vec<HashMap<i64, Candidate>>,
}

impl SpeakerPool {
    /// The rule's candidates from the records of the call's lookups: `found` holds one
    /// [`lookup`] per message of `inputs`, in order, `group` per input the entry of `loaded`
    /// (records by store key) that holds its scope's.
    pub(super) fn from_loaded(
        inputs: &[NotesInput<'_>],
        found: Vec<Option<Lookup>>,
        group: Vec<usize>,
        loaded: &[HashMap<i64, Memory>],
    ) -> Self {
        let mut pool = Self {
            notes: Vec::with_capacity(inputs.len()),
            group,
            loaded: loaded.iter().map(|_| HashMap::new()).collect(),
        };
        let mut found = found.into_iter();
        for (input, g) in inputs.iter().zip(&pool.group) {
            let per: Vec<Option<Lookup>> = found.by_ref().take(input.messages.len()).collect();
            let (Some(records), Some(words_of)) = (loaded.get(*g), pool.loaded.get_mut(*g)) else {
                pool.notes.push(per);
                continue;
            };
            for key in per.iter().flatten().flat_map(|l| l.keys()) {
                if words_of.contains_key(&key) {
                    continue;
                }
                if let Some(n) = records.get(&key) {
                    let candidate = Candidate {
                        id: n.id,
                        actor: n.actor.clone(),
                        words: note::topic_words(&n.text),
                    };
                    words_of.insert(key, candidate);
                }
            }
            pool.notes.push(per);
        }
        pool
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
