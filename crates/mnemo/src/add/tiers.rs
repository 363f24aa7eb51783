//! The hierarchy's part of every add: the add's exchanges become pages (with vectors the add
//! already has where it can), and, inside the blocking write, each batch's [`TierWrite`] is
//! planned from a fresh snapshot of the store (`mnemo_core::tier::plan`) and committed in the
//! same transaction as the add's messages and memories.
//!
//! Several adds written together plan one after another against the snapshot as the earlier
//! ones leave it ([`tier::plan::apply`]), so two adds of one session in one batch see each
//! other's pages. When the store refuses the batch with a conflict (another writer moved a
//! page or changed a segment since the snapshot), everything is planned again from a new
//! snapshot, up to [`MAX_ATTEMPTS`] times, after a short random wait ([`backoff`]).
//! Turns keep most of those conflicts from happening: in-process ones per scope
//! (`crate::scope_lock`) and, where the store keeps them, cross-process ones
//! (`Store::plan_turn`; PostgreSQL holds a session advisory lock per exact scope until the
//! write commits). The retries remain for what turns do not cover: an embedded store shared by
//! several processes, and profile analyses.

use mnemo_core::pack::TokenCounter;
use mnemo_core::pipeline::CallLog;
use mnemo_core::tier::plan::{PlanInput, Window};
use mnemo_core::*;
use std::collections::{HashMap, HashSet};
use std::sync::{Arc, OnceLock};

/// Tries of one write when stale snapshots make the store refuse it. Several servers on one
/// shared store race for the same segments of a busy scope; each refusal means another writer
/// committed, so a few more tries (spread by [`backoff`]) let every writer through.
pub(crate) const MAX_ATTEMPTS: usize = 16;

/// How long to wait before planning try `attempt` (2, 3, …) again: a random share of a window
/// that doubles from 4 ms up to 64 ms, so writers that collided do not collide again in step.
/// Runs on the blocking pool, inside the add's blocking work.
pub(crate) fn backoff(attempt: usize) {
    let window_ms = 4u64 << attempt.saturating_sub(2).min(4);
    // Sub-second clock noise is random enough to de-synchronise competing writers.
    let noise = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos() as u64)
        .unwrap_or(0);
    let wait_us = window_ms * 1000 / 2 + noise % (window_ms * 1000 / 2 + 1);
    std::thread::sleep(std::time::Duration::from_micros(wait_us));
}

/// The newest window pages a new page's keywords are judged against: enough to tell a
/// session's recurring words, and a bound on the work when the window is large.
const KEYWORD_NEIGHBOURS: usize = 20;

/// One exchange of an add, before its page is planned.
#[derive(Debug, Clone)]
pub(crate) struct PageDraft {
    pub messages: Vec<Message>,
    pub vector: Vec<f32>,
    /// The page text's tokens, counted when the draft is made: before the scope's write turn,
    /// so that turn holds no per-text work but the keywords.
    pub tokens: u32,
}

/// The exchanges of an add's messages with each page's vector made by `vector_of` from the
/// indexes of its messages.
pub(crate) fn drafts(
    messages: &[Message],
    mut vector_of: impl FnMut(std::ops::Range<usize>) -> Vec<f32>,
) -> Vec<PageDraft> {
    tier::plan::exchanges(messages)
        .into_iter()
        .map(|r| PageDraft {
            messages: messages[r.clone()].to_vec(),
            tokens: count_tokens(&tier::plan::page_text(&messages[r.clone()])),
            vector: vector_of(r),
        })
        .collect()
}

/// The unit-length, length-weighted sum of the given (vector, text) parts: a page's vector
/// from its turns' vectors, as a window's vector is made (no extra embedding).
pub(crate) fn pooled<'a>(parts: impl IntoIterator<Item = (&'a [f32], &'a str)>) -> Vec<f32> {
    let mut out: Vec<f32> = Vec::new();
    for (v, text) in parts {
        if out.is_empty() {
            out = vec![0.0; v.len()];
        }
        let w = text.chars().count().max(1) as f32;
        out.iter_mut().zip(v).for_each(|(o, x)| *o += w * x);
    }
    mnemo_core::embed::l2_normalize(&mut out);
    out
}

/// The token counter of page lengths: cl100k, loaded once per process (the estimate if the
/// table cannot be loaded, which only a broken build would cause).
fn counter() -> Option<&'static Arc<dyn TokenCounter>> {
    static COUNTER: OnceLock<Option<Arc<dyn TokenCounter>>> = OnceLock::new();
    COUNTER
        .get_or_init(|| mnemo_models::token_counter(mnemo_core::pack::DEFAULT_TOKENIZER).ok())
        .as_ref()
}

/// Starts loading the token counter's table (about 70 ms of CPU) on a thread of its own, once
/// per process, when the first add begins: the load runs beside that add's embedding instead of
/// after it, and processes that never add never load it. A count that comes before the load
/// ends waits for the same load rather than starting another.
pub(crate) fn warm_counter() {
    static STARTED: std::sync::Once = std::sync::Once::new();
    STARTED.call_once(|| {
        let started = std::thread::Builder::new()
            .name("mnemo-tokens".into())
            .spawn(|| {
                counter();
            });
        if let Err(e) = started {
            tracing::debug!(error = %e, "token counter loads on first use");
        }
    });
}

fn count_tokens(text: &str) -> u32 {
    match counter() {
        Some(c) => c.count(text),
        None => tier::plan::estimate_tokens(text),
    }
}

/// What the planner needs besides the store.
#[derive(Clone)]
pub(crate) struct TierPlanner {
    pub config: TierConfig,
    pub chat: Option<Arc<dyn ChatModel>>,
}

/// The snapshot of one write's scopes and sessions, advanced as each batch is planned.
#[derive(Default)]
struct Snapshot {
    windows: HashMap<(String, Option<String>), Window>,
    segments: HashMap<String, Vec<Segment>>,
    /// The words of window pages, split once per write (every add of a batch judges its
    /// keywords against the same newest pages).
    words: HashMap<PageId, HashSet<String>>,
}

impl TierPlanner {
    /// Plans the hierarchy changes of every batch (its drafts in `drafts`, same order) into
    /// `batch.tiers`, returning each batch's model calls.
    pub(crate) fn plan_all(
        &self,
        store: &dyn Store,
        batches: &mut [WriteBatch],
        drafts: &[Vec<PageDraft>],
    ) -> Result<Vec<Vec<ModelCall>>> {
        let scopes: Vec<&Scope> = batches.iter().map(|b| &b.scope).collect();
        let (tiers, usage) = self.plan_tiers(store, &scopes, drafts)?;
        for (batch, tiers) in batches.iter_mut().zip(tiers) {
            batch.tiers = tiers;
        }
        Ok(usage)
    }

    /// The hierarchy changes of batches of `scopes` (their drafts in `drafts`, same order),
    /// each planned against the snapshot the ones before it leave, with each batch's model
    /// calls.
    pub(crate) fn plan_tiers(
        &self,
        store: &dyn Store,
        scopes: &[&Scope],
        drafts: &[Vec<PageDraft>],
    ) -> Result<(Vec<TierWrite>, Vec<Vec<ModelCall>>)> {
        let mut snap = Snapshot::default();
        let mut tiers = Vec::with_capacity(scopes.len());
        let mut usage = Vec::with_capacity(scopes.len());
        let now = chrono::Utc::now();
        for (scope, drafts) in scopes.iter().zip(drafts) {
            let mut log = CallLog::default();
            tiers.push(self.plan_one(store, &mut snap, scope, drafts, now, &mut log)?);
            usage.push(log.calls);
        }
        Ok((tiers, usage))
    }

    fn plan_one(
        &self,
        store: &dyn Store,
        snap: &mut Snapshot,
        scope: &Scope,
        drafts: &[PageDraft],
        now: Timestamp,
        log: &mut CallLog,
    ) -> Result<TierWrite> {
        let Some(first) = drafts.first().and_then(|d| d.messages.first()) else {
            return Ok(TierWrite::default());
        };
        let session = first.session_id.clone();
        let key = (scope.key(), session.clone());
        if !snap.windows.contains_key(&key) {
            let pages = store.pages(&PageQuery {
                scope: Some(scope.clone()),
                exact: true,
                session: Some(session.clone()),
                tier: Some(PageTier::Short),
                ..PageQuery::default()
            })?;
            snap.windows.insert(
                key.clone(),
                Window {
                    pages,
                    before: None,
                },
            );
        }
        let window = snap
            .windows
            .get_mut(&key)
            .ok_or_else(|| Error::internal("the window was just read"))?;
        let moves_pages = window.pages.len() + drafts.len() > self.config.short_term_capacity;
        if moves_pages && window.before.is_none() && session.is_some() {
            // The session's newest page outside the window, for continuity.
            let mut newest: Option<StoredPage> = None;
            for tier in [PageTier::Mid, PageTier::Evicted] {
                let found = store.pages(&PageQuery {
                    scope: Some(scope.clone()),
                    exact: true,
                    session: Some(session.clone()),
                    tier: Some(tier),
                    limit: Some(1),
                    ..PageQuery::default()
                })?;
                for p in found {
                    if newest.as_ref().is_none_or(|n| n.seq < p.seq) {
                        newest = Some(p);
                    }
                }
            }
            window.before = newest;
        }
        if moves_pages && !snap.segments.contains_key(&key.0) {
            let segments = store.segments(scope, true, false)?;
            snap.segments.insert(key.0.clone(), segments);
        }
        let segments = snap.segments.entry(key.0.clone()).or_default();
        let newest = window.pages.iter().rev().take(KEYWORD_NEIGHBOURS);
        for p in newest.clone() {
            snap.words
                .entry(p.id)
                .or_insert_with(|| mnemo_core::note::word_set(&p.text));
        }
        let neighbours: Vec<&HashSet<String>> =
            newest.filter_map(|p| snap.words.get(&p.id)).collect();
        let pages: Vec<NewPage> = drafts
            .iter()
            .map(|d| {
                tier::plan::new_page(
                    scope,
                    &d.messages,
                    d.vector.clone(),
                    &neighbours,
                    &|_: &str| d.tokens,
                )
            })
            .collect();
        let write = tier::plan::plan(
            PlanInput {
                scope,
                window,
                segments,
                pages,
                config: &self.config,
                now,
            },
            self.chat.as_deref(),
            log,
        )?;
        tier::plan::apply(&write, window, segments);
        Ok(write)
    }
}

/// The error for a write whose every planning try met a stale snapshot: other writers kept
/// committing to the same segments. Nothing was written and a later try can succeed, so it is
/// `unavailable` (retryable), not the permanent `conflict` the last refusal was.
pub(crate) fn exhausted(e: Error) -> Error {
    Error::Unavailable {
        component: "hierarchy planning".into(),
        reason: format!(
            "concurrent writers kept changing this scope's segments ({MAX_ATTEMPTS} tries; last: {e}); nothing was written, retry the add"
        ),
    }
}

/// Whether a failed write is worth planning again: a conflict, when the write carried
/// hierarchy changes (the snapshot they were planned from may be stale).
pub(crate) fn retry_worthy(e: &Error, had_tiers: bool) -> bool {
    had_tiers && e.kind() == ErrorKind::Conflict
}
