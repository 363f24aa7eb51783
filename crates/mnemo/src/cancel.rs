//! Work tickets: what ties the blocking work of one request to the request.
//!
//! A caller (the server) runs an operation inside [`with_ticket`]. Every blocking task the
//! operation starts (`run_blocking`) takes a clone of the ticket with it, so whatever the
//! ticket holds — the server's in-flight slot — is released only when the last of that work
//! has ended, not when the request's future is dropped (a client that hangs up). Dropping the
//! future can [`cancel`](WorkTicket::cancel) the ticket; long blocking work then checks
//! [`check_cancelled`] between its steps and stops early with an `unavailable` error, writing
//! nothing it had not committed.

use mnemo_core::{Error, Result};
use std::cell::RefCell;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

/// A request's hold on the resources its work needs, and its cancellation flag.
#[derive(Clone)]
pub struct WorkTicket(Arc<Inner>);

struct Inner {
    _hold: Box<dyn std::any::Any + Send + Sync>,
    cancelled: AtomicBool,
    stopped: AtomicU64,
}

impl std::fmt::Debug for WorkTicket {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WorkTicket")
            .field("cancelled", &self.is_cancelled())
            .finish_non_exhaustive()
    }
}

impl WorkTicket {
    /// A ticket holding `hold` (dropped with the last clone of the ticket).
    pub fn new(hold: impl std::any::Any + Send + Sync) -> Self {
        Self(Arc::new(Inner {
            _hold: Box::new(hold),
            cancelled: AtomicBool::new(false),
            stopped: AtomicU64::new(0),
        }))
    }

    /// Asks the work to stop at its next check.
    pub fn cancel(&self) {
        self.0.cancelled.store(true, Ordering::SeqCst);
    }

    pub fn is_cancelled(&self) -> bool {
        self.0.cancelled.load(Ordering::SeqCst)
    }

    /// How many checks found the ticket cancelled (the work they stopped).
    pub fn stopped(&self) -> u64 {
        self.0.stopped.load(Ordering::SeqCst)
    }
}

tokio::task_local! {
    static TICKET: WorkTicket;
}

thread_local! {
    static CURRENT: RefCell<Option<WorkTicket>> = const { RefCell::new(None) };
}

/// Runs `f` with `ticket` as the ticket of every blocking task it starts.
pub async fn with_ticket<F: std::future::Future>(ticket: WorkTicket, f: F) -> F::Output {
    TICKET.scope(ticket, f).await
}

/// The ticket of the running task, if it runs inside [`with_ticket`].
pub(crate) fn current_task_ticket() -> Option<WorkTicket> {
    TICKET.try_with(Clone::clone).ok()
}

/// Makes `ticket` the current one on this (blocking) thread while the guard lives.
pub(crate) fn enter(ticket: Option<WorkTicket>) -> impl Drop {
    struct Leave(Option<WorkTicket>);
    impl Drop for Leave {
        fn drop(&mut self) {
            let previous = self.0.take();
            CURRENT.with(|c| *c.borrow_mut() = previous);
        }
    }
    let previous = CURRENT.with(|c| std::mem::replace(&mut *c.borrow_mut(), ticket));
    Leave(previous)
}

/// Whether the work running on this thread was cancelled (never, outside a ticket).
pub fn is_cancelled() -> bool {
    CURRENT.with(|c| c.borrow().as_ref().is_some_and(WorkTicket::is_cancelled))
}

/// `unavailable` when the work running on this thread was cancelled: long blocking work calls
/// it between steps.
pub fn check_cancelled(step: &str) -> Result<()> {
    CURRENT.with(|c| match c.borrow().as_ref() {
        Some(t) if t.is_cancelled() => {
            t.0.stopped.fetch_add(1, Ordering::SeqCst);
            Err(Error::Unavailable {
                component: "request".into(),
                reason: format!("the request was abandoned by its client; {step} stopped"),
            })
        }
        _ => Ok(()),
    })
}
