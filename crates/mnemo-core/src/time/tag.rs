//! The tagger's walk: split the text into sentences, read each sentence's tense, find the
//! expressions left to right (each the longest one starting at its token) and keep the most
//! specific per sentence.

use super::calendar::Span;
use super::grammar::{Cx, Found, Mode};
use super::lexicon::{listed, tokenize, Kind, Tok, FUTURE_WORDS};
use super::{EventTime, EventTimeSource, TaggerOptions};
use crate::memory::Timestamp;

/// Whether the sentence speaks of what is still to come ("will", "going to", "next", …).
/// `was going to` is a past plan and stays past.
pub(super) fn speaks_of_future(toks: &[Tok<'_>]) -> bool {
    toks.iter().enumerate().any(|(k, t)| {
        if t.kind != Kind::Word {
            return false;
        }
        let w = t.lower.as_str();
        let before = |n: usize| k.checked_sub(n).map(|p| toks[p].lower.as_str());
        let after = |n: usize| toks.get(k + n).map(|t| t.lower.as_str());
        listed(FUTURE_WORDS, w)
            || w.ends_with("'ll")
            || w.ends_with("’ll")
            || (w == "going"
                && after(1) == Some("to")
                && !matches!(before(1), Some("was" | "were")))
            || (w == "wait" && matches!(before(1), Some("can't" | "can’t" | "cannot")))
            || (w == "forward" && before(1) == Some("looking"))
    })
}

/// Every expression of one sentence, left to right, none overlapping.
pub(super) fn expressions(cx: &Cx<'_, '_>) -> Vec<Found> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < cx.toks.len() {
        match cx.at(i) {
            Some(f) => {
                i = f.end.max(i + 1);
                out.push(f);
            }
            None => i += 1,
        }
    }
    out
}

/// How specific a span is: finer granularity first, then the shorter span, and a definite date
/// before an open "since".
fn specificity(f: &Found) -> (super::Granularity, i64, bool) {
    (f.span.granularity, f.span.len_days(), f.since)
}

pub(super) fn best(found: Vec<Found>) -> Option<Found> {
    found
        .into_iter()
        .enumerate()
        .min_by_key(|(k, f)| (specificity(f), *k))
        .map(|(_, f)| f)
}

pub(super) fn event_time(text: &str, toks: &[Tok<'_>], f: &Found, span: Span) -> EventTime {
    EventTime {
        start: span.start_ts(),
        end: span.end_ts(),
        granularity: span.granularity,
        phrase: text[toks[f.first].start..toks[f.end - 1].end].to_string(),
        source: EventTimeSource::Text,
    }
}

/// Every resolved temporal expression of `text`, at most one per sentence (the most specific),
/// in text order.
pub fn tag(text: &str, anchor: Timestamp, opts: &TaggerOptions) -> Vec<EventTime> {
    let (toks, sentences) = tokenize(text);
    let day = anchor.date_naive();
    sentences
        .into_iter()
        .filter_map(|(from, to)| {
            let sentence = &toks[from..to];
            let cx = Cx {
                toks: sentence,
                anchor: day,
                future: speaks_of_future(sentence),
                mode: Mode::Text,
                order: opts.date_order,
            };
            let f = best(expressions(&cx))?;
            Some(event_time(text, sentence, &f, f.span))
        })
        .collect()
}

/// The one event time of a memory's text: the most specific of its sentences' (the first of
/// equals). `None` when the text states no time the tagger can resolve.
pub fn event_time_of(text: &str, anchor: Timestamp, opts: &TaggerOptions) -> Option<EventTime> {
    tag(text, anchor, opts)
        .into_iter()
        .enumerate()
        .min_by_key(|(k, e)| (e.granularity, e.end - e.start, *k))
        .map(|(_, e)| e)
}
