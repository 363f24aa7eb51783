//! Contract cases for what reads show: the one visibility rule on every path, erasure of every
//! copy of a text, the message log, numbered pages and cursors, export and import. Re-exported
//! by `contract`.

use crate::contract::{all, assert_not_found};
use crate::*;
use mnemo_core::*;
use serde_json::json;

pub fn export_import_round_trip(h: &dyn Harness) {
    let src = h.fresh();
    let s = Scope::from_parts(Some("nora"), Some("bot"), None).unwrap();
    let keep = put(src.as_ref(), &s, "nora keeps bees", json!({"zip": "0012"}));
    let gone = put(src.as_ref(), &s, "nora forgot this", json!({}));
    src.delete(&s, gone, DeleteMode::Soft, &WritePlan::default())
        .unwrap();
    let mut records = Vec::new();
    src.export(&mut |r| {
        records.push(r);
        Ok(())
    })
    .unwrap();
    let dst = h.fresh();
    let lines: Vec<String> = records
        .iter()
        .map(|r| serde_json::to_string(r).unwrap())
        .collect();
    let parsed: Vec<(ExportRecord, Option<Vec<f32>>)> = lines
        .iter()
        .map(|l| {
            let r: ExportRecord = serde_json::from_str(l).unwrap();
            let v = match &r {
                ExportRecord::Memory(m) if m.state != MemoryState::Deleted => {
                    Some(HashEmbedder::vector(&m.text))
                }
                _ => None,
            };
            (r, v)
        })
        .collect();
    assert_eq!(
        dst.import(parsed.clone()).unwrap(),
        7,
        "two messages, two memories and their three history events (two ADD, one DELETE)"
    );
    assert_eq!(
        dst.import(parsed).unwrap(),
        0,
        "importing twice writes nothing"
    );
    let a = src.get(&s, keep, &all(false)).unwrap();
    let b = dst.get(&s, keep, &all(false)).unwrap();
    assert_eq!(a, b);
    let inactive = ReadOptions {
        include_inactive: true,
        ..all(true)
    };
    assert_eq!(
        dst.get(&s, gone, &inactive).unwrap().state,
        MemoryState::Deleted
    );
    assert!(dst.integrity().unwrap().is_consistent());
}

pub fn messages_are_an_ordered_log(h: &dyn Harness) {
    let store = h.fresh();
    let s = scope("olga");
    for i in 0..12 {
        put(store.as_ref(), &s, &format!("turn {i}"), json!({}));
    }
    let recent = store.messages(&s, None, 5).unwrap();
    let texts: Vec<&str> = recent.iter().map(|m| m.content.as_str()).collect();
    assert_eq!(
        texts,
        vec!["turn 7", "turn 8", "turn 9", "turn 10", "turn 11"]
    );
    // Interleaved sessions: a session's window skips the other's messages.
    for i in 0..6 {
        let mut b = batch(&s, &format!("session turn {i}"), json!({}));
        b.messages[0].session_id = Some(if i % 2 == 0 { "even" } else { "odd" }.into());
        store.write(vec![b]).unwrap();
    }
    let even = store.messages(&s, Some("even"), 2).unwrap();
    let texts: Vec<&str> = even.iter().map(|m| m.content.as_str()).collect();
    assert_eq!(texts, vec!["session turn 2", "session turn 4"]);
    assert!(store.messages(&s, Some("none"), 5).unwrap().is_empty());
    assert!(store
        .messages(&scope("nobody"), None, 5)
        .unwrap()
        .is_empty());
}

/// Numbered pages (Mem0's `page`): `locate` counts what a listing matches — scope, filter and
/// visibility applied as `list` applies them — and positions a cursor so that `list` starts
/// right after the first `skip` matches, at any depth; past the end there is no cursor.
pub fn numbered_pages_are_located_by_count_and_cursor(h: &dyn Harness) {
    let store = h.fresh();
    let s = scope("wren");
    let other = scope("xavier");
    let mut ids = Vec::new();
    for i in 0..25 {
        ids.push(put(
            store.as_ref(),
            &s,
            &format!("note {i}"),
            json!({"even": i % 2 == 0}),
        ));
        put(store.as_ref(), &other, &format!("other {i}"), json!({}));
    }
    store
        .delete(&s, ids[3], DeleteMode::Soft, &WritePlan::default())
        .unwrap();
    let visible: Vec<MemoryId> = ids.iter().copied().filter(|id| *id != ids[3]).collect();
    let query = |filter: Option<Filter>| {
        ListQuery::new(s.clone(), 5)
            .with_filter(filter)
            .with_cursor("ignored".to_string())
            .with_read(all(false))
    };
    let q = query(None);
    for skip in [0u64, 1, 5, 23, 24, 25, 1_000_000] {
        let pos = store.locate(&q, skip).unwrap();
        assert_eq!(pos.total, 24, "skip {skip}");
        assert_eq!(pos, locate_by_walking(store.as_ref(), &q, skip).unwrap());
        if skip == 0 || skip >= 24 {
            assert_eq!(pos.cursor, None, "skip {skip}");
            continue;
        }
        let page = store
            .list(&q.clone().with_cursor(pos.cursor.clone()))
            .unwrap();
        let want: Vec<MemoryId> = visible
            .iter()
            .skip(skip as usize)
            .take(5)
            .copied()
            .collect();
        assert_eq!(
            page.results.iter().map(|m| m.id).collect::<Vec<_>>(),
            want,
            "skip {skip}"
        );
    }
    // A filter is counted as `list` applies it: 13 even notes (the deleted #3 was odd).
    let fq = query(Filter::from_json(&json!({"even": true})).unwrap());
    let pos = store.locate(&fq, 10).unwrap();
    assert_eq!(pos.total, 13);
    let page = store.list(&fq.with_cursor(pos.cursor)).unwrap();
    assert_eq!(
        page.results.iter().map(|m| m.id).collect::<Vec<_>>(),
        vec![ids[20], ids[22], ids[24]]
    );
}

/// Erasure: every copy of a memory's text goes — its row, lexical and dense entries, history,
/// the context windows of its neighbours, a stored idempotent result, an entity only it named,
/// and (when asked) its source message — in one call, leaving the id, times and an `ERASE`
/// event with who and why. Another scope cannot erase it. (Whether the bytes are gone from the
/// backend's files is each backend's own test.)
pub fn erase_removes_every_copy_of_the_text(h: &dyn Harness) {
    let store = h.fresh();
    let s = scope("yara");
    let secret = "passport QX7741 expires soon";
    let other = "Yara flies to Quito on Friday";
    let now = chrono::Utc::now();
    let m1 = Message::new(&s, Role::User, None, secret.to_string(), now);
    let m2 = Message::new(&s, Role::User, None, other.to_string(), now);
    let mut a = NewMemory::raw(&m1, &s, Metadata::new(), None, HashEmbedder::vector(secret));
    a.index_text = Some(format!("{secret}\n{other}"));
    a.entities = vec![
        EntityMention::new("QX7741", "code"),
        EntityMention::new("Yara", "person"),
    ];
    let mut b = NewMemory::raw(&m2, &s, Metadata::new(), None, HashEmbedder::vector(other));
    b.index_text = Some(format!("{other}\n{secret}"));
    b.entities = vec![EntityMention::new("Yara", "person")];
    let mut w = WriteBatch::new(s.clone(), vec![m1.clone(), m2.clone()], vec![a, b]);
    w.idempotency = Some(Idempotency {
        key: "k-erase".into(),
        request_hash: "h1".into(),
    });
    let out = store.write(vec![w]).unwrap();
    let (id, kept) = (out[0].results[0].id, out[0].results[1].id);
    store
        .update(
            &s,
            id,
            MemoryPatch {
                text: Some(format!("{secret}!")),
                vector: Some(HashEmbedder::vector(secret)),
                ..MemoryPatch::default()
            },
            &WritePlan::default(),
        )
        .unwrap();

    let ctx = WritePlan {
        actor: Some("dpo@example.com".into()),
        reason: Some("erasure request #12".into()),
        ..WritePlan::default()
    };
    assert_not_found(
        store.erase(&EraseMemory::new(&scope("zed"), id, true), &ctx),
        "another scope's erase",
    );
    let report = store.erase(&EraseMemory::new(&s, id, true), &ctx).unwrap();
    assert_eq!(report.id, id);
    assert_eq!(report.messages_erased, 1);
    assert_eq!(report.neighbours_reindexed, 1);
    assert_eq!(
        report.entities_removed, 1,
        "QX7741 named only the erased memory"
    );
    assert_eq!(report.replays_scrubbed, 1);

    let inactive = ReadOptions {
        include_inactive: true,
        include_expired: true,
        ..ReadOptions::default()
    };
    let m = store.get(&s, id, &inactive).unwrap();
    assert_eq!((m.text.as_str(), m.state), ("", MemoryState::Deleted));
    assert!(m.metadata.is_empty());
    assert_not_found(
        store.get(&s, id, &all(false)),
        "an erased memory by default",
    );
    let events = store.history(&HistoryQuery::new(&s, id, inactive)).unwrap();
    let last = events.last().unwrap();
    assert_eq!(last.event, HistoryKind::Erase);
    assert_eq!(last.actor.as_deref(), Some("dpo@example.com"));
    assert_eq!(last.reason.as_deref(), Some("erasure request #12"));
    let leaks = |t: &Option<String>| t.as_deref().is_some_and(|t| t.contains("QX7741"));
    assert!(
        !events
            .iter()
            .any(|e| leaks(&e.old_memory) || leaks(&e.new_memory)),
        "{events:?}"
    );
    // Neither index finds it, and its neighbour no longer matches its words.
    let q = candidates(&s, inactive);
    let lexical = store
        .lexical_candidates(&q, &["qx7741".to_string()])
        .unwrap();
    assert!(lexical.is_empty(), "{lexical:?}");
    let dense = store
        .dense_candidates(&q, &HashEmbedder::vector(secret))
        .unwrap();
    let keys: Vec<i64> = dense.iter().map(|c| c.key).collect();
    assert!(store
        .fetch(&q, &keys)
        .unwrap()
        .iter()
        .all(|(_, m)| m.id != id));
    let still = store
        .lexical_candidates(&q, &["quito".to_string()])
        .unwrap();
    assert_eq!(
        still.len(),
        1,
        "the neighbour stays indexed by its own words"
    );
    let n = store.get(&s, kept, &all(false)).unwrap();
    assert_eq!(n.text, other);
    // The source message is blank; the neighbour's is untouched.
    let msgs = store.messages_by_id(&s, &[m1.id, m2.id]).unwrap();
    assert_eq!(msgs.len(), 2);
    assert!(
        msgs.iter().all(|m| !m.content.contains("QX7741")),
        "{msgs:?}"
    );
    assert!(msgs.iter().any(|m| m.content == other));
    // The stored result of the add keeps ids and events, not the text.
    let replay = store
        .replay(
            &s,
            &Idempotency {
                key: "k-erase".into(),
                request_hash: "h1".into(),
            },
        )
        .unwrap()
        .expect("the outcome is still stored");
    assert_eq!(replay.results[0].id, id);
    assert!(!serde_json::to_string(&replay).unwrap().contains("QX7741"));
    assert!(store.entities_of(&s, id).unwrap().is_empty());
    assert!(store.integrity().unwrap().is_consistent());
}

/// The visibility rule is written once (`ReadOptions::admits`); every read path of a backend
/// must agree with it, for current-view, inactive, expired and as-of reads: `list`, `get`,
/// `fetch` of search candidates and duplicate detection by hash.
pub fn visibility_follows_the_one_rule_on_every_path(h: &dyn Harness) {
    use chrono::Duration as D;
    let store = h.fresh();
    let s = scope("xena");
    let t0 = chrono::Utc::now() - D::days(400);
    let past = chrono::Utc::now() - D::hours(1);
    // Lived in Oslo from t0, moved to Rome at t0+200d (Oslo superseded then).
    let mut oslo = batch_at(&s, "Xena lives in Oslo", json!({}), t0, None);
    oslo.memories[0].valid_from = Some(t0);
    let oslo_id = oslo.memories[0].id;
    store.write(vec![oslo]).unwrap();
    let moved = t0 + D::days(200);
    let mut rome = batch_at(&s, "Xena lives in Rome", json!({}), moved, None);
    rome.memories[0].valid_from = Some(moved);
    let rome_id = rome.memories[0].id;
    rome.changes.push(Supersession {
        old: oslo_id,
        by: Some(rome_id),
        state: MemoryState::Superseded,
        valid_until: moved,
        reason: None,
    });
    store.write(vec![rome]).unwrap();
    let expired = {
        let b = batch_at(&s, "Xena's coupon code", json!({}), t0, Some(past));
        let id = b.memories[0].id;
        store.write(vec![b]).unwrap();
        id
    };
    let deleted = put(store.as_ref(), &s, "Xena's old phone", json!({}));
    store
        .delete(&s, deleted, DeleteMode::Soft, &WritePlan::default())
        .unwrap();
    let every = ReadOptions {
        include_expired: true,
        include_inactive: true,
        ..ReadOptions::default()
    };
    let ids = [oslo_id, rome_id, expired, deleted];
    let records: Vec<Memory> = ids
        .iter()
        .map(|id| store.get(&s, *id, &every).unwrap())
        .collect();
    let mut reads = Vec::new();
    for include_expired in [false, true] {
        for include_inactive in [false, true] {
            for as_of in [
                None,
                Some(t0 + D::days(100)),
                Some(t0 + D::days(300)),
                Some(t0 - D::days(1)),
            ] {
                reads.push(ReadOptions {
                    include_expired,
                    include_inactive,
                    as_of,
                    ..ReadOptions::default()
                });
            }
        }
    }
    let listed = |read: ReadOptions| -> Vec<Memory> {
        store
            .list(&ListQuery::new(s.clone(), 100).with_read(read))
            .unwrap()
            .results
    };
    for read in reads {
        let want: Vec<MemoryId> = records
            .iter()
            .filter(|m| m.visible(&read))
            .map(|m| m.id)
            .collect();
        let listed: Vec<MemoryId> = listed(read).iter().map(|m| m.id).collect();
        assert_eq!(listed, want, "list under {read:?}");
        for m in &records {
            assert_eq!(
                store.get(&s, m.id, &read).is_ok(),
                m.visible(&read),
                "get {} under {read:?}",
                m.text
            );
        }
        let q = candidates(&s, read);
        let mut fetched: Vec<MemoryId> = store
            .lexical_candidates(&q, &["xena".to_string()])
            .unwrap()
            .iter()
            .filter_map(|c| store.fetch(&q, &[c.key]).unwrap().pop().map(|(_, m)| m.id))
            .collect();
        fetched.sort();
        let mut indexed: Vec<MemoryId> = want.iter().copied().filter(|id| *id != deleted).collect();
        indexed.sort();
        assert_eq!(fetched, indexed, "search candidates under {read:?}");
    }
    // As of day 100 Xena lived in Oslo; as of day 300, in Rome.
    let at = |days| {
        listed(ReadOptions {
            as_of: Some(t0 + D::days(days)),
            ..ReadOptions::default()
        })
        .into_iter()
        .map(|m| m.text)
        .filter(|t| t.contains("lives"))
        .collect::<Vec<_>>()
    };
    assert_eq!(at(100), ["Xena lives in Oslo"]);
    assert_eq!(at(300), ["Xena lives in Rome"]);
    // A restated fact whose identical copy has expired is not a duplicate.
    let hash = content_hash("Xena's coupon code");
    assert!(store.find_by_hash(&s, &[hash]).unwrap().is_empty());
}

/// A list cursor is good only for the scope that got it (another scope's, or a changed one, is
/// invalid input, not a way to read from elsewhere), and stays good across a reopen.
pub fn cursors_are_bound_to_their_scope_and_survive_reopen(h: &dyn Harness) {
    let store = h.fresh();
    let (a, b) = (scope("abe"), scope("bea"));
    for i in 0..3 {
        put(store.as_ref(), &a, &format!("abe note {i}"), json!({}));
        put(store.as_ref(), &b, &format!("bea note {i}"), json!({}));
    }
    let page = |store: &dyn Store, s: &Scope, cursor: Option<String>| {
        store.list(
            &ListQuery::new(s.clone(), 1)
                .with_cursor(cursor)
                .with_read(all(false)),
        )
    };
    let first = page(store.as_ref(), &a, None).unwrap();
    let c = first.next_cursor.clone().expect("more pages");
    let err = page(store.as_ref(), &b, Some(c.clone())).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidInput, "{err}");
    let mut tampered = c.clone().into_bytes();
    let last = tampered.len() - 1;
    tampered[last] = if tampered[last] == b'0' { b'1' } else { b'0' };
    let err = page(
        store.as_ref(),
        &a,
        Some(String::from_utf8(tampered).unwrap()),
    )
    .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidInput, "{err}");
    let store = h.reopen(store);
    let second = page(store.as_ref(), &a, Some(c)).unwrap();
    assert_eq!(second.results[0].text, "abe note 1");
}
