//! Contract cases for the job queue ([`JobStore`]): enqueue once, with the job's messages
//! logged in the same transaction (or, when refused, neither), lease one job to one worker,
//! take back a job whose worker's lease ran out, end a claim only under its own lease, retries
//! with backoff and by hand, concurrent claimers, counts, and survival across a reopen.
//! Re-exported by `contract`.

pub use crate::contract_job_log::*;
use crate::*;
use mnemo_core::*;
use std::collections::HashSet;

pub(crate) fn queue(store: &dyn Store) -> &dyn JobStore {
    store.jobs().expect("the backend keeps a job queue")
}

pub(crate) fn t(ms: i64) -> Timestamp {
    chrono::DateTime::from_timestamp_millis(1_800_000_000_000 + ms).expect("a valid time")
}

pub(crate) fn job(id: &str, user: &str, at: i64) -> NewJob {
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
pub(crate) fn turn(user: &str, i: i64, text: &str) -> Message {
    let role = if i % 2 == 0 {
        Role::User
    } else {
        Role::Assistant
    };
    let mut m = Message::new(&scope(user), role, None, text.into(), t(i));
    m.session_id = Some("s1".into());
    m
}

pub(crate) fn with_turns(id: &str, user: &str, turns: &[&Message]) -> NewJob {
    NewJob {
        messages: turns.iter().map(|m| (*m).clone()).collect(),
        ..job(id, user, 0)
    }
}

pub(crate) fn s1_log(store: &dyn Store, user: &str) -> Vec<Message> {
    store
        .messages(&scope(user), Some("s1"), 100)
        .expect("the log")
}

pub(crate) fn lease() -> chrono::Duration {
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
        .claim(&Lease {
            worker: "w-a",
            now: t(100),
            length: lease(),
        })
        .expect("claim")
        .expect("a job");
    assert_eq!(a.id, "first");
    assert_eq!(a.status, JobStatus::Running);
    assert_eq!(a.attempts, 1);
    assert_eq!(a.locked_by.as_deref(), Some("w-a"));
    assert_eq!(a.locked_until, Some(t(100) + lease()));
    let b = q
        .claim(&Lease {
            worker: "w-b",
            now: t(200),
            length: lease(),
        })
        .expect("claim")
        .expect("a job");
    assert_eq!(b.id, "second");
    assert_eq!(
        q.claim(&Lease {
            worker: "w-c",
            now: t(300),
            length: lease()
        })
        .expect("claim"),
        None
    );

    // w-a dies: after its lease w-c takes the job over, and w-a's late finish is refused.
    let later = t(100) + lease() + chrono::Duration::milliseconds(1);
    let again = q
        .claim(&Lease {
            worker: "w-c",
            now: later,
            length: lease(),
        })
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
            .claim(&Lease {
                worker: "w-x",
                now,
                length: lease(),
            })
            .expect("claim")
            .expect("taken back");
        assert_eq!((j.id.as_str(), j.attempts), ("second", attempt));
    }
    now = now + lease() + chrono::Duration::milliseconds(1);
    assert_eq!(
        q.claim(&Lease {
            worker: "w-y",
            now,
            length: lease()
        })
        .expect("claim"),
        None
    );
    let second = q.job("second").expect("read").expect("kept");
    assert_eq!(second.status, JobStatus::Failed);
    assert!(second
        .last_error
        .as_deref()
        .is_some_and(|e| e.contains("lease")));
}

/// A worker still at work renews its lease: no claim takes the job while the renewed lease
/// holds; another worker's renewal, or one after a takeover or the finish, changes nothing; an
/// unknown job is `not_found`.
pub fn a_renewed_lease_keeps_the_job_with_its_worker(h: &dyn Harness) {
    let store = h.fresh();
    let q = queue(store.as_ref());
    let ms = chrono::Duration::milliseconds;
    q.enqueue(&job("slow", "ana", 0)).expect("enqueued");
    q.claim(&Lease {
        worker: "w-a",
        now: t(100),
        length: lease(),
    })
    .expect("claim")
    .expect("a job");
    // Just before its lease ends, w-a renews it: past the first lease nobody takes the job.
    let near_end = t(100) + lease() - ms(1);
    assert!(q
        .renew_lease(
            "slow",
            &Lease {
                worker: "w-a",
                now: near_end,
                length: lease()
            }
        )
        .expect("renewed"));
    let held = q.job("slow").expect("read").expect("kept");
    assert_eq!(held.locked_until, Some(near_end + lease()));
    assert_eq!(held.locked_by.as_deref(), Some("w-a"));
    let past_first = t(100) + lease() + ms(1);
    assert_eq!(
        q.claim(&Lease {
            worker: "w-b",
            now: past_first,
            length: lease()
        })
        .expect("claim"),
        None
    );
    // Another worker's renewal changes nothing.
    assert!(!q
        .renew_lease(
            "slow",
            &Lease {
                worker: "w-b",
                now: past_first,
                length: lease()
            }
        )
        .expect("not w-b's"));
    assert_eq!(q.job("slow").expect("read").expect("kept"), held);
    // When the renewed lease runs out, a claim takes the job over and w-a can no longer renew.
    let past_renewed = near_end + lease() + ms(1);
    let taken = q
        .claim(&Lease {
            worker: "w-b",
            now: past_renewed,
            length: lease(),
        })
        .expect("claim")
        .expect("taken over");
    assert_eq!((taken.id.as_str(), taken.attempts), ("slow", 2));
    assert!(!q
        .renew_lease(
            "slow",
            &Lease {
                worker: "w-a",
                now: past_renewed,
                length: lease()
            }
        )
        .expect("taken over"));
    // A finished job has no lease to renew.
    let done = JobOutcome::Done {
        result: serde_json::json!({"ok": 1}),
    };
    assert!(q
        .finish("slow", "w-b", &done, past_renewed)
        .expect("finish"));
    assert!(!q
        .renew_lease(
            "slow",
            &Lease {
                worker: "w-b",
                now: past_renewed,
                length: lease()
            }
        )
        .expect("finished"));
    let finished = q.job("slow").expect("read").expect("kept");
    assert_eq!(
        (finished.status, finished.locked_until),
        (JobStatus::Done, None)
    );
    let missing = q
        .renew_lease(
            "ghost",
            &Lease {
                worker: "w-a",
                now: t(0),
                length: lease(),
            },
        )
        .expect_err("unknown");
    assert_eq!(missing.kind(), ErrorKind::NotFound);
}

/// A retryable failure waits for its `run_after`; a final one stays failed with its error until
/// retried by hand, which starts its attempts again; only a failed job can be retried.
pub fn retries_wait_for_their_time_and_failures_keep_their_error(h: &dyn Harness) {
    let store = h.fresh();
    let q = queue(store.as_ref());
    q.enqueue(&job("j", "ana", 0)).expect("enqueued");
    q.claim(&Lease {
        worker: "w",
        now: t(10),
        length: lease(),
    })
    .expect("claim")
    .expect("a job");
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
    assert_eq!(
        q.claim(&Lease {
            worker: "w",
            now: t(4_999),
            length: lease()
        })
        .expect("claim"),
        None
    );
    let j = q
        .claim(&Lease {
            worker: "w",
            now: t(5_000),
            length: lease(),
        })
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
    assert_eq!(
        q.claim(&Lease {
            worker: "w",
            now: t(9_000),
            length: lease()
        })
        .expect("claim"),
        None
    );
    let back = q.retry_job("j", t(9_000)).expect("retried");
    assert_eq!((back.status, back.attempts), (JobStatus::Pending, 0));
    assert_eq!(
        q.claim(&Lease {
            worker: "w",
            now: t(9_001),
            length: lease()
        })
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
                        match q
                            .claim(&Lease {
                                worker: &format!("w{w}"),
                                now: t(1_000),
                                length: lease(),
                            })
                            .expect("claim")
                        {
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

/// A tenant's open jobs are counted over the scopes it covers (every agent and run of a
/// user), pending and running only, and never another tenant's.
pub fn open_jobs_are_counted_per_tenant(h: &dyn Harness) {
    let store = h.fresh();
    let q = queue(store.as_ref());
    for (i, (id, user)) in [("a", "ana"), ("b", "ana"), ("c", "ben")]
        .into_iter()
        .enumerate()
    {
        q.enqueue(&job(id, user, i as i64)).expect("enqueued");
    }
    let mut with_agent = job("d", "ana", 5);
    with_agent.scope = Scope::from_parts(Some("ana"), Some("bot"), None).expect("scope");
    q.enqueue(&with_agent).expect("enqueued");
    let open = |user: &str| q.open_jobs(&scope(user)).expect("count");
    assert_eq!((open("ana"), open("ben"), open("cy")), (3, 1, 0));
    let bot = Scope::from_parts(None, Some("bot"), None).expect("scope");
    assert_eq!(q.open_jobs(&bot).expect("count"), 1);
    // Claimed still counts; done does not.
    let claimed = q
        .claim(&Lease {
            worker: "w",
            now: t(100),
            length: lease(),
        })
        .expect("claim")
        .expect("a job");
    assert_eq!(claimed.id, "a");
    assert_eq!(open("ana"), 3);
    let done = JobOutcome::Done {
        result: serde_json::json!(null),
    };
    assert!(q.finish("a", "w", &done, t(110)).expect("finish"));
    assert_eq!((open("ana"), open("ben")), (2, 1));
}

/// The counts per status and the oldest open job follow the queue, and jobs survive a reopen.
pub fn queue_stats_count_and_jobs_survive_reopen(h: &dyn Harness) {
    let store = h.fresh();
    let q = queue(store.as_ref());
    assert_eq!(q.queue_stats().expect("stats"), QueueStats::default());
    for (i, id) in ["a", "b", "c"].into_iter().enumerate() {
        q.enqueue(&job(id, "ana", i as i64 * 10)).expect("enqueued");
    }
    q.claim(&Lease {
        worker: "w",
        now: t(100),
        length: lease(),
    })
    .expect("claim")
    .expect("a");
    let done = JobOutcome::Done {
        result: serde_json::json!(null),
    };
    assert!(q.finish("a", "w", &done, t(110)).expect("finish"));
    q.claim(&Lease {
        worker: "w",
        now: t(120),
        length: lease(),
    })
    .expect("claim")
    .expect("b");
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
    assert!(q
        .claim(&Lease {
            worker: "w",
            now: t(100),
            length: lease()
        })
        .expect("claim")
        .is_none());
}
