//! Usage bookkeeping for notes: every read path that returns notes (search, get, list) records
//! them here, and one background task writes the counts (`Store::touch`, one transaction per
//! scope per flush). The read answers first; the write happens after it, batched with the reads
//! that arrive meanwhile, so counting never slows a search down. A failed flush is logged and
//! its counts are dropped: usage is a ranking hint, not a record anyone audits.

use crate::{run_blocking, Memory, MemoryRecord};
use mnemo_core::{MemoryId, MemoryKind, Result, Scope, Timestamp};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

type Pending = Vec<(Scope, MemoryId, Timestamp)>;

#[derive(Default)]
pub(crate) struct Usage {
    pending: Mutex<Pending>,
    flushing: AtomicBool,
    /// Held while a flush writes, so `flush_usage` returns only after every read recorded
    /// before it is on disk (a background flush that took them first finishes first).
    writing: tokio::sync::Mutex<()>,
}

impl Usage {
    /// The pending reads; a poisoned lock still holds a valid list (pushes cannot tear).
    fn pending(&self) -> std::sync::MutexGuard<'_, Pending> {
        self.pending.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Memory {
    /// Notes to count as read by `scope` now; a flush is started when none is running.
    pub(crate) fn record_reads<'a>(
        &self,
        scope: &Scope,
        memories: impl IntoIterator<Item = &'a MemoryRecord>,
    ) {
        let now = chrono::Utc::now();
        let read: Vec<(Scope, MemoryId, Timestamp)> = memories
            .into_iter()
            .filter(|m| m.kind == MemoryKind::Note)
            .map(|m| (scope.clone(), m.id, now))
            .collect();
        if read.is_empty() {
            return;
        }
        self.inner.usage.pending().extend(read);
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

    /// Writes the usage counts recorded so far; returns how many rows changed. Reads flush on
    /// their own in the background; this is for callers that need the counts on disk now
    /// (tests, shutdown).
    pub async fn flush_usage(&self) -> Result<u64> {
        let _writing = self.inner.usage.writing.lock().await;
        let taken = std::mem::take(&mut *self.inner.usage.pending());
        if taken.is_empty() {
            return Ok(0);
        }
        let store = self.store().clone();
        run_blocking(move || {
            let mut by_scope: Vec<(Scope, Vec<MemoryId>, Timestamp)> = Vec::new();
            for (scope, id, at) in taken {
                match by_scope.iter_mut().find(|(s, _, _)| *s == scope) {
                    Some((_, ids, last)) => {
                        ids.push(id);
                        *last = (*last).max(at);
                    }
                    None => by_scope.push((scope, vec![id], at)),
                }
            }
            let mut n = 0;
            for (scope, ids, at) in by_scope {
                n += store.touch(&scope, &ids, at)?;
            }
            Ok(n)
        })
        .await
    }
}
