//! The store contract for the hierarchy, moves: pages in the short-term window, moves to
//! segments in the add's transaction with snapshot checks, tiers that come from a write's plan,
//! and segment rewrites under optimistic versions. Fixtures in `contract_tier_fixtures`, the
//! rest of the hierarchy's life in `contract_tier_lifecycle`. Re-exported by `contract`.

use crate::contract_tier_fixtures::*;
use crate::*;
use mnemo_core::tier::{PageMove, SegmentWrite};
use mnemo_core::*;

pub fn pages_enter_the_window_in_order(h: &dyn Harness) {
    let store = h.fresh();
    let s = scope("tiers-window");
    let a = put_page(store.as_ref(), &s, Some("s1"), "we planned the lake trip");
    let b = put_page(store.as_ref(), &s, Some("s1"), "the weather looked fine");
    let other_session = put_page(store.as_ref(), &s, Some("s2"), "a different chat");
    let no_session = put_page(store.as_ref(), &s, None, "a lone note");
    assert_eq!(window(store.as_ref(), &s, Some("s1")), vec![a, b]);
    assert_eq!(window(store.as_ref(), &s, Some("s2")), vec![other_session]);
    assert_eq!(window(store.as_ref(), &s, None), vec![no_session]);
    let p = page(store.as_ref(), a);
    assert_eq!(p.tier, PageTier::Short);
    assert_eq!(p.text, "user: we planned the lake trip");
    assert_eq!(p.session_id.as_deref(), Some("s1"));
    assert_eq!(p.vector, HashEmbedder::vector("we planned the lake trip"));
    assert!(!p.analysed && p.segment.is_none() && p.continues.is_none());
    assert_eq!(p.message_ids.len(), 1);
    let msgs = store.messages_by_id(&s, &p.message_ids).expect("messages");
    assert_eq!(msgs[0].content, "we planned the lake trip");
    // `limit` keeps the newest pages, still oldest first.
    let newest = store
        .pages(&PageQuery {
            scope: Some(s.clone()),
            limit: Some(2),
            ..PageQuery::default()
        })
        .expect("pages");
    let ids: Vec<PageId> = newest.iter().map(|p| p.id).collect();
    assert_eq!(ids, vec![other_session, no_session]);
    assert!(newest[0].seq < newest[1].seq);
    assert_eq!(store.integrity().expect("integrity").pages, 4);
}

pub fn pages_move_into_segments_in_one_transaction(h: &dyn Harness) {
    let store = h.fresh();
    let s = scope("tiers-move");
    let a = put_page(
        store.as_ref(),
        &s,
        Some("s"),
        "first exchange about gardening",
    );
    let b = put_page(
        store.as_ref(),
        &s,
        Some("s"),
        "second exchange about tomatoes",
    );
    let seg = move_into_new(store.as_ref(), &s, &[a]);
    assert_eq!(seg.version, 1, "a new segment starts at version 1");
    let moved = page(store.as_ref(), a);
    assert_eq!(moved.tier, PageTier::Mid);
    assert_eq!(moved.segment, Some(seg.id));
    assert_eq!(window(store.as_ref(), &s, Some("s")), vec![b]);

    // A stale plan (the page already left the window) fails the whole batch: the add's memory,
    // its new page and the new segment are not written either.
    let before = store.integrity().expect("integrity");
    let segments_before = store.segments(&s, true, true).expect("segments").len();
    let (mut add, new_page) = page_batch(&s, Some("s"), "third exchange");
    let stale = new_segment(&s, "stale");
    add.tiers.segments.push(SegmentWrite {
        segment: stale.clone(),
        expected_version: None,
    });
    add.tiers.moves.push(PageMove {
        page: a,
        segment: stale.id,
        continues: None,
    });
    let err = store.write(vec![add]).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Conflict, "{err}");
    let after = store.integrity().expect("integrity");
    assert_eq!(
        (after.memories, after.messages, after.pages),
        (before.memories, before.messages, before.pages)
    );
    assert_eq!(
        store.segments(&s, true, true).expect("segments").len(),
        segments_before
    );
    assert!(store
        .pages(&PageQuery {
            ids: Some(vec![new_page]),
            ..PageQuery::default()
        })
        .expect("pages")
        .is_empty());
    // A move into a segment that does not exist is refused the same way.
    let err = store
        .write(vec![tier_batch(
            &s,
            TierWrite {
                moves: vec![PageMove {
                    page: b,
                    segment: SegmentId::new(),
                    continues: None,
                }],
                ..TierWrite::default()
            },
        )])
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Conflict, "{err}");
    assert_eq!(page(store.as_ref(), b).tier, PageTier::Short);
    assert!(store.integrity().expect("integrity").is_consistent());
}

/// `Store::write_planned`: the batches come without hierarchy changes and the plan brings
/// them, written in the same transaction. The plan's error, a plan of the wrong length, a bad
/// or stale tier write, or a batch that brings its own tiers: the whole write fails and nothing
/// of it stays (a store that writes the plan last must roll its records back). A replayed
/// batch writes nothing of its plan.
pub fn planned_writes_take_their_tiers_from_the_plan(h: &dyn Harness) {
    let store = h.fresh();
    let s = scope("tiers-planned");
    let st = store.as_ref();
    let planned = |b: WriteBatch, tiers: Vec<TierWrite>| {
        st.write_planned(vec![b], Box::new(move || Ok(tiers)))
    };

    // The plan's page lands in the window with the batch's records.
    let (mut b, a) = page_batch(&s, Some("s"), "we planned the lake trip");
    let tiers = std::mem::take(&mut b.tiers);
    let out = planned(b, vec![tiers]).expect("a planned write succeeds");
    assert_eq!(out.len(), 1);
    assert!(!out[0].replayed);
    assert_eq!(window(st, &s, Some("s")), vec![a]);
    assert_eq!(memories_of(st, &s), 1);

    // A batch that brings its own tiers is refused.
    let (b, _) = page_batch(&s, Some("s"), "a batch with its own page");
    let err = planned(b, vec![TierWrite::default()]).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidInput, "{err}");

    // The plan's own error is the write's.
    let (mut b, _) = page_batch(&s, Some("s"), "the planner fails");
    b.tiers = TierWrite::default();
    let err = st
        .write_planned(
            vec![b],
            Box::new(|| {
                Err(Error::Unavailable {
                    component: "planner".into(),
                    reason: "test".into(),
                })
            }),
        )
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Unavailable, "{err}");

    // A plan with one tier write too many.
    let (mut b, _) = page_batch(&s, Some("s"), "two plans for one batch");
    let tiers = std::mem::take(&mut b.tiers);
    assert!(planned(b, vec![tiers, TierWrite::default()]).is_err());

    // A page whose vector has the wrong dimension.
    let (mut b, _) = page_batch(&s, Some("s"), "a page of the wrong size");
    let mut tiers = std::mem::take(&mut b.tiers);
    tiers.pages[0].vector.push(0.5);
    let err = planned(b, vec![tiers]).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidInput, "{err}");

    // A stale segment rewrite: known only once the records are written.
    let seg = move_into_new(st, &s, &[a]);
    let mut stale = seg.clone();
    stale.summary = "a stale summary".into();
    let (mut b, _) = page_batch(&s, Some("s"), "a plan from an old snapshot");
    let mut tiers = std::mem::take(&mut b.tiers);
    tiers.segments.push(SegmentWrite {
        segment: stale,
        expected_version: Some(seg.version + 5),
    });
    let err = planned(b, vec![tiers]).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Conflict, "{err}");

    // None of the failed writes left a memory, a message or a page.
    assert_eq!(memories_of(st, &s), 1);
    assert_eq!(
        st.messages(&s, Some("s"), 100).expect("messages").len(),
        1,
        "only the first write's message is logged"
    );
    assert!(window(st, &s, Some("s")).is_empty(), "the first page moved");
    assert_eq!(
        st.segments(&s, true, false).expect("segments")[0].summary,
        seg.summary
    );

    // A replay writes nothing of its plan.
    let idem = Idempotency {
        key: "planned-1".into(),
        request_hash: "h".into(),
    };
    let (mut b, _) = page_batch(&s, Some("t"), "a keyed planned add");
    b.idempotency = Some(idem.clone());
    let tiers = std::mem::take(&mut b.tiers);
    let first = planned(b.clone(), vec![tiers.clone()]).expect("first try");
    assert!(!first[0].replayed);
    let mut again = tiers;
    again.pages[0].id = PageId::new();
    let second = planned(b, vec![again]).expect("the retry is replayed");
    assert!(second[0].replayed);
    assert_eq!(
        window(st, &s, Some("t")).len(),
        1,
        "the replay opened no page"
    );
}

pub fn segment_rewrites_check_their_version(h: &dyn Harness) {
    let store = h.fresh();
    let s = scope("tiers-version");
    let a = put_page(store.as_ref(), &s, Some("s"), "hiking in the alps");
    let b = put_page(store.as_ref(), &s, Some("s"), "more hiking in the alps");
    let seg = move_into_new(store.as_ref(), &s, &[a]);
    let mut joined = seg.clone();
    joined.summary = "hiking trips".into();
    joined.page_count = 2;
    let ok = TierWrite {
        segments: vec![SegmentWrite {
            segment: joined.clone(),
            expected_version: Some(seg.version),
        }],
        moves: vec![PageMove {
            page: b,
            segment: seg.id,
            continues: Some(a),
        }],
        ..TierWrite::default()
    };
    store
        .write(vec![tier_batch(&s, ok)])
        .expect("a current rewrite succeeds");
    let now = &store.segments(&s, true, false).expect("segments")[0];
    assert_eq!((now.version, now.page_count), (2, 2));
    assert_eq!(now.summary, "hiking trips");
    // The continuity link is kept on the page.
    assert_eq!(page(store.as_ref(), b).continues, Some(a));

    // The same rewrite again is stale.
    let stale = TierWrite {
        segments: vec![SegmentWrite {
            segment: joined,
            expected_version: Some(seg.version),
        }],
        ..TierWrite::default()
    };
    let err = store.write(vec![tier_batch(&s, stale)]).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Conflict, "{err}");
    assert_eq!(
        store.segments(&s, true, false).expect("segments")[0].version,
        2
    );

    // A continuity link to a page that is not the scope's is invalid input.
    let c = put_page(store.as_ref(), &s, Some("s"), "yet another hike");
    let bad = TierWrite {
        moves: vec![PageMove {
            page: c,
            segment: seg.id,
            continues: Some(PageId::new()),
        }],
        ..TierWrite::default()
    };
    let err = store.write(vec![tier_batch(&s, bad)]).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidInput, "{err}");
    assert_eq!(page(store.as_ref(), c).tier, PageTier::Short);
}
