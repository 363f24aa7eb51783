//! Contract cases for a segment's event time (issue 45: a segment may carry one, the span of
//! what its pages state): stored with the segment and rewritten with it, carried through export
//! and import (absent stays absent), read again from the remaining
//! pages when an erase scrubs one of them, and gone when an erase empties the segment.
//! Re-exported by `contract`.

use crate::contract_tier_fixtures::{new_segment, page_batch, tier_batch};
use crate::contract_timeline::event;
use crate::*;
use chrono::TimeZone;
use mnemo_core::tier::{PageMove, SegmentWrite};
use mnemo_core::time::Granularity;
use mnemo_core::*;

/// Writes `pages` (texts, each a message, a raw memory and a page) and moves them into `seg`
/// in one batch; returns the memories' ids.
fn segment_with_pages(
    store: &dyn Store,
    s: &Scope,
    seg: &Segment,
    pages: &[&str],
) -> Vec<MemoryId> {
    let mut ids = Vec::new();
    let mut moves = Vec::new();
    for text in pages {
        let (b, page) = page_batch(s, Some("s1"), text);
        ids.push(store.write(vec![b]).expect("page")[0].results[0].id);
        moves.push(PageMove {
            page,
            segment: seg.id,
            continues: None,
        });
    }
    let tiers = TierWrite {
        segments: vec![SegmentWrite {
            segment: seg.clone(),
            expected_version: None,
        }],
        moves,
        ..TierWrite::default()
    };
    store.write(vec![tier_batch(s, tiers)]).expect("segment");
    ids
}

fn stored(store: &dyn Store, s: &Scope, id: SegmentId) -> Segment {
    store
        .segments(s, true, true)
        .expect("segments")
        .into_iter()
        .find(|x| x.id == id)
        .expect("the segment is stored")
}

fn round_trip(records: &[ExportRecord], dim: usize) -> Vec<(ExportRecord, Option<Vec<f32>>)> {
    records
        .iter()
        .map(|r| {
            let back: ExportRecord =
                serde_json::from_str(&serde_json::to_string(r).unwrap()).unwrap();
            let v = match &back {
                ExportRecord::Memory(m) => Some(HashEmbedder::vector_in(&m.text, dim)),
                ExportRecord::Page(p) => Some(HashEmbedder::vector_in(&p.text, dim)),
                _ => None,
            };
            (back, v)
        })
        .collect()
}

pub fn a_segments_event_time_is_stored_rewritten_and_exported(h: &dyn Harness) {
    let src = h.fresh();
    let s = scope("seg-time");
    let may = chrono::Utc.with_ymd_and_hms(2023, 5, 1, 0, 0, 0).unwrap();
    let mut dated = new_segment(&s, "the move to Lisbon");
    let mut e = event(may, 31, "last May");
    e.granularity = Granularity::Month;
    dated.event_time = Some(e.clone());
    segment_with_pages(src.as_ref(), &s, &dated, &["we moved to Lisbon last May"]);
    let undated = new_segment(&s, "tea");
    segment_with_pages(src.as_ref(), &s, &undated, &["green tea is nice"]);
    assert_eq!(
        stored(src.as_ref(), &s, dated.id).event_time,
        Some(e.clone())
    );
    assert_eq!(stored(src.as_ref(), &s, undated.id).event_time, None);

    // A rewrite carries the new span (a later page's week widens it).
    let mut wider = stored(src.as_ref(), &s, dated.id);
    let version = wider.version;
    let span = e.span(&event(
        may + chrono::Duration::days(40),
        7,
        "the week after",
    ));
    wider.event_time = Some(span.clone());
    let tiers = TierWrite {
        segments: vec![SegmentWrite {
            segment: wider,
            expected_version: Some(version),
        }],
        ..TierWrite::default()
    };
    src.write(vec![tier_batch(&s, tiers)]).expect("rewrite");
    let now = stored(src.as_ref(), &s, dated.id);
    assert_eq!(now.event_time, Some(span.clone()));
    assert_eq!((span.start, span.granularity), (may, Granularity::Month));
    assert_eq!(span.phrase, "", "a span of two phrases keeps none");

    let mut records = Vec::new();
    src.export(&mut |r| {
        records.push(r);
        Ok(())
    })
    .unwrap();
    let dst = h.fresh();
    dst.import(round_trip(&records, HashEmbedder::DIM))
        .expect("import");
    assert_eq!(stored(dst.as_ref(), &s, dated.id).event_time, Some(span));
    assert_eq!(stored(dst.as_ref(), &s, undated.id).event_time, None);
}

pub fn erasing_a_segments_messages_takes_their_event_time(h: &dyn Harness) {
    let store = h.fresh();
    let s = scope("seg-time-erase");
    let texts = [
        "we adopted Biscuit on 12 March 2021",
        "the lake trip was on 3 June 2022",
    ];
    let mut seg = new_segment(&s, "pets and trips");
    // What the planner gives these pages (tier::page_event_time), as the segment's span.
    seg.event_time = texts
        .iter()
        .filter_map(|t| tier::page_event_time(&format!("user: {t}"), chrono::Utc::now()))
        .reduce(|a, b| a.span(&b));
    let whole = seg.event_time.clone().expect("both pages state a date");
    assert_eq!(
        whole.start,
        chrono::Utc.with_ymd_and_hms(2021, 3, 12, 0, 0, 0).unwrap()
    );
    let ids = segment_with_pages(store.as_ref(), &s, &seg, &texts);
    assert_eq!(stored(store.as_ref(), &s, seg.id).event_time, Some(whole));

    // Erasing the first message leaves the date the second page states.
    store
        .erase(&EraseMemory::new(&s, ids[0], true), &WritePlan::default())
        .expect("erase");
    let left = stored(store.as_ref(), &s, seg.id)
        .event_time
        .expect("the trip's date");
    assert_eq!(
        left.start,
        chrono::Utc.with_ymd_and_hms(2022, 6, 3, 0, 0, 0).unwrap()
    );
    assert_eq!(left.end - left.start, chrono::Duration::days(1));
    assert!(!left.phrase.contains("March"), "{}", left.phrase);

    // Erasing the scope's log empties the segment: no event time, no phrase in an export.
    store
        .erase_log(
            &EraseLog::new(&s, EraseTarget::Scope).unwrap(),
            &WritePlan::default(),
        )
        .expect("erase the log");
    assert_eq!(stored(store.as_ref(), &s, seg.id).event_time, None);
    let mut exported = String::new();
    store
        .export(&mut |r| {
            exported.push_str(&serde_json::to_string(&r).unwrap());
            Ok(())
        })
        .unwrap();
    assert!(
        !exported.contains("3 June 2022"),
        "the phrase left the export"
    );
}
