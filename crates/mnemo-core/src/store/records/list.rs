//! Listings: the query, its pages and positions (for callers that address pages by number),
//! and the rules every backend applies to them.

use super::*;

#[derive(Debug, Clone)]
pub struct ListQuery {
    pub scope: Scope,
    pub kinds: Option<Vec<MemoryKind>>,
    pub filter: Option<Filter>,
    pub limit: usize,
    /// Opaque cursor from a previous page.
    pub cursor: Option<String>,
    pub read: ReadOptions,
}

#[derive(Debug, Clone, Serialize)]
pub struct Page {
    pub results: Vec<Memory>,
    pub next_cursor: Option<String>,
}

impl Page {
    /// The page of `rows` (keyed, in page order, at most `limit + 1` of them): the first
    /// `limit`, with a cursor (`cursor` of the last key) when more follow. Every keyed reader
    /// (listings, the timeline) cuts its pages here.
    pub fn from_rows(
        mut rows: Vec<(i64, Memory)>,
        limit: usize,
        cursor: impl FnOnce(i64) -> String,
    ) -> Self {
        let next_cursor = if rows.len() > limit {
            rows.truncate(limit);
            rows.last().map(|(key, _)| cursor(*key))
        } else {
            None
        };
        Page {
            results: rows.into_iter().map(|(_, m)| m).collect(),
            next_cursor,
        }
    }
}

/// Where a page of a listing starts, for callers that address pages by number (Mem0's
/// `page`/`page_size`) rather than by cursor.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListPosition {
    /// Every record the listing matches (its cursor and limit ignored).
    pub total: u64,
    /// The cursor that makes `list` start after the first `skip` matches; `None` when `skip` is
    /// 0 (start at the beginning) or not less than `total` (there is no such page).
    pub cursor: Option<String>,
}

/// [`Records::locate`] from `list` alone: walks the listing a page at a time, stopping a page
/// exactly at `skip` to keep its cursor. The trait's default, and the reference the contract
/// tests hold a backend's own answer to.
pub fn locate_by_walking<S: Records + ?Sized>(
    store: &S,
    query: &ListQuery,
    skip: u64,
) -> Result<ListPosition> {
    const STEP: u64 = 1000;
    let mut q = query.clone();
    q.cursor = None;
    let mut total = 0u64;
    let mut cursor = None;
    loop {
        let left = skip.saturating_sub(total);
        // STEP fits any usize.
        q.limit = if left > 0 { left.min(STEP) } else { STEP } as usize;
        let page = store.list(&q)?;
        total += page.results.len() as u64;
        if skip > 0 && total == skip {
            cursor.clone_from(&page.next_cursor);
        }
        match page.next_cursor {
            Some(c) => q.cursor = Some(c),
            None => break,
        }
    }
    Ok(ListPosition { total, cursor })
}

/// The most records one `list` page holds.
pub const MAX_LIST_LIMIT: usize = 1000;

impl ListQuery {
    /// The first page of up to `limit` records of `scope`: every kind, no filter, the default
    /// read (active and unexpired, now). The `with_*` methods change one of those.
    pub fn new(scope: Scope, limit: usize) -> Self {
        Self {
            scope,
            kinds: None,
            filter: None,
            limit,
            cursor: None,
            read: ReadOptions::default(),
        }
    }

    /// Only the records `filter` keeps (none: every record).
    pub fn with_filter(self, filter: impl Into<Option<Filter>>) -> Self {
        Self {
            filter: filter.into(),
            ..self
        }
    }

    /// Only records of `kinds` (none or empty: every kind).
    pub fn with_kinds(self, kinds: impl Into<Option<Vec<MemoryKind>>>) -> Self {
        Self {
            kinds: kinds.into(),
            ..self
        }
    }

    /// The page after `cursor`, a previous page's `next_cursor` (none: the first page).
    pub fn with_cursor(self, cursor: impl Into<Option<String>>) -> Self {
        Self {
            cursor: cursor.into(),
            ..self
        }
    }

    /// The records `read` admits (see [`ReadOptions::admits`]).
    pub fn with_read(self, read: ReadOptions) -> Self {
        Self { read, ..self }
    }

    /// What every backend checks before a listing: a limit of 1 to [`MAX_LIST_LIMIT`] (the
    /// scope was checked when it was made).
    pub fn validate(&self) -> Result<()> {
        if self.limit == 0 || self.limit > MAX_LIST_LIMIT {
            return Err(crate::Error::invalid(
                "limit",
                format!("must be between 1 and {MAX_LIST_LIMIT}"),
            ));
        }
        Ok(())
    }

    /// The records the listing walks, as a candidate query (one predicate for `list` and
    /// `locate`): its scope, kinds, filter and visibility.
    pub fn candidates(&self) -> CandidateQuery<'_> {
        CandidateQuery {
            scope: &self.scope,
            kinds: self.kinds.as_deref(),
            filter: self.filter.as_ref(),
            read: self.read,
            limit: self.limit,
        }
    }

    /// The page of `rows` — read in list order after the cursor, keyed by list position, at
    /// most `limit + 1` of them — the first `limit`, with a cursor (`cursor` of the last key)
    /// when more follow.
    pub fn page(&self, rows: Vec<(i64, Memory)>, cursor: impl FnOnce(i64) -> String) -> Page {
        Page::from_rows(rows, self.limit, cursor)
    }
}

impl ListPosition {
    /// Where [`Records::locate`]'s cursor comes from: the offset (in list order) of the record
    /// the cursor stands after — the `skip`-th match — or `None` when `skip` is 0 or not less
    /// than `total` (no cursor).
    pub fn cursor_offset(skip: u64, total: u64) -> Option<i64> {
        if skip == 0 || skip >= total {
            return None;
        }
        // skip < total, and a total is a count of rows: the offset fits.
        i64::try_from(skip - 1).ok()
    }
}
