//! Usage bookkeeping: every read path that returns memories (search, get, list, context packs)
//! records them here, of every kind, and retrievals that return a segment's pages record a
//! visit of the segment ([`Memory::record_visits`]). One background task writes what was
//! recorded — `Store::touch` (access counts and last access) and `Store::record_visits` (heat),
//! one transaction per scope and kind per flush. The read answers first; the write happens
//! after it, batched with the reads that arrive meanwhile, so counting stays off the hot path
//! (`mnemo bench` measures search with it on and off). A failed flush is logged and its counts
//! are dropped: usage is a ranking and eviction hint, not a record anyone audits.
//!
//! A search counts a visit of every mid-term segment holding a page its memories were derived
//! from (once per search); the flush finds those segments, so the search does not wait for it.
//! A server drains the pending counts when it shuts down gracefully.
//!
//! `MemoryConfig::usage_tracking = false` records nothing (for measuring what counting costs).

use crate::{run_blocking, Memory, MemoryRecord};
use mnemo_core::{MemoryId, MessageId, Result, Scope, SegmentId, Timestamp, Visits};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

/// What is waiting to be written: per read call, its scope, the ids it returned and when.
#[derive(Default)]
struct Pending {
    reads: Vec<(Scope, Vec<MemoryId>, Timestamp)>,
    visits: Vec<(Scope, Vec<SegmentId>, Timestamp)>,
    /// Per search: the source messages of the memories it returned (their segments are
    /// looked up when the flush writes, off the answer's path).
    searched: Vec<(Scope, Vec<MessageId>, Timestamp)>,
}

impl Pending {
    fn is_empty(&self) -> bool {
        self.reads.is_empty() && self.visits.is_empty() && self.searched.is_empty()
    }
}

#[derive(Default)]
pub(crate) struct Usage {
    pending: Mutex<Pending>,
    flushing: AtomicBool,
    /// Held while a flush writes, so `flush_usage` returns only after every read recorded
    /// before it is on disk (a background flush that took them first finishes first).
    writing: tokio::sync::Mutex<()>,
}

impl Usage {
    /// The pending reads; a poisoned lock still holds valid lists (pushes cannot tear).
    fn pending(&self) -> std::sync::MutexGuard<'_, Pending> {
        self.pending.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Memory {
    /// Memories to count as read by `scope` now; a flush is started when none is running.
    pub(crate) fn record_reads<'a>(
        &self,
        scope: &Scope,
        memories: impl IntoIterator<Item = &'a MemoryRecord>,
    ) {
        let ids: Vec<MemoryId> = memories.into_iter().map(|m| m.id).collect();
        self.record(scope, ids, |p| &mut p.reads);
    }

    /// A search of `scope` returned `memories`: they count as read, and each mid-term segment
    /// holding a page that one of them was derived from gains one visit (once per search,
    /// however many of its memories came back), as a context pack showing the page would.
    /// The segments are found when the flush writes, so the search answers first.
    pub(crate) fn record_search<'a>(
        &self,
        scope: &Scope,
        memories: impl IntoIterator<Item = &'a MemoryRecord> + Clone,
    ) {
        self.record_reads(scope, memories.clone());
        let sources: Vec<MessageId> = memories
            .into_iter()
            .flat_map(|m| m.sources.iter().copied())
            .collect();
        self.record(scope, sources, |p| &mut p.searched);
    }

    /// Segments of `scope` whose pages a retrieval returned: each gains a visit (heat) in the
    /// next background flush. An id listed twice counts twice; evicted, unknown and other
    /// scopes' segments are skipped when the visits are written.
    pub fn record_visits(&self, scope: &Scope, segments: impl IntoIterator<Item = SegmentId>) {
        let ids: Vec<SegmentId> = segments.into_iter().collect();
        self.record(scope, ids, |p| &mut p.visits);
    }

    /// Queues `ids` read by `scope` now on the pending list `list` picks, and starts a flush;
    /// nothing when usage tracking is off or there is nothing to count.
    fn record<T>(
        &self,
        scope: &Scope,
        ids: Vec<T>,
        list: impl FnOnce(&mut Pending) -> &mut Vec<(Scope, Vec<T>, Timestamp)>,
    ) {
        if !self.inner.usage_tracking || ids.is_empty() {
            return;
        }
        let now = chrono::Utc::now();
        list(&mut self.inner.usage.pending()).push((scope.clone(), ids, now));
        self.start_flush();
    }

    /// Starts the background flush unless one is running (or there is no runtime to run it on:
    /// the counts then wait for the next read or `flush_usage`).
    fn start_flush(&self) {
        let Ok(rt) = tokio::runtime::Handle::try_current() else {
            return;
        };
        if self.inner.usage.flushing.swap(true, Ordering::AcqRel) {
            return;
        }
        let this = self.clone();
        rt.spawn(async move {
            loop {
                if let Err(e) = this.flush_usage().await {
                    tracing::warn!(error_kind = e.kind().as_str(), "usage counts not written");
                }
                this.inner.usage.flushing.store(false, Ordering::Release);
                // Reads recorded after the last take and before the flag dropped are flushed by
                // this task rather than left waiting for the next read.
                if this.inner.usage.pending().is_empty()
                    || this.inner.usage.flushing.swap(true, Ordering::AcqRel)
                {
                    break;
                }
            }
        });
    }

    /// Writes the usage counts and visits recorded so far; returns how many rows (memories and
    /// segments) changed. Reads flush on their own in the background; this is for callers that
    /// need the counts on disk now (tests, shutdown).
    pub async fn flush_usage(&self) -> Result<u64> {
        let _writing = self.inner.usage.writing.lock().await;
        let taken = std::mem::take(&mut *self.inner.usage.pending());
        if taken.is_empty() {
            return Ok(0);
        }
        let store = self.store().clone();
        run_blocking(move || {
            let mut n = 0;
            for (scope, ids, at) in by_scope(taken.reads) {
                n += store.touch(&scope, &ids, at)?;
            }
            for (scope, ids, at) in by_scope(taken.visits) {
                let mut counts: Vec<(SegmentId, u32)> = Vec::new();
                for id in ids {
                    match counts.iter_mut().find(|(s, _)| *s == id) {
                        Some((_, c)) => *c = c.saturating_add(1),
                        None => counts.push((id, 1)),
                    }
                }
                if let Some(visits) = Visits::new(scope, counts, at) {
                    n += store.record_visits(&visits)?;
                }
            }
            for (scope, searches) in by_search_scope(taken.searched) {
                let counts = search_visits(store.as_ref(), &scope, &searches)?;
                let at = searches.iter().map(|(_, t)| *t).max();
                if let Some(visits) = at.and_then(|at| Visits::new(scope, counts, at)) {
                    n += store.record_visits(&visits)?;
                }
            }
            Ok(n)
        })
        .await
    }
}

/// The searches of one scope: each one's source messages and time.
type Searches = Vec<(Vec<MessageId>, Timestamp)>;

/// Searches grouped by scope (first-seen order), each search's sources kept apart.
fn by_search_scope(items: Vec<(Scope, Vec<MessageId>, Timestamp)>) -> Vec<(Scope, Searches)> {
    let mut out: Vec<(Scope, Searches)> = Vec::new();
    let mut at: HashMap<String, usize> = HashMap::new();
    for (scope, ids, t) in items {
        match at.get(&scope.key()) {
            Some(&i) => out[i].1.push((ids, t)),
            None => {
                at.insert(scope.key(), out.len());
                out.push((scope, vec![(ids, t)]));
            }
        }
    }
    out
}

/// The visits searches of `scope` make: each mid-term segment holding a page of one of a
/// search's source messages, once per search. Reads the scope's mid-term pages once.
fn search_visits(
    store: &dyn mnemo_core::Store,
    scope: &Scope,
    searches: &[(Vec<MessageId>, Timestamp)],
) -> Result<Vec<(SegmentId, u32)>> {
    let pages = store.pages(&mnemo_core::tier::PageQuery {
        scope: Some(scope.clone()),
        tier: Some(mnemo_core::PageTier::Mid),
        ..Default::default()
    })?;
    let segment_of: HashMap<MessageId, SegmentId> = pages
        .iter()
        .filter_map(|p| p.segment.map(|g| (p, g)))
        .flat_map(|(p, g)| p.message_ids.iter().map(move |m| (*m, g)))
        .collect();
    let mut counts: Vec<(SegmentId, u32)> = Vec::new();
    for (sources, _) in searches {
        let mut seen: Vec<SegmentId> = Vec::new();
        for g in sources.iter().filter_map(|m| segment_of.get(m)) {
            if !seen.contains(g) {
                seen.push(*g);
            }
        }
        for g in seen {
            match counts.iter_mut().find(|(s, _)| *s == g) {
                Some((_, c)) => *c = c.saturating_add(1),
                None => counts.push((g, 1)),
            }
        }
    }
    Ok(counts)
}

/// The recorded ids grouped by scope (first-seen order), each group with its latest time.
fn by_scope<T>(items: Vec<(Scope, Vec<T>, Timestamp)>) -> Vec<(Scope, Vec<T>, Timestamp)> {
    let mut out: Vec<(Scope, Vec<T>, Timestamp)> = Vec::new();
    let mut at: HashMap<String, usize> = HashMap::new();
    for (scope, ids, t) in items {
        match at.get(&scope.key()) {
            Some(&i) => {
                let (_, all, last) = &mut out[i];
                all.extend(ids);
                *last = (*last).max(t);
            }
            None => {
                at.insert(scope.key(), out.len());
                out.push((scope, ids, t));
            }
        }
    }
    out
}
