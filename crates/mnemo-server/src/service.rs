//! The one service layer behind REST (native and Mem0-compatible) and MCP. Every operation
//! takes the caller's [`Principal`], resolves and checks the scope before any work is done,
//! waits for a worker slot (the queue delay is measured), runs the library call and records
//! its duration and model calls. Logs carry ids, counts and lengths; memory text only when
//! content logging is switched on.
//!
//! This file is the plumbing every operation shares (`Service::run`: the slot, cancellation,
//! metrics). The rest is by concern: `authz` (which scope a request acts in, the write rule),
//! `convert` (wire bodies → library requests), `memories`, `search`, `erase`, `links`, `admin`,
//! `context`, `log`, `jobs` and `inspect` (the operations).

use crate::auth::Principal;
use crate::error::{ApiError, ApiResult};
use crate::metrics::Metrics;
use mnemo::Memory;
use mnemo_core::WritePlan;
use std::future::Future;
use std::sync::Arc;
use std::time::Instant;
use tokio::sync::Semaphore;

mod admin;
mod authz;
pub mod blocks;
mod context;
mod convert;
mod erase;
pub mod inspect;
pub mod jobs;
mod links;
mod log;
mod memories;
pub mod relations;
mod search;
mod timeline;
pub(crate) use authz::check_reason;
pub use context::budget_tokens;
pub use convert::parse_id;

/// Settings of the service layer.
#[derive(Debug, Clone)]
pub struct ServiceConfig {
    /// Operations running at once; later ones queue (and the wait is measured).
    pub max_in_flight: usize,
    /// Write memory text and queries into the logs (off by default).
    pub log_content: bool,
    /// Let keys bound to no user write into a user's memories (see `Service::check_write`).
    pub allow_agent_writes_for_users: bool,
    /// Messages one add (or one batch of adds, in all) may carry.
    pub max_messages_per_add: usize,
}

impl Default for ServiceConfig {
    fn default() -> Self {
        Self {
            max_in_flight: 64,
            log_content: false,
            allow_agent_writes_for_users: false,
            max_messages_per_add: mnemo_core::limits::MAX_MESSAGES_PER_ADD,
        }
    }
}

/// The operations every surface calls.
pub struct Service {
    memory: Memory,
    metrics: Arc<Metrics>,
    gate: Arc<Semaphore>,
    log_content: bool,
    allow_agent_writes_for_users: bool,
    max_messages: usize,
    /// Charges each key for the time its operations' work runs (`None`: work is not priced).
    limiter: Option<Arc<crate::ratelimit::RateLimiter>>,
}

impl std::fmt::Debug for Service {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Service").finish_non_exhaustive()
    }
}

const MAX_BATCH: usize = 1000;

/// Cancels an operation's ticket when its future is dropped before the end (the client hung
/// up), counting it in `mnemo_requests_abandoned`.
struct AbandonGuard<'a> {
    ticket: mnemo::cancel::WorkTicket,
    metrics: &'a Metrics,
    done: bool,
}

/// Charges a key for its operation's work when the last of that work ends (the ticket holds it,
/// so work that runs on after its client hung up is charged too).
struct WorkCharge {
    limiter: Arc<crate::ratelimit::RateLimiter>,
    key: String,
    started: Instant,
}

impl Drop for WorkCharge {
    fn drop(&mut self) {
        self.limiter.charge_work(&self.key, self.started.elapsed());
    }
}

impl Drop for AbandonGuard<'_> {
    fn drop(&mut self) {
        if !self.done {
            self.ticket.cancel();
            self.metrics.abandoned.inc();
        }
    }
}

impl Service {
    pub fn new(memory: Memory, metrics: Arc<Metrics>, config: &ServiceConfig) -> Self {
        Self {
            memory,
            metrics,
            gate: Arc::new(Semaphore::new(config.max_in_flight.max(1))),
            log_content: config.log_content,
            allow_agent_writes_for_users: config.allow_agent_writes_for_users,
            max_messages: config.max_messages_per_add,
            limiter: None,
        }
    }

    /// Charges each key for the time its operations' work runs, through `limiter`
    /// ([`RateLimiter::charge_work`](crate::ratelimit::RateLimiter::charge_work)).
    pub fn with_work_pricing(mut self, limiter: Arc<crate::ratelimit::RateLimiter>) -> Self {
        self.limiter = limiter.prices_work().then_some(limiter);
        self
    }

    pub fn memory(&self) -> &Memory {
        &self.memory
    }

    pub fn metrics(&self) -> &Arc<Metrics> {
        &self.metrics
    }

    async fn run<T>(
        &self,
        op: &'static str,
        p: &Principal,
        f: impl Future<Output = ApiResult<T>>,
    ) -> ApiResult<T> {
        let queued = Instant::now();
        let slot = self
            .gate
            .clone()
            .acquire_owned()
            .await
            .map_err(|_| ApiError::from(mnemo_core::Error::internal("worker gate closed")))?;
        self.metrics
            .queue_seconds
            .observe(queued.elapsed().as_secs_f64());
        let t = Instant::now();
        // The slot travels with the work (every blocking task holds the ticket), so a client
        // that hangs up frees it only when that work has stopped; the guard cancels the
        // ticket when this future is dropped before it ends, and the work stops at its next
        // check.
        // The work's price is charged when the ticket's hold drops: when the last of the work
        // has ended, answered or abandoned.
        let charge = self.limiter.as_ref().map(|limiter| WorkCharge {
            limiter: limiter.clone(),
            key: p.key_id.clone(),
            started: t,
        });
        let ticket = mnemo::cancel::WorkTicket::new((slot, charge));
        let guard = AbandonGuard {
            ticket: ticket.clone(),
            metrics: &self.metrics,
            done: false,
        };
        let out = mnemo::cancel::with_ticket(ticket, f).await;
        let mut guard = guard;
        guard.done = true;
        let secs = t.elapsed().as_secs_f64();
        self.metrics.observe_op(op, out.is_ok(), secs);
        match &out {
            Ok(_) => tracing::debug!(op, key = %p.key_id, ms = secs * 1e3, "ok"),
            Err(e) => {
                tracing::info!(op, key = %p.key_id, kind = e.kind.as_str(), ms = secs * 1e3, "failed")
            }
        }
        out
    }
}

pub(crate) fn ctx(p: &Principal, request_id: &str) -> WritePlan {
    WritePlan {
        actor: Some(format!("api-key:{}", p.key_id)),
        role: None,
        reason: None,
        request_id: Some(request_id.to_string()),
    }
}
