//! Input at the bounds of `mnemo_core::limits` runs on SQLite's own full-text engine. (Filters
//! at and past their bounds are contract cases: `filters_at_every_bound_run`.)

use mnemo_core::limits::MAX_QUERY_CHARS;
use mnemo_core::*;
use mnemo_store_sqlite::SqliteStore;
use mnemo_testkit::*;

/// Before an embedder is bound, lexical search runs on FTS5: a query at the length limit, of
/// distinct words, is one long OR there, and FTS5 parses it.
#[test]
fn a_query_at_the_length_limit_runs_on_fts5() {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(dir.path().join("mnemo.db")).unwrap();
    let s = scope("wanda");
    let query: String = (0..)
        .map(|i| format!("w{i} "))
        .scan(0, |len, w| {
            *len += w.len();
            (*len <= MAX_QUERY_CHARS).then_some(w)
        })
        .collect();
    let terms = text::query_terms(&query);
    assert!(terms.len() > 2000, "{}", terms.len());
    let got = store.lexical_candidates(&candidates(&s, ReadOptions::default()), &terms);
    assert!(got.unwrap().is_empty());
}
