//! Erasure: a memory, a session or a whole scope, with every copy of its text.

use crate::Memory;
use mnemo_core::*;

impl Memory {
    /// Erases a memory (any state): its text leaves every copy the store keeps — record,
    /// indexes, history, neighbours' context windows, stored idempotent results — and, with
    /// `sources`, the messages it came from. The id, scope, kind and times stay, with an `ERASE`
    /// history event carrying `ctx` (actor, reason). See [`Erasure::erase`].
    pub async fn erase(
        &self,
        scope: Scope,
        id: MemoryId,
        sources: bool,
        ctx: WritePlan,
    ) -> Result<EraseReport> {
        if let Some(r) = &ctx.reason {
            mnemo_core::limits::check_no_nul("reason", r)?;
        }
        self.with_store(move |s| {
            let _turns = crate::scope_lock::take_erase_turn(&scope);
            let _gate = crate::scope_lock::take_store_gate(s, &[scope.key()], true)?;
            s.erase(&EraseMemory::new(&scope, id, sources), &ctx)
        })
        .await
    }

    /// Erases a whole session of the scope in one transaction (see
    /// [`mnemo_core::Erasure::erase_log`]): every memory with a source message in it (raw turns
    /// and what was derived from them), the content of every message, its pages' texts and the
    /// summaries of the segments they joined. `invalid_input` naming `session_id` for a session
    /// the scope has no message in.
    pub async fn erase_session(
        &self,
        scope: Scope,
        session_id: String,
        ctx: WritePlan,
    ) -> Result<EraseLogReport> {
        mnemo_core::limits::check_no_nul("session_id", &session_id)?;
        if let Some(r) = &ctx.reason {
            mnemo_core::limits::check_no_nul("reason", r)?;
        }
        self.with_store(move |s| {
            let _turns = crate::scope_lock::take_erase_turn(&scope);
            let _gate = crate::scope_lock::take_store_gate(s, &[scope.key()], true)?;
            s.erase_log(
                &EraseLog::new(&scope, EraseTarget::Session(&session_id))?,
                &ctx,
            )
        })
        .await
    }

    /// Erases everything the scope covers ("forget this user"): every memory, message, page and
    /// segment summary, in one transaction; ids, counts and `ERASE` events remain. `confirm`
    /// must be true (`invalid_input` naming `confirm` otherwise, and nothing is written).
    pub async fn erase_scope(
        &self,
        scope: Scope,
        confirm: bool,
        ctx: WritePlan,
    ) -> Result<EraseLogReport> {
        if !confirm {
            return Err(Error::invalid(
                "confirm",
                "erasing a whole scope needs an explicit confirmation",
            ));
        }
        if let Some(r) = &ctx.reason {
            mnemo_core::limits::check_no_nul("reason", r)?;
        }
        self.with_store(move |s| {
            let _turns = crate::scope_lock::take_erase_turn(&scope);
            let _gate = crate::scope_lock::take_store_gate(s, &[scope.key()], true)?;
            s.erase_log(&EraseLog::new(&scope, EraseTarget::Scope)?, &ctx)
        })
        .await
    }
}
