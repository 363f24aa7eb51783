//! The hierarchy: the [`Tiers`] capability (pages, segments, visits and planning turns).

use super::*;

/// A writer's turn from [`Store::plan_turn`]; dropping it ends the turn.
pub type PlanTurn = Box<dyn Send>;

/// The hierarchy: pages, segments, their visits, and planning turns across processes.
pub trait Tiers: Send + Sync {
    /// Pages matching `query` (see [`crate::tier::PageQuery`]), oldest first. Required: pages are
    /// the backend's own table.
    fn pages(&self, query: &crate::tier::PageQuery) -> Result<Vec<crate::tier::StoredPage>>;
    /// Segments owned by a scope `scope` covers (exactly `scope` when `exact`), active ones only
    /// unless `evicted`, oldest first. Required for the same reason as `pages`.
    fn segments(
        &self,
        scope: &Scope,
        exact: bool,
        evicted: bool,
    ) -> Result<Vec<crate::tier::Segment>>;
    /// Counts retrievals: each `(segment, n)` gains `n` visits and `last_visit_at = at` (never
    /// moved back), and its version increases; unknown, evicted or other scopes' segments are
    /// skipped. One transaction; returns how many segments changed. Callers batch visits off
    /// the read path (see `mnemo`'s usage bookkeeping). Required: an update of the backend's
    /// rows.
    fn record_visits(
        &self,
        scope: &Scope,
        visits: &[(crate::memory::SegmentId, u32)],
        at: Timestamp,
    ) -> Result<u64>;
    /// Waits for the turn to plan and write the hierarchy of these exact scopes (their `key()`s)
    /// across every process that shares this store, and holds it until the returned guard is
    /// dropped. Writers of one scope plan from a snapshot and the store refuses a plan that went
    /// stale, so without turns writers in several processes (servers on one database) refuse
    /// each other's plans and may lose every retry. `None`: the store has no such turns (one
    /// process writes it, or it serialises writers itself); the caller's own in-process turns
    /// are then all there is.
    fn plan_turn(&self, scope_keys: &[String]) -> Result<Option<PlanTurn>> {
        let _ = scope_keys;
        Ok(None)
    }
}
