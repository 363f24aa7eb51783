//! Async adds as jobs through the facade over the real SQLite store: checked before queuing,
//! their turns logged with the job (shown at once, logged once after the run, which writes
//! what a blocking add writes), erased turns never brought back by the job, run once by a
//! worker, replayed (not applied again) when a dead worker's job is taken over, retried with
//! backoff on retryable model errors until failed, admission at the queue's depth, and workers
//! woken by an enqueue.

use mnemo::core::*;
use mnemo::{AddInput, AddRequest, JobConfig, Memory};
use mnemo_testkit::engines;
use mnemo_testkit::{HashEmbedder, ScriptedChat};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

fn engine(jobs: JobConfig) -> (Memory, engines::TestStore) {
    let dir = engines::fresh_store();
    let store = dir.store();
    let m = Memory::from_parts(store, Arc::new(HashEmbedder), RankParams::default())
        .unwrap()
        .with_job_config(jobs);
    (m, dir)
}

fn quick() -> JobConfig {
    JobConfig {
        max_attempts: 3,
        backoff_base: Duration::ZERO,
        backoff_max: Duration::ZERO,
        ..JobConfig::default()
    }
}

fn ana() -> Scope {
    Scope::user("ana").unwrap()
}

async fn count(m: &Memory) -> usize {
    engines::off_runtime(|| {
        engines::off_runtime(|| {
            engines::off_runtime(|| m.store().list(&ListQuery::new(ana(), 100)))
        })
    })
    .unwrap()
    .results
    .len()
}

#[tokio::test]
async fn an_async_add_is_stored_pending_and_run_once() {
    let (m, _d) = engine(quick());
    let job = m
        .enqueue_add(AddRequest::text(ana(), "I keep bees on the roof"))
        .await
        .unwrap();
    assert_eq!(job.status, JobStatus::Pending);
    assert_eq!(
        count(&m).await,
        0,
        "nothing is written before a worker runs it"
    );
    let ran = m.run_next_job("w").await.unwrap().expect("a job ran");
    assert_eq!(
        (ran.id.as_str(), ran.status),
        (job.id.as_str(), JobStatus::Done)
    );
    let result = ran.result.expect("an outcome");
    assert_eq!(result["results"][0]["memory"], "I keep bees on the roof");
    assert_eq!(count(&m).await, 1);
    assert!(m.run_next_job("w").await.unwrap().is_none(), "nothing left");
    assert_eq!(m.queue_stats().await.unwrap().done, 1);
}

#[tokio::test]
async fn invalid_adds_are_refused_and_never_queued() {
    let (m, _d) = engine(quick());
    let mut bad_meta = AddRequest::text(ana(), "x");
    bad_meta.metadata = Some(serde_json::json!(["not", "an", "object"]));
    let mut inferred = AddRequest::text(ana(), "x");
    inferred.infer = Some(true);
    let mut past = AddRequest::text(ana(), "x");
    past.expires_at = Some(chrono::Utc::now() - chrono::Duration::hours(1));
    for (what, req) in [
        ("metadata", bad_meta),
        ("infer", inferred),
        ("expires_at", past),
    ] {
        let e = m.enqueue_add(req).await.unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidInput, "{what}: {e}");
    }
    assert_eq!(m.queue_stats().await.unwrap(), QueueStats::default());
}

/// A worker that dies after its add committed, before the job was marked done: the next
/// worker takes the job over after the lease and replays the stored outcome.
#[tokio::test]
async fn a_job_taken_over_after_its_add_committed_is_replayed_not_applied_twice() {
    let (m, _d) = engine(quick());
    let job = m
        .enqueue_add(AddRequest::text(ana(), "written exactly once"))
        .await
        .unwrap();
    let q = engines::off_runtime(|| m.store().jobs()).unwrap();
    // The dead worker's lease has already ended when the next worker looks.
    let now = chrono::Utc::now();
    let held = engines::off_runtime(|| {
        q.claim(&Lease {
            worker: "dead",
            now,
            length: chrono::Duration::milliseconds(-1),
        })
    })
    .unwrap()
    .unwrap();
    assert_eq!(held.id, job.id);
    // What the dead worker committed: the job's add, keyed by the job.
    let mut req = AddRequest::text(ana(), "written exactly once");
    req.idempotency_key = Some(format!("job:{}", job.id));
    req.timestamp = job.payload["timestamp"]
        .as_str()
        .map(|t| t.parse().unwrap());
    m.add(req).await.unwrap();
    assert_eq!(count(&m).await, 1);

    let ran = m.run_next_job("alive").await.unwrap().expect("taken over");
    assert_eq!((ran.status, ran.attempts), (JobStatus::Done, 2));
    assert_eq!(ran.result.unwrap()["replayed"], true);
    assert_eq!(count(&m).await, 1, "the add was not applied twice");
    assert!(!engines::off_runtime(|| q.finish(
        &job.id,
        "dead",
        &JobOutcome::Done {
            result: serde_json::json!(null)
        },
        chrono::Utc::now()
    ))
    .unwrap());
}

/// A model that is down: each attempt fails retryably and the job goes back to the queue,
/// until the last attempt fails it with the error kept; a retry by hand runs it again.
#[tokio::test]
async fn retryable_failures_back_off_then_fail_with_their_error() {
    let calls = Arc::new(AtomicUsize::new(0));
    let seen = calls.clone();
    let chat = Arc::new(ScriptedChat::new("scripted:down", move |_| {
        seen.fetch_add(1, Ordering::SeqCst);
        Err(Error::Unavailable {
            component: "chat model".into(),
            reason: "connection refused".into(),
        })
    }));
    let (m, _d) = engine(quick());
    let m = m.with_chat(chat, mnemo::InferConfig::default());
    let job = m
        .enqueue_add(AddRequest {
            infer: Some(true),
            ..AddRequest::text(ana(), "I moved to Lisbon")
        })
        .await
        .unwrap();
    let mut statuses = Vec::new();
    for _ in 0..3 {
        let ran = m.run_next_job("w").await.unwrap().expect("a due job");
        statuses.push((ran.status, ran.attempts));
    }
    assert_eq!(
        statuses,
        [
            (JobStatus::Pending, 1),
            (JobStatus::Pending, 2),
            (JobStatus::Failed, 3)
        ]
    );
    assert!(m.run_next_job("w").await.unwrap().is_none());
    let failed = m.job(&job.id).await.unwrap().unwrap();
    assert_eq!(
        engines::off_runtime(|| m.store().messages(&ana(), None, 10))
            .unwrap()
            .len(),
        1,
        "the turn of a job that failed for good is in the log, once"
    );
    assert_eq!(failed.error_kind.as_deref(), Some("unavailable"));
    assert!(failed.last_error.unwrap().contains("connection refused"));
    assert_eq!(calls.load(Ordering::SeqCst), 3);
    let again = m.retry_job(&job.id).await.unwrap();
    assert_eq!((again.status, again.attempts), (JobStatus::Pending, 0));
    assert_eq!(
        m.run_next_job("w").await.unwrap().unwrap().status,
        JobStatus::Pending
    );
}

#[test]
fn backoff_doubles_within_its_jitter_band_and_stops_at_the_max() {
    let cfg = JobConfig {
        backoff_base: Duration::from_millis(100),
        backoff_max: Duration::from_millis(1000),
        ..JobConfig::default()
    };
    assert_eq!(cfg.backoff(1, 1.0), Duration::from_millis(100));
    assert_eq!(cfg.backoff(1, 0.0), Duration::from_millis(50));
    assert_eq!(cfg.backoff(3, 1.0), Duration::from_millis(400));
    assert_eq!(cfg.backoff(9, 1.0), Duration::from_millis(1000));
    assert_eq!(cfg.backoff(40, 0.0), Duration::from_millis(500));
}

#[tokio::test]
async fn a_full_queue_refuses_new_async_adds() {
    let (m, _d) = engine(JobConfig {
        max_queue_depth: Some(2),
        ..quick()
    });
    for i in 0..2 {
        m.enqueue_add(AddRequest::text(ana(), format!("fact {i}")))
            .await
            .unwrap();
    }
    assert_eq!(m.queue_full(&ana()).await.unwrap(), Some(2));
    let e = m
        .enqueue_add(AddRequest::text(ana(), "one too many"))
        .await
        .unwrap_err();
    assert!(e.kind().is_retryable(), "{e}");
    m.run_next_job("w").await.unwrap().unwrap();
    assert_eq!(m.queue_full(&ana()).await.unwrap(), None);
}

/// `max_queue_depth` is each tenant's share: a tenant that fills its share is refused, while
/// every other tenant's async adds are still queued (and a tenant's agents and runs count
/// against its user).
#[tokio::test]
async fn one_tenant_filling_its_share_does_not_refuse_another_tenant() {
    let (m, _d) = engine(JobConfig {
        max_queue_depth: Some(2),
        ..quick()
    });
    let ana_bot = Scope::from_parts(Some("ana"), Some("bot"), None).unwrap();
    m.enqueue_add(AddRequest::text(ana(), "ana's first"))
        .await
        .unwrap();
    m.enqueue_add(AddRequest::text(ana_bot, "ana's second, through her bot"))
        .await
        .unwrap();
    let e = m
        .enqueue_add(AddRequest::text(ana(), "ana's third"))
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::RateLimited, "{e}");
    let ben = Scope::user("ben").unwrap();
    assert_eq!(m.queue_full(&ben).await.unwrap(), None);
    for i in 0..2 {
        m.enqueue_add(AddRequest::text(ben.clone(), format!("ben's {i}")))
            .await
            .unwrap_or_else(|e| panic!("ben's add {i} is refused by ana's backlog: {e}"));
    }
    let agent_only = Scope::from_parts(None, Some("bot"), None).unwrap();
    m.enqueue_add(AddRequest::text(agent_only, "the bot's own"))
        .await
        .unwrap();
    assert_eq!(m.queue_stats().await.unwrap().depth(), 5);
}

/// The same idempotency key names the same job: a repeated async add queues nothing new.
#[tokio::test]
async fn a_keyed_async_add_repeated_returns_its_first_job() {
    let (m, _d) = engine(quick());
    let mut req = AddRequest::text(ana(), "keyed");
    req.idempotency_key = Some("req-1".into());
    let a = m.enqueue_add(req.clone()).await.unwrap();
    let b = m.enqueue_add(req).await.unwrap();
    assert_eq!(a.id, b.id);
    assert_eq!(m.queue_stats().await.unwrap().pending, 1);
}

/// Started workers pick a job up when it is enqueued; the test waits on the job's status
/// (bounded), never on a fixed delay.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn started_workers_run_enqueued_jobs() {
    let (m, _d) = engine(JobConfig {
        poll: Duration::from_secs(30),
        ..quick()
    });
    let workers = m.start_workers(2);
    assert_eq!(workers.len(), 2);
    let mut ids = Vec::new();
    for i in 0..5 {
        let job = m
            .enqueue_add(AddRequest::text(ana(), format!("worker fact {i}")))
            .await
            .unwrap();
        ids.push(job.id);
    }
    let done = tokio::time::timeout(Duration::from_secs(20), async {
        loop {
            if m.queue_stats().await.unwrap().done == 5 {
                break;
            }
            tokio::task::yield_now().await;
        }
    })
    .await;
    assert!(done.is_ok(), "jobs not run: {:?}", m.queue_stats().await);
    assert_eq!(count(&m).await, 5);
    for id in ids {
        assert_eq!(m.job(&id).await.unwrap().unwrap().attempts, 1);
    }
}

/// A job that runs three times longer than its lease stays with its worker, which renews the
/// lease while it runs: the other worker never takes it over, so it runs once, on one attempt.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_longer_than_its_lease_is_renewed_not_run_twice() {
    let slow = Arc::new(mnemo_testkit::SlowEmbedder::new(Duration::from_millis(
        3200,
    )));
    let dir = engines::fresh_store();
    let m = Memory::from_parts(dir.store(), slow.clone(), RankParams::default())
        .unwrap()
        .with_job_config(JobConfig {
            lease: Duration::from_secs(1),
            poll: Duration::from_millis(50),
            ..quick()
        });
    let job = m
        .enqueue_add(AddRequest::text(ana(), "a slow fact"))
        .await
        .unwrap();
    let before = slow.calls();
    let workers = m.start_workers(2);
    let done = tokio::time::timeout(Duration::from_secs(30), async {
        loop {
            let j = m.job(&job.id).await.unwrap().unwrap();
            if matches!(j.status, JobStatus::Done | JobStatus::Failed) {
                return j;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await
    .expect("the job ends");
    drop(workers);
    assert_eq!(
        (done.status, done.attempts),
        (JobStatus::Done, 1),
        "{done:?}"
    );
    assert_eq!(slow.calls() - before, 1, "the add was embedded once");
    assert_eq!(count(&m).await, 1);
}

const TURNS: [&str; 3] = [
    "I keep bees on the roof",
    "How many hives?",
    "Three hives, since May",
];

/// The conversation `TURNS` in session `s1` of `scope`, raw.
fn conversation(scope: Scope) -> AddRequest {
    let messages = TURNS
        .iter()
        .enumerate()
        .map(|(i, t)| InputMessage {
            role: if i % 2 == 0 {
                Role::User
            } else {
                Role::Assistant
            },
            content: t.to_string(),
            name: None,
        })
        .collect();
    AddRequest {
        input: AddInput::Messages(messages),
        session_id: Some("s1".into()),
        ..AddRequest::text(scope, "")
    }
}

async fn s1_texts(m: &Memory, scope: Scope) -> Vec<(MessageId, String)> {
    m.session_messages(scope, "s1".into(), None, 50)
        .await
        .unwrap()
        .messages
        .into_iter()
        .map(|m| (m.id, m.text))
        .collect()
}

async fn s1_size(m: &Memory, scope: Scope) -> u64 {
    let list = m.sessions(scope, None, 10).await.unwrap();
    assert_eq!(list.sessions.len(), 1, "{:?}", list.sessions);
    list.sessions[0].messages
}

/// A memory as `written` compares it: its text, index text and its sources' texts.
type Written = (String, Option<String>, Vec<String>);

/// What an add wrote for `user`: each memory as [`Written`], and the pages' texts (sorted:
/// ids and times differ between scopes).
fn written(m: &Memory, user: &str) -> (Vec<Written>, Vec<String>) {
    let mut memories = Vec::new();
    let mut messages = std::collections::HashMap::new();
    let mut index = std::collections::HashMap::new();
    engines::off_runtime(|| {
        engines::off_runtime(|| {
            engines::off_runtime(|| {
                m.store().export(&mut |r| {
                    match r {
                        ExportRecord::Memory(m) if m.user_id.as_deref() == Some(user) => {
                            memories.push(*m)
                        }
                        ExportRecord::Message(g) => {
                            messages.insert(g.id, g.content.clone());
                        }
                        ExportRecord::IndexText {
                            memory_id,
                            index_text,
                        } => {
                            index.insert(memory_id, index_text);
                        }
                        _ => {}
                    }
                    Ok(())
                })
            })
        })
    })
    .unwrap();
    let mut out: Vec<_> = memories
        .into_iter()
        .map(|m| {
            let sources = m.sources.iter().map(|s| messages[s].clone()).collect();
            (m.text, index.get(&m.id).cloned(), sources)
        })
        .collect();
    out.sort();
    let mut pages: Vec<String> = engines::off_runtime(|| {
        engines::off_runtime(|| {
            engines::off_runtime(|| {
                m.store().pages(&PageQuery {
                    scope: Some(Scope::user(user).unwrap()),
                    ..PageQuery::default()
                })
            })
        })
    })
    .unwrap()
    .into_iter()
    .map(|p| p.text)
    .collect();
    pages.sort();
    (out, pages)
}

/// An async add's turns are in its session as soon as it is queued, before any worker runs
/// it; after the run each is there once, and the job wrote exactly what the same add written
/// at once writes (memories, their index windows, their sources, pages).
#[tokio::test]
async fn an_async_adds_turns_are_logged_at_once_and_once_after_it_runs() {
    let (m, _d) = engine(quick());
    let bob = Scope::user("bob").unwrap();
    // An earlier turn of the session: the window of the add's first turn reaches it.
    for scope in [ana(), bob.clone()] {
        m.add(AddRequest {
            session_id: Some("s1".into()),
            ..AddRequest::text(scope, "Hello there")
        })
        .await
        .unwrap();
    }
    m.add(conversation(bob.clone())).await.unwrap();

    let job = m.enqueue_add(conversation(ana())).await.unwrap();
    assert_eq!(job.status, JobStatus::Pending);
    let queued = s1_texts(&m, ana()).await;
    let texts: Vec<&str> = queued.iter().map(|(_, t)| t.as_str()).collect();
    assert_eq!(texts, ["Hello there", TURNS[0], TURNS[1], TURNS[2]]);
    assert_eq!(s1_size(&m, ana()).await, 4);
    assert_eq!(count(&m).await, 1, "no memory before the run");

    let ran = m.run_next_job("w").await.unwrap().expect("a job ran");
    assert_eq!(ran.status, JobStatus::Done, "{:?}", ran.last_error);
    assert_eq!(
        s1_texts(&m, ana()).await,
        queued,
        "each turn once, as logged"
    );
    assert_eq!(s1_size(&m, ana()).await, 4);
    assert_eq!(
        engines::off_runtime(|| m.store().messages(&ana(), None, 100))
            .unwrap()
            .len(),
        4
    );
    assert_eq!(count(&m).await, 4);
    let (ours, pages) = written(&m, "ana");
    assert_eq!(
        (ours, pages),
        written(&m, "bob"),
        "as a blocking add writes"
    );
}

/// Turns erased while their job waits stay erased: the erase fails the job at once (it never
/// runs, no model call), nothing is written or logged again; retried by hand it fails again.
#[tokio::test]
async fn a_queued_add_whose_turns_were_erased_fails_and_brings_nothing_back() {
    let calls = Arc::new(AtomicUsize::new(0));
    let seen = calls.clone();
    let chat = Arc::new(ScriptedChat::new("scripted:facts", move |_| {
        seen.fetch_add(1, Ordering::SeqCst);
        Ok(r#"{"facts": [{"text": "Ana keeps bees", "sources": [1]}]}"#.into())
    }));
    let (m, _d) = engine(quick());
    let m = m.with_chat(chat, mnemo::InferConfig::default());
    let raw = m
        .enqueue_add(AddRequest {
            infer: Some(false),
            ..conversation(ana())
        })
        .await
        .unwrap();
    let mut later = AddRequest::text(ana(), "my bank PIN is 4417");
    later.session_id = Some("s1".into());
    later.infer = Some(true);
    let inferred = m.enqueue_add(later).await.unwrap();
    let report = m
        .erase_session(ana(), "s1".into(), WritePlan::default())
        .await
        .unwrap();
    assert_eq!(report.messages_erased, 4, "{report:?}");

    // The erase emptied and failed both jobs in its own transaction: neither ever runs.
    for id in [&raw.id, &inferred.id] {
        let job = m.job(id).await.unwrap().expect("the job is kept");
        assert_eq!((job.status, job.attempts), (JobStatus::Failed, 0));
        assert_eq!(job.error_kind.as_deref(), Some("invalid_input"));
        assert!(
            job.last_error
                .as_deref()
                .is_some_and(|e| e.contains("erased")),
            "{:?}",
            job.last_error
        );
    }
    assert!(
        m.run_next_job("w").await.unwrap().is_none(),
        "nothing to run"
    );
    // An emptied job has nothing left to run: retrying it by hand is refused.
    let refused = m.retry_job(&raw.id).await.unwrap_err();
    assert_eq!(refused.kind(), ErrorKind::Conflict, "{refused}");
    assert!(m.run_next_job("w").await.unwrap().is_none());
    assert_eq!(
        calls.load(Ordering::SeqCst),
        0,
        "no model saw the erased text"
    );

    let log = engines::off_runtime(|| m.store().messages(&ana(), Some("s1"), 100)).unwrap();
    assert_eq!(log.len(), 4, "logged once: {log:?}");
    assert!(log.iter().all(|g| g.content.is_empty()), "{log:?}");
    let (memories, pages) = written(&m, "ana");
    assert!(memories.is_empty(), "{memories:?}");
    assert!(pages.iter().all(String::is_empty), "{pages:?}");
    assert!(s1_texts(&m, ana()).await.is_empty());
}

/// An inferred async add shows the model its turns once, as new: logged with the job, they
/// are not also the earlier context its extraction reads from the log.
#[tokio::test]
async fn an_async_inferred_adds_turns_are_new_not_earlier_context() {
    let chat = Arc::new(ScriptedChat::new("scripted:none", |_| {
        Ok(r#"{"facts": []}"#.into())
    }));
    let (m, _d) = engine(quick());
    let m = m.with_chat(chat.clone(), mnemo::InferConfig::default());
    let mut earlier = AddRequest::text(ana(), "I live in Porto");
    earlier.infer = Some(false);
    m.add(earlier).await.unwrap();
    let mut req = AddRequest::text(ana(), "I keep bees on the roof");
    req.infer = Some(true);
    m.enqueue_add(req).await.unwrap();
    let ran = m.run_next_job("w").await.unwrap().expect("a job ran");
    assert_eq!(ran.status, JobStatus::Done, "{:?}", ran.last_error);
    let extract: Vec<String> = chat
        .requests()
        .iter()
        .map(|r| {
            r.messages
                .iter()
                .map(|c| c.content.as_str())
                .collect::<Vec<_>>()
                .join("\n")
        })
        .filter(|p| p.contains("NEW messages"))
        .collect();
    assert_eq!(extract.len(), 1, "{extract:?}");
    assert!(extract[0].contains("I live in Porto"), "{}", extract[0]);
    assert_eq!(
        extract[0].matches("I keep bees on the roof").count(),
        1,
        "{}",
        extract[0]
    );
}

/// `JobWorkers::stop` lets each worker end the job it runs: after it returns no job is
/// `running` (none is left under a lease nobody renews), and jobs still pending stay queued for
/// the next workers, which run every one of them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stopped_workers_leave_no_job_running_and_lose_none() {
    let (m, _d) = engine(quick());
    let workers = m.start_workers(1);
    let mut ids = Vec::new();
    for i in 0..8 {
        let job = m
            .enqueue_add(AddRequest::text(ana(), format!("stop fact {i}")))
            .await
            .unwrap();
        ids.push(job.id);
    }
    workers.stop().await;
    let stats = m.queue_stats().await.unwrap();
    assert_eq!(stats.running, 0, "{stats:?}");
    assert_eq!(stats.done + stats.pending, 8, "{stats:?}");
    let again = m.start_workers(1);
    let done = tokio::time::timeout(Duration::from_secs(20), async {
        while m.queue_stats().await.unwrap().done < 8 {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    assert!(done.is_ok(), "jobs not run: {:?}", m.queue_stats().await);
    again.stop().await;
    assert_eq!(count(&m).await, 8);
}
