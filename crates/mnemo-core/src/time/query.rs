//! A search query's temporal expression: the same grammar as the tagger in query mode (lower
//! case accepted, the past assumed unless the query speaks of the future), plus the relation
//! the words before it state (`before 2020`, `after May`, `since 2019`).

use super::calendar::ts;
use super::grammar::{Cx, Mode};
use super::lexicon::tokenize;
use super::tag::{best, expressions, speaks_of_future};
use super::{TaggerOptions, TemporalQuery, TemporalRelation};
use crate::memory::Timestamp;
use chrono::NaiveDate;

/// The open end of a `before` query: events from 1900 on (mnemo refuses earlier anchors).
pub fn earliest() -> Timestamp {
    ts(NaiveDate::from_ymd_opt(1900, 1, 1).unwrap_or_default())
}

/// The open end of an `after`/`since` query.
pub fn latest() -> Timestamp {
    ts(NaiveDate::from_ymd_opt(2200, 1, 1).unwrap_or_default())
}

/// The query's temporal expression resolved against `reference`, or `None` when it has none
/// (then search must rank exactly as without temporal search). With several, the most specific
/// wins.
///
/// `before X` gives `[1900, start of X)`; `after X` gives `[end of X, 2200)`; `since X` gives
/// `[start of X, 2200)`; anything else is `during`: `X` itself. The phrase includes the
/// relation word.
pub fn resolve_query(
    query: &str,
    reference: Timestamp,
    opts: &TaggerOptions,
) -> Option<TemporalQuery> {
    let (toks, _) = tokenize(query);
    let cx = Cx {
        toks: &toks,
        anchor: reference.date_naive(),
        future: speaks_of_future(&toks),
        mode: Mode::Query,
        order: opts.date_order,
    };
    let f = best(expressions(&cx))?;
    let before = |k: usize| f.first.checked_sub(k).map(|p| toks[p].lower.as_str());
    let (relation, words) = match (before(2), before(1)) {
        (Some("prior"), Some("to")) => (TemporalRelation::Before, 2),
        (_, Some("before" | "until" | "till" | "by")) => (TemporalRelation::Before, 1),
        (_, Some("after")) => (TemporalRelation::After, 1),
        (_, Some("since")) => (TemporalRelation::After, 1),
        _ => (TemporalRelation::During, 0),
    };
    let (start, end) = match (relation, before(1)) {
        (TemporalRelation::Before, _) => (earliest(), f.span.start_ts()),
        (TemporalRelation::After, Some("since")) => (f.span.start_ts(), latest()),
        (TemporalRelation::After, _) => (f.span.end_ts(), latest()),
        (TemporalRelation::During, _) => (f.span.start_ts(), f.span.end_ts()),
    };
    let first = &toks[f.first - words];
    Some(TemporalQuery {
        phrase: query[first.start..toks[f.end - 1].end].to_string(),
        start,
        end,
        granularity: f.span.granularity,
        relation,
    })
}
