//! The hierarchy: the [`Tiers`] capability (pages, segments, visits and planning turns).

use super::*;

/// A writer's turn from [`Tiers::plan_turn`]; dropping it ends the turn.
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
    /// Counts retrievals: each segment of `visits` gains its visits and `last_visit_at` (never
    /// moved back), and its version increases; unknown, evicted or other scopes' segments are
    /// skipped. One transaction; returns how many segments changed. Callers batch visits off
    /// the read path (see `mnemo`'s usage bookkeeping). Required: an update of the backend's
    /// rows.
    fn record_visits(&self, visits: &Visits) -> Result<u64>;
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

/// The visits one [`Tiers::record_visits`] counts: segments of `scope`, each with how many
/// retrievals returned its pages, last at `at`. Never empty: there is no call to make for no
/// visit.
#[derive(Debug, Clone, PartialEq)]
pub struct Visits {
    scope: Scope,
    counts: Vec<(crate::memory::SegmentId, u32)>,
    at: Timestamp,
}

impl Visits {
    /// `counts` (segment, visits) of `scope` at `at`; `None` when there is none.
    pub fn new(
        scope: Scope,
        counts: Vec<(crate::memory::SegmentId, u32)>,
        at: Timestamp,
    ) -> Option<Self> {
        (!counts.is_empty()).then_some(Self { scope, counts, at })
    }

    pub fn scope(&self) -> &Scope {
        &self.scope
    }

    pub fn counts(&self) -> &[(crate::memory::SegmentId, u32)] {
        &self.counts
    }

    /// When the last of them happened, in milliseconds since the epoch (as stores keep times).
    pub fn at_ms(&self) -> i64 {
        self.at.timestamp_millis()
    }
}

/// What a backend does at each step of a tier write, inside the batch's transaction. Every
/// method reads or writes rows of `scope` (the batch's exact scope) and decides nothing:
/// [`write_tiers`] calls them in the write order and owns the checks' outcomes.
pub trait TierWriter {
    /// The fault-injection hook: fails the transaction when a test asked for a failure at
    /// `step` (with [`WriteStep::injected_failure`]).
    fn step(&self, step: WriteStep) -> Result<()>;
    /// Records a history event.
    fn history(&mut self, entry: &HistoryEntry<'_>) -> Result<()>;
    /// Inserts a new page into the short-term window, not analysed.
    fn insert_page(&mut self, scope: &Scope, page: &crate::tier::NewPage) -> Result<()>;
    /// Inserts a new segment at version 1; `false` when its id is taken.
    fn insert_segment(&mut self, scope: &Scope, segment: &crate::tier::Segment) -> Result<bool>;
    /// Rewrites the content of an active segment whose version is `expected` (its version
    /// moves on by one; visits counted since are kept); `false` when there is none.
    fn rewrite_segment(
        &mut self,
        scope: &Scope,
        segment: &crate::tier::Segment,
        expected: u64,
    ) -> Result<bool>;
    /// Whether `id` is an active segment of the scope, kept so until the transaction ends (an
    /// eviction racing the move waits for it).
    fn segment_is_active(&mut self, scope: &Scope, id: crate::memory::SegmentId) -> Result<bool>;
    /// Whether `id` is a page of the scope.
    fn page_exists(&mut self, scope: &Scope, id: crate::memory::PageId) -> Result<bool>;
    /// Moves a page of the short-term window into `page_move.segment` (continuing
    /// `page_move.continues`); `false` when the page is no longer short-term.
    fn move_page(&mut self, scope: &Scope, page_move: &crate::tier::PageMove) -> Result<bool>;
    /// The version and summary of an active segment of the scope, locked for its eviction.
    fn active_segment(
        &mut self,
        scope: &Scope,
        id: crate::memory::SegmentId,
    ) -> Result<Option<(u64, String)>>;
    /// Evicts a segment at `at` (its version moves on by one) and its pages with it.
    fn evict_segment(&mut self, scope: &Scope, id: crate::memory::SegmentId, at: i64)
        -> Result<()>;
    /// Marks an unanalysed page analysed; `false` when the page is unknown or analysed.
    fn mark_analysed(&mut self, scope: &Scope, id: crate::memory::PageId) -> Result<bool>;
}

fn conflict(reason: String) -> crate::Error {
    crate::Error::Conflict { reason }
}

/// Applies one batch's hierarchy changes through `tx`, in the order new pages → segment
/// writes → moves → evictions → analysed marks. Each step checks the snapshot the
/// pipeline planned from (a moving page is still `short`, a rewritten or evicted segment
/// still has the version it saw, an analysed page was not consumed meanwhile) and fails the
/// batch with a conflict otherwise, so a page is never in neither tier and a stale plan never
/// overwrites a newer one. The batch's shape (scopes, vectors, pages' messages) was checked by
/// [`WriteBatch::validate`].
pub fn write_tiers<W: TierWriter + ?Sized>(
    tx: &mut W,
    scope: &Scope,
    w: &crate::tier::TierWrite,
) -> Result<()> {
    if w.is_empty() {
        return Ok(());
    }
    for p in &w.pages {
        tx.step(WriteStep::Page)?;
        tx.insert_page(scope, p)?;
    }
    let mut written = std::collections::HashSet::new();
    for s in &w.segments {
        tx.step(WriteStep::Segment)?;
        let seg = &s.segment;
        match s.expected_version {
            None if !tx.insert_segment(scope, seg)? => {
                return Err(conflict(format!("segment {} already exists", seg.id)))
            }
            Some(v) if !tx.rewrite_segment(scope, seg, v)? => {
                return Err(conflict(format!(
                    "segment {} changed or was evicted since it was read (expected version {v}); plan again",
                    seg.id
                )))
            }
            _ => {}
        }
        written.insert(seg.id);
    }
    for m in &w.moves {
        tx.step(WriteStep::Move)?;
        if !tx.segment_is_active(scope, m.segment)? {
            return Err(conflict(format!(
                "segment {} is not an active segment of the scope; plan again",
                m.segment
            )));
        }
        if let Some(c) = m.continues {
            if !tx.page_exists(scope, c)? {
                return Err(crate::Error::invalid(
                    "moves.continues",
                    format!("{c} is not a page of the scope"),
                ));
            }
        }
        if !tx.move_page(scope, m)? {
            return Err(conflict(format!(
                "page {} is no longer in the short-term window; plan again",
                m.page
            )));
        }
    }
    let now = chrono::Utc::now().timestamp_millis();
    for e in &w.evictions {
        tx.step(WriteStep::Evict)?;
        let Some((version, summary)) = tx.active_segment(scope, e.segment)? else {
            return Err(conflict(format!(
                "segment {} is not an active segment of the scope",
                e.segment
            )));
        };
        // A segment this batch rewrote has moved one version past what the plan saw.
        let expected = e.expected_version + u64::from(written.contains(&e.segment));
        if version != expected {
            return Err(conflict(format!(
                "segment {} changed since it was read (version {version}, expected {expected}); plan again",
                e.segment
            )));
        }
        tx.evict_segment(scope, e.segment, now)?;
        // The segment's history lives under its id, like a memory's.
        let ctx = WritePlan {
            reason: Some(e.reason.clone()),
            ..WritePlan::default()
        };
        tx.history(&HistoryEntry {
            old_text: Some(&summary),
            ..HistoryEntry::new(MemoryId(e.segment.0), scope, HistoryKind::Evict, &ctx, now)
        })?;
    }
    for id in &w.analysed {
        tx.step(WriteStep::Analyse)?;
        // Only an unanalysed page can be consumed: of two analyses racing for the same pages,
        // the later one fails whole and writes nothing.
        if !tx.mark_analysed(scope, *id)? {
            return Err(if tx.page_exists(scope, *id)? {
                conflict(format!(
                    "page {id} was already analysed by another analysis; refresh again"
                ))
            } else {
                crate::Error::not_found("page", id)
            });
        }
    }
    Ok(())
}

/// A segment's vector from its pages' vectors (a rebind's new model, an import's re-embedded
/// pages): their sum scaled to unit length; `None` without pages (the segment keeps its own).
pub fn segment_vector(pages: impl IntoIterator<Item = Vec<f32>>) -> Option<Vec<f32>> {
    let mut sum: Vec<f32> = Vec::new();
    for v in pages {
        if sum.is_empty() {
            sum = vec![0.0; v.len()];
        }
        sum.iter_mut().zip(&v).for_each(|(a, b)| *a += b);
    }
    if sum.is_empty() {
        return None;
    }
    crate::embed::l2_normalize(&mut sum);
    Some(sum)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::SegmentId;

    #[test]
    fn there_are_no_visits_without_a_count() {
        let s = Scope::user("ann").unwrap();
        let now = chrono::Utc::now();
        assert!(Visits::new(s.clone(), Vec::new(), now).is_none());
        let id = SegmentId::new();
        let v = Visits::new(s.clone(), vec![(id, 2)], now).unwrap();
        assert_eq!((v.scope(), v.counts()), (&s, &[(id, 2)][..]));
        assert_eq!(v.at_ms(), now.timestamp_millis());
    }
}
