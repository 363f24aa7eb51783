//! Contract cases where the job queue meets the message log: a job's messages are logged with
//! it (or, when refused, not at all), an erased turn is never written back, and an erase
//! empties the jobs that carry its text. Re-exported by `contract_jobs`.

use crate::contract_jobs::{job, lease, queue, s1_log, t, turn, with_turns};
use crate::*;
use mnemo_core::*;

/// An enqueue logs the job's messages in its own transaction: before any claim the log, the
/// session listing and the session's messages show them, and the job is pending. A message
/// already logged is not logged again, by a later enqueue or by the write of the job's add
/// (which names the same message ids).
pub fn a_jobs_messages_are_logged_with_it(h: &dyn Harness) {
    let store = h.fresh();
    let q = queue(store.as_ref());
    let ana = scope("ana");
    let (a, b) = (
        turn("ana", 0, "I keep bees on the roof"),
        turn("ana", 1, "How many hives?"),
    );
    let stored = q
        .enqueue(&with_turns("j1", "ana", &[&a, &b]))
        .expect("enqueued");
    assert_eq!((stored.status, stored.attempts), (JobStatus::Pending, 0));
    assert_eq!(s1_log(store.as_ref(), "ana"), vec![a.clone(), b.clone()]);
    assert_eq!(
        store
            .session_messages(&SessionLogQuery {
                scope: &ana,
                session: "s1",
                after: None,
                limit: 10
            })
            .expect("session messages"),
        vec![a.clone(), b.clone()]
    );
    let sessions = store
        .sessions(
            &ana,
            &SessionQuery {
                after: None,
                only: None,
                limit: 10,
            },
        )
        .expect("sessions");
    assert_eq!(sessions.len(), 1, "{sessions:?}");
    assert_eq!(
        (sessions[0].session_id.as_str(), sessions[0].messages),
        ("s1", 2)
    );
    assert_eq!(
        store
            .messages_by_id(&ana, &[a.id, b.id])
            .expect("by id")
            .len(),
        2
    );
    assert_eq!(q.queue_stats().expect("stats").pending, 1);
    assert!(
        store
            .messages(&scope("bob"), None, 10)
            .expect("bob")
            .is_empty(),
        "only the job's scope is written"
    );

    // Another job naming a logged message logs only its new one.
    let c = turn("ana", 2, "Three hives");
    q.enqueue(&with_turns("j2", "ana", &[&b, &c]))
        .expect("enqueued");
    assert_eq!(
        s1_log(store.as_ref(), "ana"),
        vec![a.clone(), b.clone(), c.clone()]
    );

    // The job's add, when it runs, writes the same turns: they stay logged once, and its
    // memory's source is the logged turn.
    let raw = NewMemory::raw(
        &a,
        &ana,
        Metadata::new(),
        None,
        HashEmbedder::vector(&a.content),
    );
    let out = store
        .write(vec![WriteBatch::new(
            ana.clone(),
            vec![a.clone()],
            vec![raw],
        )])
        .expect("the job's add");
    let id = out[0].results[0].id;
    assert_eq!(s1_log(store.as_ref(), "ana"), vec![a.clone(), b, c]);
    let memory = store
        .get(&ana, id, &ReadOptions::default())
        .expect("written");
    assert_eq!(memory.sources, vec![a.id]);
}

/// A refused enqueue logs nothing: not the messages of a job whose id is taken, nor those of a
/// job with a message of another scope, nor any of a job naming a message an erase emptied
/// (the erased turn stays empty, and no job is stored).
pub fn a_refused_enqueue_logs_nothing(h: &dyn Harness) {
    let store = h.fresh();
    let q = queue(store.as_ref());
    let ana = scope("ana");
    let a = turn("ana", 0, "my locker code is 5521");
    q.enqueue(&with_turns("j1", "ana", &[&a]))
        .expect("enqueued");
    let (b, c) = (turn("ana", 1, "noted"), turn("ana", 2, "and the gym?"));
    let dup = q
        .enqueue(&with_turns("j1", "ana", &[&b, &c]))
        .expect_err("the id is taken");
    assert_eq!(dup.kind(), ErrorKind::Conflict);
    assert!(store
        .messages_by_id(&ana, &[b.id, c.id])
        .expect("by id")
        .is_empty());
    assert_eq!(s1_log(store.as_ref(), "ana"), vec![a.clone()]);

    let foreign = turn("bob", 3, "not ana's");
    let mixed = q
        .enqueue(&with_turns("j2", "ana", &[&b, &foreign]))
        .expect_err("a message of another scope");
    assert_eq!(mixed.kind(), ErrorKind::InvalidInput);
    assert_eq!(q.job("j2").expect("read"), None);
    assert!(store
        .messages(&scope("bob"), None, 10)
        .expect("bob")
        .is_empty());
    assert_eq!(s1_log(store.as_ref(), "ana"), vec![a.clone()]);

    store
        .erase_log(
            &EraseLog::new(&ana, EraseTarget::Session("s1")).unwrap(),
            &WritePlan::default(),
        )
        .expect("erased");
    let again = q
        .enqueue(&with_turns("j3", "ana", &[&b, &a]))
        .expect_err("an erased turn");
    assert_eq!(again.kind(), ErrorKind::InvalidInput, "{again}");
    assert!(again.to_string().contains("messages"), "{again}");
    assert_eq!(q.job("j3").expect("read"), None);
    assert!(store
        .messages_by_id(&ana, &[b.id])
        .expect("by id")
        .is_empty());
    let log = s1_log(store.as_ref(), "ana");
    assert_eq!(log.len(), 1);
    assert_eq!((log[0].id, log[0].content.as_str()), (a.id, ""));
    assert_eq!(q.queue_stats().expect("stats").pending, 1, "only j1");
}

/// A write naming a logged message an erase emptied since (an add queued or retried across the
/// erase) is refused whole: the erased text does not come back as a memory, and the batch's
/// other messages are not logged either.
pub fn an_erased_turn_is_not_written_back(h: &dyn Harness) {
    let store = h.fresh();
    let ana = scope("ana");
    let a = turn("ana", 0, "my bank PIN is 4417");
    store
        .write(vec![WriteBatch::new(
            ana.clone(),
            vec![a.clone()],
            Vec::new(),
        )])
        .expect("logged alone, as a failed add logs it");
    store
        .erase_log(
            &EraseLog::new(&ana, EraseTarget::Session("s1")).unwrap(),
            &WritePlan::default(),
        )
        .expect("erased");
    let b = turn("ana", 1, "noted");
    let raw = NewMemory::raw(
        &a,
        &ana,
        Metadata::new(),
        None,
        HashEmbedder::vector(&a.content),
    );
    let e = store
        .write(vec![WriteBatch::new(
            ana.clone(),
            vec![b.clone(), a.clone()],
            vec![raw],
        )])
        .expect_err("the erased turn");
    assert_eq!(e.kind(), ErrorKind::InvalidInput, "{e}");
    assert!(e.to_string().contains("messages"), "{e}");
    let log = s1_log(store.as_ref(), "ana");
    assert_eq!(log.len(), 1, "{log:?}");
    assert_eq!(log[0].content, "");
    let all = ReadOptions {
        include_inactive: true,
        include_expired: true,
        ..ReadOptions::default()
    };
    let listed = store
        .list(&ListQuery::new(ana.clone(), 10).with_read(all))
        .expect("list");
    assert!(listed.results.is_empty(), "{:?}", listed.results);
    assert!(store
        .lexical_candidates(&candidates(&ana, all), &["4417".to_string()])
        .expect("lexical")
        .is_empty());
}

/// An erase reaches the copies jobs keep: a queued job whose request carries an erased turn is
/// emptied and failed (it will not run), a done job whose result names an erased memory's text
/// loses its payload and result but stays done, and a job of the scope that carries none of
/// the erased text is left exactly as it was.
pub fn an_erase_empties_the_jobs_that_carry_its_text(h: &dyn Harness) {
    let store = h.fresh();
    let q = queue(store.as_ref());
    let ana = scope("ana");
    let secret = turn("ana", 0, "my bank PIN is 4417");
    let queued = NewJob {
        payload: serde_json::json!({"input": {"messages": [{"content": "my bank PIN is 4417"}]}}),
        ..with_turns("queued", "ana", &[&secret])
    };
    q.enqueue(&queued).expect("enqueued");
    let other = q.enqueue(&job("other", "ana", 1)).expect("enqueued");

    // A done job whose result names a memory of another session.
    let note = turn("ana", 2, "the spare key is under the blue pot");
    let mut note_msg = note.clone();
    note_msg.session_id = Some("s2".into());
    let raw = NewMemory::raw(
        &note_msg,
        &ana,
        Metadata::new(),
        None,
        HashEmbedder::vector(&note_msg.content),
    );
    let memory_id = raw.id;
    store
        .write(vec![WriteBatch::new(
            ana.clone(),
            vec![note_msg.clone()],
            vec![raw],
        )])
        .expect("written");
    q.enqueue(&NewJob {
        payload: serde_json::json!({"input": "the spare key is under the blue pot"}),
        ..job("done", "ana", 2)
    })
    .expect("enqueued");
    // Claimed in creation order: "queued", "other", then "done"; only "done" is finished.
    let mut claimed = Vec::new();
    for _ in 0..3 {
        claimed.push(
            q.claim(&Lease {
                worker: "w",
                now: t(10),
                length: lease(),
            })
            .expect("claim")
            .expect("a job"),
        );
    }
    let done = claimed.iter().find(|j| j.id == "done").expect("claimed");
    for j in &claimed {
        if j.id != "done" {
            assert!(q
                .finish(
                    &j.id,
                    "w",
                    &JobOutcome::Retry {
                        error: "later".into(),
                        kind: "unavailable".into(),
                        run_after: t(5),
                    },
                    t(11),
                )
                .expect("back to pending"));
        }
    }
    let result = serde_json::json!({"results": [{"id": memory_id.to_string(),
        "memory": "the spare key is under the blue pot", "event": "ADD"}]});
    assert!(q
        .finish(&done.id, "w", &JobOutcome::Done { result }, t(12))
        .expect("done"));

    // Erasing session s1 empties and fails the queued job that carried its turn.
    store
        .erase_log(
            &EraseLog::new(&ana, EraseTarget::Session("s1")).unwrap(),
            &WritePlan::default(),
        )
        .expect("erased");
    let after = q.job("queued").expect("read").expect("kept, emptied");
    assert_eq!(after.status, JobStatus::Failed, "{after:?}");
    assert_eq!(after.payload, serde_json::json!({}));
    assert_eq!(
        after.last_error.as_deref(),
        Some(mnemo_core::jobs::ERASED_JOB_ERROR)
    );
    // Nothing of its request is left, so it cannot be put back in the queue.
    let refused = q
        .retry_job("queued", t(13))
        .expect_err("an emptied job is not retried");
    assert_eq!(refused.kind(), ErrorKind::Conflict, "{refused}");
    assert_eq!(
        q.job("queued").expect("read").expect("kept").status,
        JobStatus::Failed
    );
    // Erasing the memory empties the done job's copies; it stays done.
    store
        .erase(
            &EraseMemory::new(&ana, memory_id, true),
            &WritePlan::default(),
        )
        .expect("erased");
    let after = q.job("done").expect("read").expect("kept, emptied");
    assert_eq!(after.status, JobStatus::Done, "{after:?}");
    assert_eq!(after.payload, serde_json::json!({}));
    assert!(after.result.is_none(), "{after:?}");
    // The job that carried none of it is untouched.
    let untouched = q.job("other").expect("read").expect("kept");
    assert_eq!(untouched.payload, other.payload);
    assert_eq!(untouched.status, JobStatus::Pending);
    // No job keeps either text anywhere.
    for j in q
        .list_jobs(&JobQuery {
            scope: Some(ana.clone()),
            status: None,
            before: None,
            limit: 10,
        })
        .expect("listed")
    {
        let all = serde_json::json!([j.payload, j.result, j.last_error]).to_string();
        assert!(!all.contains("4417") && !all.contains("blue pot"), "{all}");
    }
}
