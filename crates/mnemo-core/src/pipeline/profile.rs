//! Long-term memory: a user's unanalysed pages and current profile → one model call → the
//! updated profile, user knowledge and assistant knowledge, planned as one write.
//!
//! - The model sees the pages' messages numbered `[1]..`, the current profile, and the stored
//!   knowledge nearest to the pages numbered `K1..`; numbers are mapped back to ids here, and a
//!   number it was not shown is dropped with a warning.
//! - The model names only new or changed dimensions; the rest of the current profile is kept,
//!   and a changed dimension keeps its earlier evidence beside the new (a profile grows its
//!   provenance). When the document changes, a new `profile` memory supersedes the current
//!   one with the model's reason; an unchanged document writes nothing.
//! - Knowledge statements become `knowledge` memories with the cited messages as sources:
//!   user knowledge in the user's scope, assistant knowledge in the assistant scope the caller
//!   names. They are reconciled like facts: an exact repeat of a memory of that scope, or a
//!   near repeat (cosine ≥ `near_duplicate` with the same numbers and names) of its knowledge,
//!   is skipped; `replaces` supersedes a shown statement of the same scope.
//! - Every page analysed is marked in the same write ([`ProfilePlan::batches`]); nothing is
//!   planned when the call or its answer fails, so the pages stay unanalysed for a retry.

use super::knowledge::{is_assistant_knowledge, knowledge, known_knowledge};
use super::profile_answer::{parse, Answer, Statement};
use super::prompts::PROFILE_SYSTEM;
use super::{model_json, render_message, CallLog};
use crate::chat::{ChatMessage, ChatModel, ChatRequest};
use crate::embed::Embedder;
use crate::entity::extract_entities;
use crate::error::{Error, Result};
use crate::memory::*;
use crate::profile::{same_name, Dimension, Profile};
use crate::scope::Scope;
use crate::store::{Store, Supersession, WriteBatch};
use crate::tier::StoredPage;
use std::collections::{HashMap, HashSet};

pub use super::knowledge::KNOWLEDGE_KEY;

/// Settings of profile analysis. Defaults are the documented ones.
#[derive(Debug, Clone, PartialEq)]
pub struct ProfileConfig {
    /// Stored knowledge statements nearest to the pages, shown for reconciliation.
    pub known_knowledge: usize,
    /// Cosine similarity at or above which a statement with the same numbers and names as a
    /// stored knowledge statement of its scope is a repeat (skipped without a write).
    pub near_duplicate: f32,
    /// Page tokens one call reads; the facade splits a larger backlog into several calls (a
    /// single page larger than this still goes alone).
    pub max_page_tokens: u64,
    /// Upper bound on the tokens the model may answer with.
    pub max_tokens: u32,
}

impl Default for ProfileConfig {
    fn default() -> Self {
        Self {
            known_knowledge: 20,
            near_duplicate: 0.95,
            max_page_tokens: 6000,
            max_tokens: 2048,
        }
    }
}

/// One analysis, as the facade hands it over.
pub struct ProfileInput<'a> {
    /// The user's scope (a user id only): the profile and user knowledge are written here.
    pub user: &'a Scope,
    /// Where assistant knowledge is written: the user's scope with an agent id, or the user's
    /// scope itself when no agent is named.
    pub assistant: &'a Scope,
    /// The pages to analyse, oldest first (each owned by a scope `user` covers).
    pub pages: &'a [StoredPage],
    /// The pages' messages (a page whose messages are missing is shown from its text, unnumbered).
    pub messages: &'a [Message],
    /// The current profile memory, if any.
    pub current: Option<&'a Memory>,
    pub instructions: Option<&'a str>,
    /// The analysis time: the new profile's creation and the old one's end of validity.
    pub now: Timestamp,
}

/// What one analysis decided.
#[derive(Debug, Clone, Default)]
pub struct ProfilePlan {
    pub memories: Vec<NewMemory>,
    pub changes: Vec<Supersession>,
    /// Pages to mark analysed, with the exact scope that owns each.
    pub analysed: Vec<(Scope, PageId)>,
    /// The profile document after the write (`None`: the user has none).
    pub profile: Option<Profile>,
    /// The new profile memory, when the document changed.
    pub profile_id: Option<MemoryId>,
    /// The model's reason for the profile change.
    pub reason: Option<String>,
    pub warnings: Vec<String>,
}

impl ProfilePlan {
    /// The plan as write batches, one per scope it touches (the user's first), to be written
    /// together in one [`crate::RecordWrites::write`] call, i.e. one transaction.
    pub fn batches(self, user: &Scope, context: &WritePlan) -> Vec<WriteBatch> {
        let mut batches: Vec<WriteBatch> =
            vec![WriteBatch::new(user.clone(), Vec::new(), Vec::new())];
        fn slot<'b>(batches: &'b mut Vec<WriteBatch>, scope: &Scope) -> &'b mut WriteBatch {
            let i = match batches.iter().position(|b| b.scope == *scope) {
                Some(i) => i,
                None => {
                    batches.push(WriteBatch::new(scope.clone(), Vec::new(), Vec::new()));
                    batches.len() - 1
                }
            };
            &mut batches[i]
        }
        let scope_of: HashMap<MemoryId, Scope> = self
            .memories
            .iter()
            .map(|m| (m.id, m.scope.clone()))
            .collect();
        for c in self.changes {
            // A supersession goes with its successor; a retirement without one is the profile's.
            let scope = c.by.and_then(|b| scope_of.get(&b)).unwrap_or(user).clone();
            slot(&mut batches, &scope).changes.push(c);
        }
        for m in self.memories {
            let scope = m.scope.clone();
            slot(&mut batches, &scope).memories.push(m);
        }
        for (scope, page) in self.analysed {
            slot(&mut batches, &scope).tiers.analysed.push(page);
        }
        for b in &mut batches {
            b.context = context.clone();
        }
        batches
    }
}

/// Runs one analysis. Model calls are recorded in `log` even when it fails.
pub fn profile(
    store: &dyn Store,
    embedder: &dyn Embedder,
    chat: &dyn ChatModel,
    cfg: &ProfileConfig,
    input: &ProfileInput<'_>,
    log: &mut CallLog,
) -> Result<ProfilePlan> {
    let current_doc = input.current.and_then(Profile::from_memory);
    let mut plan = ProfilePlan {
        profile: current_doc.clone(),
        ..ProfilePlan::default()
    };
    if input.user.user_id().is_none()
        || input.user.agent_id().is_some()
        || input.user.run_id().is_some()
    {
        return Err(Error::invalid(
            "user_id",
            "a profile belongs to a user scope (a user id alone)",
        ));
    }
    if input.pages.is_empty() {
        return Ok(plan);
    }
    let by_id: HashMap<MessageId, &Message> = input.messages.iter().map(|m| (m.id, m)).collect();
    let mut shown: Vec<&Message> = Vec::new();
    let mut pages_text = String::new();
    for (i, page) in input.pages.iter().enumerate() {
        let session = page.session_id.as_deref().unwrap_or("none");
        pages_text.push_str(&format!("Page {} (session {session}):\n", i + 1));
        let found: Vec<&Message> = page
            .message_ids
            .iter()
            .filter_map(|id| by_id.get(id).copied())
            .collect();
        if found.is_empty() {
            for line in page.text.lines() {
                pages_text.push_str(&format!("- {line}\n"));
            }
        }
        for m in found {
            shown.push(m);
            pages_text.push_str(&render_message(Some(shown.len()), m));
            pages_text.push('\n');
        }
        plan.analysed.push((page.scope.clone(), page.id));
    }
    let known = known_knowledge(store, embedder, cfg, input, log)?;
    let mut user = String::from("CURRENT profile:\n");
    match &current_doc {
        Some(p) if !p.is_empty() => p
            .dimensions
            .iter()
            .for_each(|d| user.push_str(&format!("- {}: {}\n", d.name, d.value))),
        _ => user.push_str("(none yet)\n"),
    }
    if !known.is_empty() {
        user.push_str("\nKNOWN knowledge:\n");
        for (i, m) in known.iter().enumerate() {
            let about = if is_assistant_knowledge(m) {
                "what the assistant did"
            } else {
                "about the user"
            };
            user.push_str(&format!("K{} ({about}): {}\n", i + 1, m.text));
        }
    }
    user.push_str("\nNEW pages:\n");
    user.push_str(&pages_text);
    if let Some(extra) = input.instructions {
        user.push_str(&format!("\nAdditional instructions: {extra}\n"));
    }
    let req = ChatRequest {
        messages: vec![ChatMessage::system(PROFILE_SYSTEM), ChatMessage::user(user)],
        max_tokens: Some(cfg.max_tokens),
        temperature: Some(0.0),
        json: true,
    };
    let answer = log.chat(chat, "profile", &req)?;
    let value = model_json(chat, "profile", &answer.content)?;
    let answer = parse(chat, &value, shown.len(), known.len(), &mut plan.warnings)?;
    apply(
        store, embedder, cfg, input, &shown, &known, answer, log, &mut plan,
    )?;
    Ok(plan)
}

/// The merged profile document and whether it differs from `current`.
pub(crate) fn merge(
    current: &Profile,
    answer: &Answer,
    ids: &[MessageId],
    warnings: &mut Vec<String>,
) -> Profile {
    let mut doc = current.clone();
    for d in &answer.dimensions {
        let cited: Vec<MessageId> = d
            .messages
            .iter()
            .filter_map(|i| ids.get(*i).copied())
            .collect();
        match doc
            .dimensions
            .iter_mut()
            .find(|x| same_name(&x.name, &d.name))
        {
            Some(x) => {
                x.value = d.value.clone();
                for id in cited {
                    if !x.message_ids.contains(&id) {
                        x.message_ids.push(id);
                    }
                }
            }
            None => doc.dimensions.push(Dimension {
                name: d.name.trim().to_string(),
                value: d.value.clone(),
                message_ids: cited,
            }),
        }
    }
    for name in &answer.removed {
        let before = doc.dimensions.len();
        doc.dimensions.retain(|d| !same_name(&d.name, name));
        if doc.dimensions.len() == before {
            warnings.push(format!(
                "removal of unknown profile dimension {name:?} ignored"
            ));
        }
    }
    doc
}

#[expect(
    clippy::too_many_arguments,
    reason = "each input is a separate part of the step; a context struct is the planned fix"
)]
fn apply(
    store: &dyn Store,
    embedder: &dyn Embedder,
    cfg: &ProfileConfig,
    input: &ProfileInput<'_>,
    shown: &[&Message],
    known: &[Memory],
    answer: Answer,
    log: &mut CallLog,
    plan: &mut ProfilePlan,
) -> Result<()> {
    let ids: Vec<MessageId> = shown.iter().map(|m| m.id).collect();
    let current = plan.profile.clone().unwrap_or_default();
    let doc = merge(&current, &answer, &ids, &mut plan.warnings);
    let changed = doc != current;
    let reason = answer
        .reason
        .clone()
        .or_else(|| Some(format!("analysis of {} pages", input.pages.len())));
    // Statements to write: (scope, which, statement), repeats within the answer dropped.
    let mut seen = HashSet::new();
    let mut staged: Vec<(&Scope, &str, Statement)> = Vec::new();
    for (scope, which, list) in [
        (input.user, "user", answer.user),
        (input.assistant, "assistant", answer.assistant),
    ] {
        for s in list {
            if seen.insert((scope.key(), content_hash(&s.text))) {
                staged.push((scope, which, s));
            } else {
                plan.warnings.push(format!(
                    "{which} knowledge {:?} repeated in one answer; kept once",
                    s.text
                ));
            }
        }
    }
    let write_profile = changed && !doc.is_empty();
    let mut texts: Vec<String> = staged.iter().map(|(_, _, s)| s.text.clone()).collect();
    if write_profile {
        texts.push(doc.render());
    }
    let mut vectors = if texts.is_empty() {
        Vec::new()
    } else {
        let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
        log.embed(embedder, &refs)?
    };
    let profile_vector = if write_profile { vectors.pop() } else { None };
    if changed {
        plan.reason.clone_from(&reason);
        match (profile_vector, input.current) {
            (Some(vector), current) => {
                let id = MemoryId::new();
                plan.memories.push(NewMemory {
                    id,
                    scope: input.user.clone(),
                    kind: MemoryKind::Profile,
                    text: doc.render(),
                    index_text: None,
                    metadata: doc.metadata(),
                    created_at: input.now,
                    expires_at: None,
                    valid_from: Some(input.now),
                    actor: None,
                    role: None,
                    vector,
                    sources: doc.sources(),
                    entities: extract_entities(&doc.render()),
                    reason: reason.clone(),
                    note: None,
                    event_time: None,
                });
                if let Some(old) = current {
                    plan.changes
                        .push(retire(old.id, Some(id), input.now, reason.clone()));
                }
                plan.profile_id = Some(id);
                plan.profile = Some(doc);
            }
            // Every dimension removed: the profile is retired, not replaced by an empty one.
            (None, Some(old)) => {
                plan.changes
                    .push(retire(old.id, None, input.now, reason.clone()));
                plan.profile = None;
            }
            (None, None) => {}
        }
    }
    knowledge(store, cfg, input, shown, known, staged, vectors, plan)
}

pub(crate) fn retire(
    old: MemoryId,
    by: Option<MemoryId>,
    at: Timestamp,
    reason: Option<String>,
) -> Supersession {
    Supersession {
        old,
        by,
        state: if by.is_some() {
            MemoryState::Superseded
        } else {
            MemoryState::Deleted
        },
        valid_until: at,
        reason,
    }
}

#[cfg(test)]
mod tests {
    use super::super::profile_answer::DimensionAnswer;
    use super::*;

    fn dim(name: &str, value: &str, ids: Vec<MessageId>) -> Dimension {
        Dimension {
            name: name.into(),
            value: value.into(),
            message_ids: ids,
        }
    }

    #[test]
    fn merge_keeps_unmentioned_dimensions_and_grows_the_evidence_of_changed_ones() {
        let (old, a, b) = (MessageId::new(), MessageId::new(), MessageId::new());
        let current = Profile {
            dimensions: vec![
                dim("Hobbies", "hiking", vec![old]),
                dim("diet", "vegan", vec![old]),
                dim("work", "nurse", vec![]),
            ],
        };
        let answer = Answer {
            dimensions: vec![
                DimensionAnswer {
                    name: "hobbies ".into(),
                    value: "hiking, chess".into(),
                    messages: vec![1],
                },
                DimensionAnswer {
                    name: "pets".into(),
                    value: "a dog".into(),
                    messages: vec![0, 1],
                },
            ],
            removed: vec!["DIET".into(), "zodiac".into()],
            ..Answer::default()
        };
        let mut w = Vec::new();
        let doc = merge(&current, &answer, &[a, b], &mut w);
        assert_eq!(
            doc.render(),
            "Hobbies: hiking, chess\nwork: nurse\npets: a dog"
        );
        assert_eq!(doc.get("hobbies").unwrap().message_ids, vec![old, b]);
        assert_eq!(doc.get("pets").unwrap().message_ids, vec![a, b]);
        assert_eq!(w.len(), 1);
        assert!(w[0].contains("zodiac"), "{w:?}");
        assert_eq!(
            merge(&current, &Answer::default(), &[a], &mut w),
            current,
            "no change"
        );
    }

    #[test]
    fn batches_group_the_plan_by_scope_with_supersessions_beside_their_successors() {
        let user = Scope::user("u").unwrap();
        let agent = Scope::from_parts(Some("u"), Some("bot"), None).unwrap();
        let memory = |scope: &Scope, kind| NewMemory {
            id: MemoryId::new(),
            scope: scope.clone(),
            kind,
            text: "t".into(),
            index_text: None,
            metadata: Metadata::new(),
            created_at: chrono::Utc::now(),
            expires_at: None,
            valid_from: None,
            actor: None,
            role: None,
            vector: vec![1.0],
            sources: Vec::new(),
            entities: Vec::new(),
            reason: None,
            note: None,
            event_time: None,
        };
        let (p, k) = (
            memory(&user, MemoryKind::Profile),
            memory(&agent, MemoryKind::Knowledge),
        );
        let now = chrono::Utc::now();
        let (old_p, old_k) = (MemoryId::new(), MemoryId::new());
        let (page_u, page_a) = (PageId::new(), PageId::new());
        let plan = ProfilePlan {
            changes: vec![
                retire(old_k, Some(k.id), now, None),
                retire(old_p, Some(p.id), now, Some("moved".into())),
            ],
            memories: vec![p, k],
            analysed: vec![(agent.clone(), page_a), (user.clone(), page_u)],
            ..ProfilePlan::default()
        };
        let ctx = WritePlan {
            request_id: Some("r1".into()),
            ..WritePlan::default()
        };
        let batches = plan.batches(&user, &ctx);
        assert_eq!(batches.len(), 2);
        assert_eq!(batches[0].scope, user);
        assert_eq!(batches[0].changes[0].old, old_p);
        assert_eq!(batches[0].memories[0].kind, MemoryKind::Profile);
        assert_eq!(batches[0].tiers.analysed, vec![page_u]);
        assert_eq!(batches[1].scope, agent);
        assert_eq!(batches[1].changes[0].old, old_k);
        assert_eq!(batches[1].tiers.analysed, vec![page_a]);
        assert!(batches
            .iter()
            .all(|b| b.context.request_id.as_deref() == Some("r1")));
    }
}
