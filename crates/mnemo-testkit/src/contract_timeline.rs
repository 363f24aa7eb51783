//! Contract cases for event time: written with the memory, shown by every read, ordered and
//! ranged by the timeline, filtered by `event_time`, carried through export and import, and
//! gone with an erase. Re-exported by `contract`.

use crate::contract::all;
use crate::*;
use chrono::TimeZone;
use mnemo_core::time::{EventTime, EventTimeSource, Granularity};
use mnemo_core::*;
use serde_json::json;

fn day(y: i32, m: u32, d: u32) -> Timestamp {
    chrono::Utc.with_ymd_and_hms(y, m, d, 0, 0, 0).unwrap()
}

/// An event time of `days` days from `start`, read from `phrase`.
pub fn event(start: Timestamp, days: i64, phrase: &str) -> EventTime {
    EventTime {
        start,
        end: start + chrono::Duration::days(days),
        granularity: if days == 1 {
            Granularity::Day
        } else {
            Granularity::Week
        },
        phrase: phrase.into(),
        source: EventTimeSource::Text,
    }
}

/// Writes one memory with `event_time` and returns its id.
pub fn put_event(store: &dyn Store, s: &Scope, text: &str, e: Option<EventTime>) -> MemoryId {
    let mut b = batch(s, text, json!({}));
    b.memories[0].event_time = e;
    store.write(vec![b]).expect("write succeeds")[0].results[0].id
}

fn timeline_query(s: &Scope, range: EventRange, limit: usize) -> TimelineQuery {
    TimelineQuery {
        scope: s.clone(),
        range,
        kinds: None,
        read: ReadOptions::default(),
        limit,
        cursor: None,
    }
}

/// Every entry of the scope's timeline in `range`, walked `limit` at a time.
fn walk(store: &dyn Store, s: &Scope, range: EventRange, limit: usize) -> Vec<String> {
    let mut q = timeline_query(s, range, limit);
    let mut out = Vec::new();
    loop {
        let page = store.timeline(&q).expect("timeline succeeds");
        assert!(page.results.len() <= limit);
        out.extend(page.results.into_iter().map(|m| m.text));
        match page.next_cursor {
            Some(c) => q.cursor = Some(c),
            None => return out,
        }
    }
}

pub fn event_time_is_stored_with_the_memory_and_shown_by_reads(h: &dyn Harness) {
    let store = h.fresh();
    let s = scope("tess");
    let e = event(day(2023, 5, 1), 7, "last week");
    let with = put_event(
        store.as_ref(),
        &s,
        "tess moved to Lisbon last week",
        Some(e.clone()),
    );
    let without = put_event(store.as_ref(), &s, "tess likes tea", None);
    let got = store.get(&s, with, &all(false)).unwrap();
    assert_eq!(got.event_time.as_ref(), Some(&e));
    assert_ne!(
        got.created_at, e.start,
        "event time is not the creation time"
    );
    assert_eq!(got.valid_from, None, "nor the valid time");
    assert_eq!(
        store.get(&s, without, &all(false)).unwrap().event_time,
        None
    );
    let listed = crate::contract::list_all(store.as_ref(), &s, 10);
    assert!(listed.iter().any(|m| m.event_time.as_ref() == Some(&e)));
    let store = h.reopen(store);
    assert_eq!(
        store.get(&s, with, &all(false)).unwrap().event_time,
        Some(e)
    );
}

pub fn the_timeline_orders_ranges_and_pages_events_of_the_scope(h: &dyn Harness) {
    let store = h.fresh();
    let s = scope("uma");
    // Written out of event order; one with no event time, one of another scope, one deleted.
    for (text, d) in [("c", 20), ("a", 2), ("e", 28), ("b", 9), ("d", 21)] {
        put_event(
            store.as_ref(),
            &s,
            text,
            Some(event(day(2023, 5, d), 1, "then")),
        );
    }
    put_event(store.as_ref(), &s, "undated", None);
    put_event(
        store.as_ref(),
        &scope("vic"),
        "other scope",
        Some(event(day(2023, 5, 3), 1, "then")),
    );
    let gone = put_event(
        store.as_ref(),
        &s,
        "gone",
        Some(event(day(2023, 5, 4), 1, "x")),
    );
    store
        .delete(&s, gone, DeleteMode::Soft, &WritePlan::default())
        .unwrap();
    let everything = EventRange::default();
    assert_eq!(
        walk(store.as_ref(), &s, everything, 100),
        ["a", "b", "c", "d", "e"]
    );
    for limit in [1, 2, 3] {
        assert_eq!(
            walk(store.as_ref(), &s, everything, limit),
            ["a", "b", "c", "d", "e"],
            "pages of {limit}"
        );
    }
    let may_9_to_21 =
        EventRange::new("from", Some(day(2023, 5, 9)), Some(day(2023, 5, 21))).unwrap();
    assert_eq!(walk(store.as_ref(), &s, may_9_to_21, 100), ["b", "c"]);
    let after = EventRange::new("from", Some(day(2023, 5, 21)), None).unwrap();
    assert_eq!(walk(store.as_ref(), &s, after, 100), ["d", "e"]);
    // Bad input: an inverted range, a limit of 0, another scope's cursor.
    let inverted = EventRange {
        from: Some(day(2023, 6, 1)),
        to: Some(day(2023, 5, 1)),
    };
    let e = store
        .timeline(&timeline_query(&s, inverted, 10))
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidInput, "{e}");
    let e = store
        .timeline(&timeline_query(&s, everything, 0))
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidInput, "{e}");
    let cursor = store
        .timeline(&timeline_query(&s, everything, 1))
        .unwrap()
        .next_cursor
        .expect("a next page");
    let mut foreign = timeline_query(&scope("vic"), everything, 10);
    foreign.cursor = Some(cursor);
    let e = store.timeline(&foreign).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidInput, "{e}");
}

pub fn event_candidates_keep_range_scope_and_pooled_keys(h: &dyn Harness) {
    let store = h.fresh();
    let s = scope("wes");
    let in_may = put_event(
        store.as_ref(),
        &s,
        "may thing",
        Some(event(day(2023, 5, 10), 1, "x")),
    );
    put_event(
        store.as_ref(),
        &s,
        "june thing",
        Some(event(day(2023, 6, 10), 1, "y")),
    );
    put_event(store.as_ref(), &s, "no date", None);
    put_event(
        store.as_ref(),
        &scope("xia"),
        "other may thing",
        Some(event(day(2023, 5, 11), 1, "x")),
    );
    let may = EventRange::new("event_time", Some(day(2023, 5, 1)), Some(day(2023, 6, 1))).unwrap();
    let read = all(false);
    let found = store
        .event_candidates(&candidates(&s, read), &may, &[])
        .unwrap();
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0].score, 1.0);
    let loaded = store.fetch(&candidates(&s, read), &[found[0].key]).unwrap();
    assert_eq!(loaded[0].1.id, in_may);
    // A pooled key in the range comes back even when the extra candidates are capped at 0.
    let mut capped = candidates(&s, read);
    capped.limit = 0;
    let again = store
        .event_candidates(&capped, &may, &[found[0].key, 999_999])
        .unwrap();
    assert_eq!(again, found);
}

pub fn the_event_time_filter_keeps_overlapping_memories(h: &dyn Harness) {
    let store = h.fresh();
    let s = scope("yan");
    put_event(
        store.as_ref(),
        &s,
        "week of may 1",
        Some(event(day(2023, 5, 1), 7, "x")),
    );
    put_event(
        store.as_ref(),
        &s,
        "may 20",
        Some(event(day(2023, 5, 20), 1, "x")),
    );
    put_event(store.as_ref(), &s, "no date", None);
    let f = Filter::from_json(&json!({"event_time": {
        "gte": "2023-05-05T00:00:00Z", "lt": "2023-05-10T00:00:00Z"
    }}))
    .unwrap();
    let page = store
        .list(
            &ListQuery::new(s.clone(), 10)
                .with_filter(f.clone())
                .with_read(all(false)),
        )
        .unwrap();
    let texts: Vec<&str> = page.results.iter().map(|m| m.text.as_str()).collect();
    assert_eq!(texts, ["week of may 1"]);
    // Under NOT, a memory without an event time is kept (it is not in the range).
    let not = Filter::Not(Box::new(f.unwrap()));
    let page = store
        .list(&ListQuery::new(s, 10).with_filter(not).with_read(all(false)))
        .unwrap();
    let mut texts: Vec<&str> = page.results.iter().map(|m| m.text.as_str()).collect();
    texts.sort_unstable();
    assert_eq!(texts, ["may 20", "no date"]);
}

pub fn event_time_survives_export_and_import(h: &dyn Harness) {
    let src = h.fresh();
    let s = scope("zoe");
    let mut e = event(day(2021, 6, 21), 92, "last summer");
    e.granularity = Granularity::Season;
    e.source = EventTimeSource::Model;
    let id = put_event(src.as_ref(), &s, "zoe hiked last summer", Some(e.clone()));
    let mut records = Vec::new();
    src.export(&mut |r| {
        records.push(r);
        Ok(())
    })
    .unwrap();
    let lines: Vec<(ExportRecord, Option<Vec<f32>>)> = records
        .iter()
        .map(|r| {
            let line = serde_json::to_string(r).unwrap();
            let back: ExportRecord = serde_json::from_str(&line).unwrap();
            let v = match &back {
                ExportRecord::Memory(m) => Some(HashEmbedder::vector(&m.text)),
                _ => None,
            };
            (back, v)
        })
        .collect();
    let dst = h.fresh();
    dst.import(lines).unwrap();
    assert_eq!(dst.get(&s, id, &all(false)).unwrap().event_time, Some(e));
    assert_eq!(
        walk(dst.as_ref(), &s, EventRange::default(), 10),
        ["zoe hiked last summer"]
    );
}

pub fn erase_removes_the_event_time_and_its_phrase(h: &dyn Harness) {
    let store = h.fresh();
    let s = scope("abe");
    let secret = "the night of the quiet heist";
    let id = put_event(
        store.as_ref(),
        &s,
        "abe met Kim on the night of the quiet heist",
        Some(event(day(2022, 3, 4), 1, secret)),
    );
    store
        .erase(&EraseMemory::new(&s, id, true), &WritePlan::default())
        .unwrap();
    let inactive = ReadOptions {
        include_inactive: true,
        ..all(true)
    };
    assert_eq!(store.get(&s, id, &inactive).unwrap().event_time, None);
    assert!(walk(store.as_ref(), &s, EventRange::default(), 10).is_empty());
    let mut exported = String::new();
    store
        .export(&mut |r| {
            exported.push_str(&serde_json::to_string(&r).unwrap());
            Ok(())
        })
        .unwrap();
    assert!(!exported.contains(secret), "the phrase left the export");
}
