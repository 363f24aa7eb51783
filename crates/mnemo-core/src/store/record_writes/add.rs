//! What one add writes: the [`WriteBatch`] and its parts (retirements, note evolutions), the
//! checks every backend runs before writing one, and the outcome it reports.

use super::*;

/// Everything one `add` writes, committed together or not at all.
#[derive(Debug, Clone)]
pub struct WriteBatch {
    pub scope: Scope,
    pub messages: Vec<Message>,
    pub memories: Vec<NewMemory>,
    /// Existing memories this add retires (an inferred UPDATE or DELETE).
    pub changes: Vec<Supersession>,
    /// Extra edges between memories (the `supersedes` edges of `changes` are implied). Each end
    /// is a memory of this batch or an existing memory of exactly the batch's scope.
    pub links: Vec<Link>,
    /// Existing notes of the batch's scope whose fields change (note evolution).
    pub evolutions: Vec<Evolution>,
    /// The hierarchy's changes (pages, moves, segments, evictions), all of the batch's scope
    /// exactly; see [`crate::tier`].
    pub tiers: crate::tier::TierWrite,
    pub idempotency: Option<Idempotency>,
    pub context: WritePlan,
    /// Relations the batch's memories state, written as edges after them (see
    /// [`write_relations`]).
    pub relations: Vec<NewRelation>,
}

/// A change to an existing note's context and tags, decided while adding another note. The
/// store writes the new fields, replaces the note's lexical entry with `index_text` (the new
/// enriched text; a conversation window that followed the old one is kept, see
/// [`crate::note::reindexed`]) and its vector with `vector` (made from the new enriched text) and records an `EVOLVE` event with the old
/// and new fields and `reason`, in the batch's transaction. The note's text never changes; a
/// note that is no longer active (or not a note) fails the batch.
#[derive(Debug, Clone)]
pub struct Evolution {
    pub id: MemoryId,
    pub note: NoteFields,
    pub index_text: String,
    pub vector: Vec<f32>,
    pub reason: Option<String>,
}

/// A vector's shape: `dim` finite numbers.
pub fn check_vector(field: &str, v: &[f32], dim: usize) -> Result<()> {
    if v.len() != dim {
        return Err(crate::Error::invalid(
            field,
            format!("has {} dimensions, the store holds {dim}", v.len()),
        ));
    }
    if v.iter().any(|x| !x.is_finite()) {
        return Err(crate::Error::invalid(field, "contains a non-finite value"));
    }
    Ok(())
}

impl WriteBatch {
    /// What every backend checks before writing a batch, without reading the store: the scope
    /// is valid; every memory, page and segment carries the batch's scope; vectors have the
    /// store's dimension `dim` (when the store has one) and finite values; a superseding memory
    /// is written by the same batch; links and new pages are well-formed. The error names the
    /// field. Checks that need the store (both ends of a link exist, a retired memory is still
    /// active, snapshot versions) are the backend's, inside its transaction.
    pub fn validate(&self, dim: Option<usize>) -> Result<()> {
        use crate::Error;
        for m in &self.memories {
            if m.scope != self.scope {
                return Err(Error::invalid(
                    "scope",
                    "every memory of a batch must carry the batch's scope",
                ));
            }
            if let Some(d) = dim {
                check_vector("vector", &m.vector, d)?;
            }
        }
        for c in &self.changes {
            if let Some(by) = c.by {
                if !self.memories.iter().any(|m| m.id == by) {
                    return Err(Error::invalid(
                        "changes",
                        "a superseding memory must be written in the same batch",
                    ));
                }
            }
        }
        for l in &self.links {
            l.validate()?;
        }
        if let Some(d) = dim {
            for e in &self.evolutions {
                check_vector("evolutions.vector", &e.vector, d)?;
            }
        }
        self.tiers.validate(&self.scope, dim)
    }

    /// A batch that appends messages and adds memories, with no changes to existing ones.
    pub fn new(scope: Scope, messages: Vec<Message>, memories: Vec<NewMemory>) -> Self {
        Self {
            scope,
            messages,
            memories,
            changes: Vec::new(),
            links: Vec::new(),
            evolutions: Vec::new(),
            tiers: crate::tier::TierWrite::default(),
            idempotency: None,
            context: WritePlan::default(),
            relations: Vec::new(),
        }
    }
}

impl crate::tier::TierWrite {
    /// The hierarchy part of [`WriteBatch::validate`] for a batch of `scope`: every page and
    /// segment carries that scope, every new page names a message, vectors have the store's
    /// dimension `dim` (when it has one) and finite values.
    pub fn validate(&self, scope: &Scope, dim: Option<usize>) -> Result<()> {
        use crate::Error;
        for p in &self.pages {
            if p.scope != *scope {
                return Err(Error::invalid(
                    "pages",
                    "every page of a batch must carry the batch's scope",
                ));
            }
            if p.message_ids.is_empty() {
                return Err(Error::invalid("pages", "a page needs at least one message"));
            }
            if let Some(d) = dim {
                check_vector("pages.vector", &p.vector, d)?;
            }
        }
        for w in &self.segments {
            if w.segment.scope != *scope {
                return Err(Error::invalid(
                    "segments",
                    "every segment of a batch must carry the batch's scope",
                ));
            }
            if let Some(d) = dim {
                check_vector("segments.vector", &w.segment.vector, d)?;
            }
        }
        Ok(())
    }
}

/// Retires an active memory of the batch's scope: it keeps its text, gets `valid_until` and the
/// new state, and history records the reason. With `by`, a `supersedes` link ties the new memory
/// to it. The old memory must still be active when the batch commits, else the batch fails with a
/// conflict (someone changed it since the pipeline read it).
#[derive(Debug, Clone, PartialEq)]
pub struct Supersession {
    pub old: MemoryId,
    /// The memory of the same batch that replaces it; `None` for a deletion.
    pub by: Option<MemoryId>,
    /// `Superseded` or `Deleted`.
    pub state: MemoryState,
    /// When the old fact stopped holding (the message time of the add).
    pub valid_until: Timestamp,
    pub reason: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AddResult {
    pub id: MemoryId,
    pub memory: String,
    /// `ADD`, `UPDATE` (a new memory that supersedes `previous_id`) or `DELETE` (an existing memory
    /// retired; `id` and `memory` are the old one's).
    pub event: HistoryKind,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub previous_memory: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub previous_id: Option<MemoryId>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

impl Supersession {
    /// The `supersedes` edge from the replacing memory to the retired one, made by the model at
    /// `at`; `None` for a deletion (nothing replaces it). Every backend writes this same edge.
    pub fn link(&self, at: Timestamp) -> Option<Link> {
        self.by.map(|by| Link {
            from: by,
            to: self.old,
            kind: LinkKind::Supersedes,
            strength: 1.0,
            author: Author::Model,
            created_at: at,
            reason: self.reason.clone(),
        })
    }
}

impl AddResult {
    /// The outcome of writing `m`: an `UPDATE` of the memory it replaces when one of `retired`
    /// (each retired memory with the change that retired it) names it as successor, else an
    /// `ADD`. One statement so every backend reports a batch the same way.
    pub fn added(m: &NewMemory, retired: &[(Memory, &Supersession)]) -> Self {
        match retired.iter().find(|(_, c)| c.by == Some(m.id)) {
            Some((old, c)) => Self {
                id: m.id,
                memory: m.text.clone(),
                event: HistoryKind::Update,
                previous_memory: Some(old.text.clone()),
                previous_id: Some(old.id),
                reason: c.reason.clone(),
            },
            None => Self {
                id: m.id,
                memory: m.text.clone(),
                event: HistoryKind::Add,
                previous_memory: None,
                previous_id: None,
                reason: m.reason.clone(),
            },
        }
    }

    /// The outcome of retiring `old` with nothing to replace it: a `DELETE` naming the old memory.
    pub fn deleted(old: &Memory, c: &Supersession) -> Self {
        Self {
            id: old.id,
            memory: old.text.clone(),
            event: HistoryKind::Delete,
            previous_memory: None,
            previous_id: None,
            reason: c.reason.clone(),
        }
    }
}

/// One call to a model made while serving a request: what for, how many tokens, how long.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelCall {
    /// `extract`, `reconcile`, `procedural`, `embed`.
    pub purpose: String,
    pub model: String,
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    pub ms: f64,
    /// True when the call failed (its error is the request's error).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub failed: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AddOutcome {
    pub results: Vec<AddResult>,
    /// True when this outcome was returned from an earlier call with the same idempotency key.
    #[serde(default)]
    pub replayed: bool,
    /// Non-fatal notes, e.g. identity keys dropped from metadata.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
    /// Every model call this add made (embedding, extraction, reconciliation).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub usage: Vec<ModelCall>,
    /// The edges of the entity graph this add wrote, supported or closed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub relations: Vec<RelationWrite>,
}
