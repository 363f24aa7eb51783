//! Knowledge statements of a profile analysis: the stored knowledge shown to the model for
//! reconciliation, and the statements of its answer turned into `knowledge` memories. A
//! statement that exactly repeats a memory of its scope, or nearly repeats (cosine at or above
//! the threshold, with the same numbers and names) a knowledge memory of its scope, is skipped
//! with a warning; `replaces` supersedes a shown statement of the same scope, once.

use super::profile::{retire, ProfileConfig, ProfileInput, ProfilePlan};
use super::profile_answer::Statement;
use super::CallLog;
use crate::embed::Embedder;
use crate::entity::extract_entities;
use crate::error::Result;
use crate::memory::*;
use crate::scope::Scope;
use crate::store::{CandidateQuery, ReadOptions, Store};
use std::collections::{HashMap, HashSet};

/// The metadata key that tells user knowledge (`user`) from assistant knowledge (`assistant`).
pub const KNOWLEDGE_KEY: &str = "knowledge";

pub(crate) fn is_assistant_knowledge(m: &Memory) -> bool {
    m.metadata.get(KNOWLEDGE_KEY).and_then(|v| v.as_str()) == Some("assistant")
}

/// Stored knowledge of the user and assistant scopes nearest to the pages, nearest first.
pub(crate) fn known_knowledge(
    store: &dyn Store,
    embedder: &dyn Embedder,
    cfg: &ProfileConfig,
    input: &ProfileInput<'_>,
    log: &mut CallLog,
) -> Result<Vec<Memory>> {
    if cfg.known_knowledge == 0 {
        return Ok(Vec::new());
    }
    let dim = embedder.dimension();
    let mut query = vec![0.0f32; dim];
    let mut any = false;
    for p in input.pages.iter().filter(|p| p.vector.len() == dim) {
        query.iter_mut().zip(&p.vector).for_each(|(q, v)| *q += v);
        any = true;
    }
    if !any {
        let joined: Vec<&str> = input.pages.iter().map(|p| p.text.as_str()).collect();
        let joined = joined.join("\n");
        let text = crate::limits::truncate_chars(&joined, crate::limits::MAX_QUERY_CHARS);
        query = log.embed(embedder, &[text])?.remove(0);
    }
    crate::embed::l2_normalize(&mut query);
    let kinds = [MemoryKind::Knowledge];
    let cq = CandidateQuery {
        scope: input.user,
        kinds: Some(&kinds),
        filter: None,
        read: ReadOptions::default(),
        limit: cfg.known_knowledge,
    };
    let near = store.dense_candidates(&cq, &query)?;
    let keys: Vec<i64> = near.iter().map(|c| c.key).collect();
    let mut fetched: HashMap<i64, Memory> = store.fetch(&cq, &keys)?.into_iter().collect();
    Ok(keys
        .iter()
        .filter_map(|k| fetched.remove(k))
        .filter(|m| {
            m.scope()
                .is_ok_and(|s| s == *input.user || s == *input.assistant)
        })
        .collect())
}

#[expect(
    clippy::too_many_arguments,
    reason = "each input is a separate part of the step; a context struct is the planned fix"
)]
pub(crate) fn knowledge(
    store: &dyn Store,
    cfg: &ProfileConfig,
    input: &ProfileInput<'_>,
    shown: &[&Message],
    known: &[Memory],
    staged: Vec<(&Scope, &str, Statement)>,
    vectors: Vec<Vec<f32>>,
    plan: &mut ProfilePlan,
) -> Result<()> {
    let newest_page = input.pages.iter().map(|p| p.at).max().unwrap_or(input.now);
    let mut stored: HashSet<(String, String)> = HashSet::new();
    for scope in [input.user, input.assistant] {
        let hashes: Vec<String> = staged
            .iter()
            .filter(|(s, ..)| *s == scope)
            .map(|(_, _, st)| content_hash(&st.text))
            .collect();
        if !hashes.is_empty() {
            for (h, _) in store.find_by_hash(scope, &hashes)? {
                stored.insert((scope.key(), h));
            }
        }
    }
    let kinds = [MemoryKind::Knowledge];
    let mut replaced: HashSet<usize> = HashSet::new();
    for ((scope, which, s), vector) in staged.into_iter().zip(vectors) {
        if stored.contains(&(scope.key(), content_hash(&s.text))) {
            plan.warnings.push(format!(
                "{which} knowledge {:?} is already stored; skipped",
                s.text
            ));
            continue;
        }
        let cq = CandidateQuery {
            scope,
            kinds: Some(&kinds),
            filter: None,
            read: ReadOptions::default(),
            limit: 3,
        };
        let near = store.dense_candidates(&cq, &vector)?;
        let close: Vec<i64> = near
            .iter()
            .filter(|c| c.score >= cfg.near_duplicate)
            .map(|c| c.key)
            .collect();
        let repeat = store
            .fetch(&cq, &close)?
            .into_iter()
            .map(|(_, m)| m)
            .find(|m| {
                m.scope().is_ok_and(|o| o == *scope)
                    && super::infer::same_particulars(&s.text, &m.text)
            });
        if let Some(m) = repeat {
            plan.warnings.push(format!(
                "{which} knowledge {:?} repeats {:?}; skipped",
                s.text, m.text
            ));
            continue;
        }
        let cited: Vec<&Message> = s
            .messages
            .iter()
            .filter_map(|i| shown.get(*i).copied())
            .collect();
        let at = cited
            .iter()
            .map(|m| m.created_at)
            .max()
            .unwrap_or(newest_page);
        let role = if which == "user" {
            Role::User
        } else {
            Role::Assistant
        };
        let id = MemoryId::new();
        let mut metadata = Metadata::new();
        metadata.insert(KNOWLEDGE_KEY.into(), which.into());
        if let Some(k) = s.replaces {
            let target = &known[k];
            if target.scope().is_ok_and(|o| o == *scope) && replaced.insert(k) {
                plan.changes
                    .push(retire(target.id, Some(id), at, s.reason.clone()));
            } else {
                plan.warnings.push(format!(
                    "{which} knowledge {:?} cannot replace {:?} (another scope, or already replaced); added as new",
                    s.text, target.text
                ));
            }
        }
        plan.memories.push(NewMemory {
            id,
            scope: scope.clone(),
            kind: MemoryKind::Knowledge,
            entities: extract_entities(&s.text),
            text: s.text,
            index_text: None,
            metadata,
            created_at: at,
            expires_at: None,
            valid_from: Some(at),
            actor: cited
                .iter()
                .find(|m| m.role == role)
                .and_then(|m| m.name.clone()),
            role: Some(role),
            vector,
            sources: cited.iter().map(|m| m.id).collect(),
            reason: s.reason,
            note: None,
            event_time: None,
        });
    }
    Ok(())
}
