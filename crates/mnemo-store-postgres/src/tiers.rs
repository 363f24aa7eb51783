// Stubs until this module is implemented (issue 14); remove this allow with them.
#![allow(unused_variables, unused_imports, dead_code)]
//! The hierarchy on PostgreSQL: pages, segments, migrations, evictions, analysed marks and
//! segment visits.

use crate::PgStore;
use mnemo_core::tier::*;
use mnemo_core::*;

impl PgStore {
    pub(crate) fn stored_pages(&self, query: &PageQuery) -> Result<Vec<StoredPage>> {
        Err(crate::not_yet("stored_pages"))
    }

    pub(crate) fn stored_segments(
        &self,
        scope: &Scope,
        exact: bool,
        evicted: bool,
    ) -> Result<Vec<Segment>> {
        Err(crate::not_yet("stored_segments"))
    }

    pub(crate) fn visit_segments(
        &self,
        scope: &Scope,
        visits: &[(SegmentId, u32)],
        at: Timestamp,
    ) -> Result<u64> {
        Err(crate::not_yet("visit_segments"))
    }

    /// Writes a batch's hierarchy changes inside its transaction (called by the write path).
    pub(crate) fn write_tiers(
        &self,
        tx: &mut postgres::Transaction<'_>,
        scope: &Scope,
        w: &TierWrite,
    ) -> Result<()> {
        if w.is_empty() {
            return Ok(());
        }
        Err(crate::not_yet("write_tiers"))
    }
}
