//! Records: the [`Records`] capability (reads: get, listings and positions, history,
//! duplicates by hash, owners) with its query types. The writes are [`RecordWrites`]
//! (`record_writes.rs`).

use super::*;

mod list;
mod row;
pub use list::*;
pub use row::*;

/// Reading the records: one memory, listings and positions in them, history, duplicates by
/// hash and owners. Every read applies the scope and the visibility rule
/// ([`ReadOptions::admits`]); the writes are [`RecordWrites`].
pub trait Records: Send + Sync {
    fn get(&self, scope: &Scope, id: MemoryId, read: &ReadOptions) -> Result<Memory>;
    fn list(&self, query: &ListQuery) -> Result<Page>;
    /// How many records `query` matches and the cursor after the first `skip` of them, in
    /// `list` order; `query.cursor` and `query.limit` are ignored. The default walks the listing
    /// a page at a time (correct, and linear in the matches); a backend answers it with a count
    /// and one positioned read instead.
    fn locate(&self, query: &ListQuery, skip: u64) -> Result<ListPosition> {
        locate_by_walking(self, query, skip)
    }
    /// The history of one memory, as `query` says. A memory no event of which the scope may
    /// see is not found ([`HistoryQuery::found`]).
    fn history(&self, query: &HistoryQuery<'_>) -> Result<Vec<HistoryEvent>>;
    /// Active memories of exactly this scope whose content hash is one of `hashes` (whole-scope
    /// duplicate suppression), as `(hash, id)`.
    fn find_by_hash(&self, scope: &Scope, hashes: &[String]) -> Result<Vec<(String, MemoryId)>>;
    /// The scope that owns a memory (any state). For admin callers that address a memory by id
    /// alone (the server's admin keys); it has no default because only the backend knows where
    /// the owner is kept. `not_found` when there is no such memory.
    fn owner_of(&self, id: MemoryId) -> Result<Scope>;
    /// Every exact scope that owns visible (active, unexpired) memories, with their count, in
    /// scope order. For listings of users, agents and runs (the server's `entities` routes);
    /// no default because counting is the backend's own query.
    fn owners(&self) -> Result<Vec<(Scope, u64)>>;
}

/// Which history [`Records::history`] reads: the events of memory `id` that `scope` may see,
/// with `read` judging the memory while it still exists (see [`HistoryQuery::memory_read`]).
#[derive(Debug, Clone, Copy)]
pub struct HistoryQuery<'a> {
    pub scope: &'a Scope,
    pub id: MemoryId,
    pub read: ReadOptions,
}

impl<'a> HistoryQuery<'a> {
    /// The history of memory `id` as `scope` sees it with `read`.
    pub fn new(scope: &'a Scope, id: MemoryId, read: ReadOptions) -> Self {
        Self { scope, id, read }
    }

    /// How a memory that still exists must be visible for its history to be read: as `read`
    /// says for expiry and as-of instants, whatever its state (the history of a deleted or
    /// superseded memory stays readable). A hard-deleted memory's history is judged by the
    /// scope its events record.
    pub fn memory_read(&self) -> ReadOptions {
        ReadOptions {
            include_inactive: true,
            ..self.read
        }
    }

    /// The answer from the events a backend found: a memory with no event the scope may see is
    /// not found.
    pub fn found(&self, events: Vec<HistoryEvent>) -> Result<Vec<HistoryEvent>> {
        if events.is_empty() {
            return Err(crate::Error::not_found("memory", self.id));
        }
        Ok(events)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::fixtures::memory;

    fn listing(limit: usize) -> ListQuery {
        ListQuery::new(Scope::user("ann").unwrap(), limit)
    }

    #[test]
    fn a_listing_takes_one_to_a_thousand_records() {
        assert!(listing(1).validate().is_ok());
        assert!(listing(MAX_LIST_LIMIT).validate().is_ok());
        for bad in [0, MAX_LIST_LIMIT + 1] {
            let e = listing(bad).validate().unwrap_err();
            assert_eq!(
                e.to_string(),
                listing(0).validate().unwrap_err().to_string()
            );
            assert!(e.to_string().contains("must be between 1 and 1000"), "{e}");
        }
    }

    #[test]
    fn a_page_keeps_its_limit_and_a_cursor_when_more_follow() {
        let rows = |n: i64| -> Vec<(i64, Memory)> {
            (1..=n)
                .map(|k| (k, memory(MemoryKind::Fact, "x")))
                .collect()
        };
        let page = listing(2).page(rows(3), |k| format!("after {k}"));
        assert_eq!(page.results.len(), 2);
        assert_eq!(page.next_cursor.as_deref(), Some("after 2"));
        let last = listing(2).page(rows(2), |k| format!("after {k}"));
        assert_eq!((last.results.len(), last.next_cursor), (2, None));
    }

    #[test]
    fn a_position_has_a_cursor_only_inside_the_listing() {
        assert_eq!(ListPosition::cursor_offset(0, 5), None);
        assert_eq!(ListPosition::cursor_offset(5, 5), None);
        assert_eq!(ListPosition::cursor_offset(1, 5), Some(0));
        assert_eq!(ListPosition::cursor_offset(4, 5), Some(3));
    }
}
