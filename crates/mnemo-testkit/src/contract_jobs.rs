//! Contract cases for the job queue ([`JobStore`]): enqueue once, with the job's messages
//! logged in the same transaction (or, when refused, neither), lease one job to one worker,
//! take back a job whose worker's lease ran out, end a claim only under its own lease, retries
//! with backoff and by hand, concurrent claimers, counts, and survival across a reopen.
//! Re-exported by `contract`.

use crate::*;
use mnemo_core::*;
use std::collections::HashSet;

fn queue(store: &dyn Store) -> &dyn JobStore {
    store.jobs().expect("the backend keeps a job queue")
}

fn t(ms: i64) -> Timestamp {
    chrono::DateTime::from_timestamp_millis(1_800_000_000_000 + ms).expect("a valid time")
}

fn job(id: &str, user: &str, at: i64) -> NewJob {
    NewJob {
        id: id.into(),
        scope: scope(user),
        kind: "add".into(),
        payload: serde_json::json!({"text": format!("payload of {id}"), "n": 7}),
        max_attempts: 3,
        created_at: t(at),
        messages: Vec::new(),
    }
}

/// Turn `i` of session `s1` of `user`, as an async add logs it with its job.
fn turn(user: &str, i: i64, text: &str) -> Message {
    let role = if i % 2 == 0 {
        Role::User
    } else {
        Role::Assistant
    };
    let mut m = Message::new(&scope(user), role, None, text.into(), t(i));
    m.session_id = Some("s1".into());
    m
}

fn with_turns(id: &str, user: &str, turns: &[&Message]) -> NewJob {
    NewJob {
        messages: turns.iter().map(|m| (*m).clone()).collect(),
        ..job(id, user, 0)
    }
}

fn s1_log(store: &dyn Store, user: &str) -> Vec<Message> {
    store
        .messages(&scope(user), Some("s1"), 100)
        .expect("the log")
}

fn lease() -> chrono::Duration {
    chrono::Duration::seconds(30)
}

/// An enqueued job reads back as given and pending; the same id again is a conflict; listings
/// filter by scope and status, newest first, and page with the last id as cursor.
pub fn jobs_are_enqueued_once_and_listed_by_scope(h: &dyn Harness) {
    let store = h.fresh();
    let q = queue(store.as_ref());
    let stored = q.enqueue(&job("j1", "ana", 0)).expect("enqueued");
    assert_eq!(stored.status, JobStatus::Pending);
    assert_eq!((stored.attempts, stored.max_attempts), (0, 3));
    assert_eq!(stored.payload["n"], 7);
    assert_eq!(stored.scope, scope("ana"));
    assert_eq!(q.job("j1").expect("read"), Some(stored.clone()));
    let dup = q.enqueue(&job("j1", "bob", 1)).expect_err("same id");
    assert_eq!(dup.kind(), ErrorKind::Conflict);
    assert_eq!(
        q.job("j1").expect("read").expect("kept").scope,
        scope("ana")
    );
    assert_eq!(q.job("nope").expect("read"), None);
    let bad = NewJob {
        max_attempts: 0,
        ..job("j0", "ana", 0)
    };
    assert_eq!(
        q.enqueue(&bad).expect_err("no attempts").kind(),
        ErrorKind::InvalidInput
    );
    for (i, id) in ["j2", "j3", "j4"].into_iter().enumerate() {
        q.enqueue(&job(id, "ana", 10 + i as i64)).expect("enqueued");
    }
    q.enqueue(&job("b1", "bob", 20)).expect("enqueued");

    let ana = JobQuery {
        scope: Some(scope("ana")),
        limit: 10,
        ..JobQuery::default()
    };
    let ids = |v: Vec<JobRecord>| v.into_iter().map(|j| j.id).collect::<Vec<_>>();
    assert_eq!(
        ids(q.list_jobs(&ana).expect("listed")),
        ["j4", "j3", "j2", "j1"]
    );
    let page = q
        .list_jobs(&JobQuery {
            limit: 2,
            ..ana.clone()
        })
        .expect("first page");
    let rest = q
        .list_jobs(&JobQuery {
            before: Some(page[1].id.clone()),
            ..ana.clone()
        })
        .expect("next page");
    assert_eq!(
        (ids(page), ids(rest)),
        (
            vec!["j4".to_string(), "j3".into()],
            vec!["j2".to_string(), "j1".into()]
        )
    );
    let everyone = q
        .list_jobs(&JobQuery {
            limit: 10,
            ..JobQuery::default()
        })
        .expect("all");
    assert_eq!(everyone.len(), 5);
    let running = q
        .list_jobs(&JobQuery {
            status: Some(JobStatus::Running),
            ..ana
        })
        .expect("by status");
    assert!(running.is_empty());
}

/// Claims hand out jobs first in, first out, one per claim; a running job is not claimed again
/// while its lease holds, and is taken back once it ran out (one more attempt), after which
/// the first worker can no longer finish it. A job whose lease ran out on its last attempt
/// fails with a visible error.
pub fn claims_lease_each_job_to_one_worker_and_take_back_dead_ones(h: &dyn Harness) {
    let store = h.fresh();
    let q = queue(store.as_ref());
    q.enqueue(&job("first", "ana", 0)).expect("enqueued");
    q.enqueue(&job("second", "bob", 1)).expect("enqueued");
    let a = q
        .claim("w-a", t(100), lease())
        .expect("claim")
        .expect("a job");
    assert_eq!(a.id, "first");
    assert_eq!(a.status, JobStatus::Running);
    assert_eq!(a.attempts, 1);
    assert_eq!(a.locked_by.as_deref(), Some("w-a"));
    assert_eq!(a.locked_until, Some(t(100) + lease()));
    let b = q
        .claim("w-b", t(200), lease())
        .expect("claim")
        .expect("a job");
    assert_eq!(b.id, "second");
    assert_eq!(q.claim("w-c", t(300), lease()).expect("claim"), None);

    // w-a dies: after its lease w-c takes the job over, and w-a's late finish is refused.
    let later = t(100) + lease() + chrono::Duration::milliseconds(1);
    let again = q
        .claim("w-c", later, lease())
        .expect("claim")
        .expect("taken back");
    assert_eq!((again.id.as_str(), again.attempts), ("first", 2));
    let done = JobOutcome::Done {
        result: serde_json::json!({"ok": 1}),
    };
    assert!(!q.finish("first", "w-a", &done, later).expect("finish"));
    assert!(q.finish("first", "w-c", &done, later).expect("finish"));
    let first = q.job("first").expect("read").expect("kept");
    assert_eq!(first.status, JobStatus::Done);
    assert_eq!(first.result, Some(serde_json::json!({"ok": 1})));
    assert!(!q.finish("first", "w-c", &done, later).expect("finish once"));
    let missing = q.finish("ghost", "w-c", &done, later).expect_err("unknown");
    assert_eq!(missing.kind(), ErrorKind::NotFound);

    // A job that loses its worker on every attempt ends failed, not claimed forever.
    let mut now = t(200);
    for attempt in 2..=3 {
        now = now + lease() + chrono::Duration::milliseconds(1);
        let j = q
            .claim("w-x", now, lease())
            .expect("claim")
            .expect("taken back");
        assert_eq!((j.id.as_str(), j.attempts), ("second", attempt));
    }
    now = now + lease() + chrono::Duration::milliseconds(1);
    assert_eq!(q.claim("w-y", now, lease()).expect("claim"), None);
    let second = q.job("second").expect("read").expect("kept");
    assert_eq!(second.status, JobStatus::Failed);
    assert!(second
        .last_error
        .as_deref()
        .is_some_and(|e| e.contains("lease")));
}

/// A retryable failure waits for its `run_after`; a final one stays failed with its error until
/// retried by hand, which starts its attempts again; only a failed job can be retried.
pub fn retries_wait_for_their_time_and_failures_keep_their_error(h: &dyn Harness) {
    let store = h.fresh();
    let q = queue(store.as_ref());
    q.enqueue(&job("j", "ana", 0)).expect("enqueued");
    q.claim("w", t(10), lease()).expect("claim").expect("a job");
    let retry = JobOutcome::Retry {
        error: "unavailable: model down".into(),
        kind: "unavailable".into(),
        run_after: t(5_000),
    };
    assert!(q.finish("j", "w", &retry, t(20)).expect("finish"));
    let waiting = q.job("j").expect("read").expect("kept");
    assert_eq!(waiting.status, JobStatus::Pending);
    assert_eq!(waiting.error_kind.as_deref(), Some("unavailable"));
    assert_eq!(waiting.locked_by, None);
    assert_eq!(q.claim("w", t(4_999), lease()).expect("claim"), None);
    let j = q
        .claim("w", t(5_000), lease())
        .expect("claim")
        .expect("due");
    assert_eq!(j.attempts, 2);
    let conflict = q.retry_job("j", t(5_001)).expect_err("running");
    assert_eq!(conflict.kind(), ErrorKind::Conflict);
    let fail = JobOutcome::Failed {
        error: "invalid_input: bad".into(),
        kind: "invalid_input".into(),
    };
    assert!(q.finish("j", "w", &fail, t(5_010)).expect("finish"));
    let failed = q.job("j").expect("read").expect("kept");
    assert_eq!(failed.status, JobStatus::Failed);
    assert_eq!(failed.last_error.as_deref(), Some("invalid_input: bad"));
    assert_eq!(q.claim("w", t(9_000), lease()).expect("claim"), None);
    let back = q.retry_job("j", t(9_000)).expect("retried");
    assert_eq!((back.status, back.attempts), (JobStatus::Pending, 0));
    assert_eq!(
        q.claim("w", t(9_001), lease())
            .expect("claim")
            .map(|j| j.id),
        Some("j".to_string())
    );
    let unknown = q.retry_job("ghost", t(9_002)).expect_err("unknown");
    assert_eq!(unknown.kind(), ErrorKind::NotFound);
}

/// Workers claiming at the same time each get different jobs, and every job is claimed.
pub fn concurrent_claims_never_share_a_job(h: &dyn Harness) {
    let store = h.fresh();
    let q = queue(store.as_ref());
    const JOBS: usize = 40;
    for i in 0..JOBS {
        q.enqueue(&job(&format!("c{i:02}"), "ana", i as i64))
            .expect("enqueued");
    }
    let claimed: Vec<Vec<String>> = std::thread::scope(|s| {
        let workers: Vec<_> = (0..4)
            .map(|w| {
                let store = store.clone();
                s.spawn(move || {
                    let q = queue(store.as_ref());
                    let mut mine = Vec::new();
                    // Bounded: there are JOBS jobs in all.
                    for _ in 0..=JOBS {
                        match q.claim(&format!("w{w}"), t(1_000), lease()).expect("claim") {
                            Some(j) => mine.push(j.id),
                            None => break,
                        }
                    }
                    mine
                })
            })
            .collect();
        workers
            .into_iter()
            .map(|w| w.join().expect("worker"))
            .collect()
    });
    let all: Vec<&String> = claimed.iter().flatten().collect();
    let distinct: HashSet<&String> = all.iter().copied().collect();
    assert_eq!(
        all.len(),
        JOBS,
        "every job claimed exactly once: {claimed:?}"
    );
    assert_eq!(distinct.len(), JOBS);
}

/// The counts per status and the oldest open job follow the queue, and jobs survive a reopen.
pub fn queue_stats_count_and_jobs_survive_reopen(h: &dyn Harness) {
    let store = h.fresh();
    let q = queue(store.as_ref());
    assert_eq!(q.queue_stats().expect("stats"), QueueStats::default());
    for (i, id) in ["a", "b", "c"].into_iter().enumerate() {
        q.enqueue(&job(id, "ana", i as i64 * 10)).expect("enqueued");
    }
    q.claim("w", t(100), lease()).expect("claim").expect("a");
    let done = JobOutcome::Done {
        result: serde_json::json!(null),
    };
    assert!(q.finish("a", "w", &done, t(110)).expect("finish"));
    q.claim("w", t(120), lease()).expect("claim").expect("b");
    let stats = q.queue_stats().expect("stats");
    assert_eq!(
        (stats.pending, stats.running, stats.done, stats.failed),
        (1, 1, 1, 0)
    );
    assert_eq!(stats.depth(), 2);
    assert_eq!(stats.oldest_open_at, Some(t(10)));
    let store = h.reopen(store);
    let q = queue(store.as_ref());
    assert_eq!(q.queue_stats().expect("stats"), stats);
    let c = q.job("c").expect("read").expect("kept");
    assert_eq!(c.payload["text"], "payload of c");
    assert_eq!(c.status, JobStatus::Pending);
}

/// A reset empties the queue with everything else: no job written before it runs after it.
pub fn reset_clears_the_queue(h: &dyn Harness) {
    let store = h.fresh();
    let q = queue(store.as_ref());
    q.enqueue(&job("a", "ana", 0)).expect("enqueued");
    q.enqueue(&job("b", "ana", 5)).expect("enqueued");
    assert_eq!(q.queue_stats().expect("stats").depth(), 2);
    store.reset().expect("reset");
    let q = queue(store.as_ref());
    assert_eq!(q.queue_stats().expect("stats"), QueueStats::default());
    assert!(
        q.job("a").expect("read").is_none(),
        "a job survived the reset"
    );
    assert!(q.claim("w", t(100), lease()).expect("claim").is_none());
}

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
            .session_messages(&ana, "s1", None, 10)
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
        .erase_log(&ana, EraseTarget::Session("s1"), &WriteContext::default())
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
        .erase_log(&ana, EraseTarget::Session("s1"), &WriteContext::default())
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
        .list(&ListQuery {
            scope: ana.clone(),
            kinds: None,
            filter: None,
            limit: 10,
            cursor: None,
            read: all,
        })
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
        claimed.push(q.claim("w", t(10), lease()).expect("claim").expect("a job"));
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
        .erase_log(&ana, EraseTarget::Session("s1"), &WriteContext::default())
        .expect("erased");
    let after = q.job("queued").expect("read").expect("kept, emptied");
    assert_eq!(after.status, JobStatus::Failed, "{after:?}");
    assert_eq!(after.payload, serde_json::json!({}));
    assert_eq!(
        after.last_error.as_deref(),
        Some(mnemo_core::jobs::ERASED_JOB_ERROR)
    );
    // Erasing the memory empties the done job's copies; it stays done.
    store
        .erase(&ana, memory_id, true, &WriteContext::default())
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
