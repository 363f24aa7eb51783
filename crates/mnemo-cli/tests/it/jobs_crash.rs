//! Async adds across `kill -9`: each round starts `mnemo serve` on the same store, queues adds
//! with `async_mode`, waits until a worker is inside one of them (the embedder stub holds that
//! call and says so), and kills the server with SIGKILL while that job runs and the rest wait.
//! After the last round a server runs whatever is left; then every job is done, every text is
//! stored exactly once (none lost, none applied twice), and the CLI reads the queue. Ten rounds
//! (`MNEMO_JOB_CRASH_ROUNDS`) on SQLite and on PostgreSQL. A second test puts two servers on
//! one PostgreSQL database and checks that each job runs once.

use crate::clients::Server;
use crate::two_servers::{call, fresh_store_url, http_agent, list_all};
use crate::*;
use mnemo_testkit::stub_http::{embeddings, StubEndpoint};
use serde_json::json;
use std::collections::BTreeMap;
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const ADDS_PER_ROUND: usize = 8;
const USER: &str = "crash";

fn rounds() -> usize {
    std::env::var("MNEMO_JOB_CRASH_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10)
}

/// An embeddings stub that holds the first call whose input contains the armed marker: it
/// reports the call on `seen` and answers only when `release` gets a message.
struct HoldingEmbedder {
    stub: StubEndpoint,
    marker: Arc<Mutex<Option<String>>>,
    seen: mpsc::Receiver<()>,
    release: mpsc::Sender<()>,
}

impl HoldingEmbedder {
    fn start() -> Self {
        let marker: Arc<Mutex<Option<String>>> = Arc::default();
        let (seen_tx, seen) = mpsc::channel();
        let (release, release_rx) = mpsc::channel::<()>();
        let (armed, seen_tx, release_rx) =
            (marker.clone(), Mutex::new(seen_tx), Mutex::new(release_rx));
        let stub = StubEndpoint::start(move |body| {
            let Some(input) = body["input"].as_array() else {
                return (400, "{\"error\":\"input must be a list\"}".into());
            };
            let texts: Vec<&str> = input.iter().map(|t| t.as_str().unwrap_or("")).collect();
            let hold = {
                let mut m = armed.lock().unwrap();
                let hit = m
                    .as_deref()
                    .is_some_and(|m| texts.iter().any(|t| t.contains(m)));
                if hit {
                    *m = None;
                }
                hit
            };
            if hold {
                let _ = seen_tx.lock().unwrap().send(());
                // Bounded: the test releases right after its kill.
                let _ = release_rx
                    .lock()
                    .unwrap()
                    .recv_timeout(Duration::from_secs(120));
            }
            let vectors: Vec<Vec<f32>> = texts
                .iter()
                .map(|t| mnemo_testkit::HashEmbedder::vector_in(t, 16))
                .collect();
            (200, embeddings(&vectors))
        });
        Self {
            stub,
            marker,
            seen,
            release,
        }
    }

    fn arm(&self, marker: &str) {
        *self.marker.lock().unwrap() = Some(marker.to_string());
    }
}

fn flags(store: Option<&str>, embed: &StubEndpoint) -> Vec<String> {
    let mut f = Vec::new();
    if let Some(s) = store {
        f.extend(["--store".to_string(), s.to_string()]);
    }
    f.extend(
        [
            "--embedder",
            "openai",
            "--embed-base-url",
            &embed.base_url,
            "--embed-model",
            "stub-16",
        ]
        .map(str::to_string),
    );
    f
}

/// A server whose jobs are leased for one second: a dead server's job is taken over one second
/// after its claim.
fn start(data: &Path, flags: &[String], workers: &str) -> Server {
    start_leased(data, flags, workers, "1")
}

fn start_leased(data: &Path, flags: &[String], workers: &str, lease_secs: &str) -> Server {
    let global: Vec<&str> = flags.iter().map(String::as_str).collect();
    Server::start_with(
        data,
        &global,
        // The test polls each job; the per-key rate limit is not what it checks.
        &["--job-workers", workers, "--rate-limit-per-minute", "0"],
        &[
            ("MNEMO_JOB_LEASE_SECS", lease_secs),
            ("MNEMO_JOB_POLL_MS", "20"),
        ],
    )
}

/// Queues an async add; returns its job id.
fn queue(agent: &ureq::Agent, base: &str, key: &str, text: &str) -> String {
    let (status, body) = call(
        agent,
        "POST",
        &format!("{base}/v1/memories"),
        key,
        Some(json!({"text": text, "user_id": USER, "infer": false, "async_mode": true})),
    );
    assert_eq!(status, 202, "{body}");
    assert_eq!(body["status"], "pending", "{body}");
    body["job_id"].as_str().expect("a job id").to_string()
}

/// Waits (bounded) until every job in `ids` is done or failed; returns each job's view.
fn settle(agent: &ureq::Agent, base: &str, key: &str, ids: &[String]) -> Vec<Value> {
    let deadline = Instant::now() + Duration::from_secs(180);
    let mut out = Vec::new();
    for id in ids {
        loop {
            let (status, job) = call(agent, "GET", &format!("{base}/v1/jobs/{id}"), key, None);
            assert_eq!(status, 200, "{job}");
            if job["status"] == "done" || job["status"] == "failed" {
                out.push(job);
                break;
            }
            assert!(Instant::now() < deadline, "job {id} never finished: {job}");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    out
}

fn crash_rounds(store: Option<String>) {
    let embed = HoldingEmbedder::start();
    let flags = flags(store.as_deref(), &embed.stub);
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let key = run_ok(
        mnemo(&data)
            .args(&flags)
            .args(["keys", "create", "--admin"]),
    )["key"]
        .as_str()
        .expect("admin key")
        .to_string();
    let agent = http_agent();
    let mut sent: Vec<(String, String)> = Vec::new();
    let rounds = rounds();
    for r in 0..rounds {
        let mut server = start(&data, &flags, "2");
        let marker = format!("held{r}");
        embed.arm(&marker);
        for i in 0..ADDS_PER_ROUND {
            let text = if i == 0 {
                format!("round {r} add {i} {marker}")
            } else {
                format!("round {r} add {i}")
            };
            let id = queue(&agent, &server.url, &key, &text);
            sent.push((id, text));
        }
        // A worker is inside this round's first add: kill the server under it.
        embed
            .seen
            .recv_timeout(Duration::from_secs(120))
            .unwrap_or_else(|_| {
                panic!(
                    "round {r}: no worker reached the held add\n{}",
                    server.log()
                )
            });
        let status = server.kill();
        assert!(!status.success(), "round {r}: the server exited by itself");
        embed
            .release
            .send(())
            .expect("the stub waits for the release");
    }
    let server = start(&data, &flags, "2");
    let ids: Vec<String> = sent.iter().map(|(id, _)| id.clone()).collect();
    let jobs = settle(&agent, &server.url, &key, &ids);
    let retaken = jobs
        .iter()
        .filter(|j| j["attempts"].as_u64() > Some(1))
        .count();
    for job in &jobs {
        assert_eq!(job["status"], "done", "{job}");
    }
    assert!(
        retaken >= rounds,
        "every held job ran again after its kill: {retaken} of {rounds}"
    );
    // Each text exactly once: nothing lost, nothing applied twice.
    let mut stored: BTreeMap<String, usize> = BTreeMap::new();
    for m in list_all(&agent, &server.url, &key, USER) {
        *stored
            .entry(m["memory"].as_str().expect("text").to_string())
            .or_default() += 1;
    }
    let expected: BTreeMap<String, usize> = sent.iter().map(|(_, t)| (t.clone(), 1)).collect();
    assert_eq!(stored, expected);
    // The CLI reads the same queue.
    let failed = run_ok(
        mnemo(&data)
            .args(&flags)
            .args(["jobs", "list", "--status", "failed"]),
    );
    assert_eq!(failed["results"], json!([]), "{failed}");
    let shown = run_ok(mnemo(&data).args(&flags).args(["jobs", "show", &ids[0]]));
    assert_eq!(shown["status"], "done", "{shown}");
    eprintln!(
        "jobs crash: {rounds} kills, {} jobs, {retaken} taken over after a kill, {} memories",
        jobs.len(),
        stored.len()
    );
}

#[test]
fn sigkill_with_jobs_queued_and_running_loses_none_and_applies_none_twice_sqlite() {
    crash_rounds(None);
}

#[test]
fn sigkill_with_jobs_queued_and_running_loses_none_and_applies_none_twice_postgres() {
    crash_rounds(Some(fresh_store_url("jobs_crash")));
}

#[test]
fn two_servers_on_one_postgres_run_each_job_once() {
    let store = fresh_store_url("jobs_two");
    let embed = StubEndpoint::embeddings(16);
    let flags = flags(Some(&store), &embed);
    let dir = tempfile::tempdir().unwrap();
    let (data_a, data_b) = (dir.path().join("a"), dir.path().join("b"));
    let key = run_ok(
        mnemo(&data_a)
            .args(&flags)
            .args(["keys", "create", "--admin"]),
    )["key"]
        .as_str()
        .expect("admin key")
        .to_string();
    // A queues without running anything; B starts its workers once all are queued, then A's.
    // Nothing dies here, so no lease runs out: a job that a slow (loaded) machine keeps busy
    // for over a second must not be taken over, and "once" means one attempt.
    let a = start_leased(&data_a, &flags, "0", "120");
    let agent = http_agent();
    let sent: Vec<(String, String)> = (0..40)
        .map(|i| {
            let text = format!("shared queue item {i}");
            (queue(&agent, &a.url, &key, &text), text)
        })
        .collect();
    let b = start_leased(&data_b, &flags, "3", "120");
    let a2 = start_leased(&data_a, &flags, "3", "120");
    let ids: Vec<String> = sent.iter().map(|(id, _)| id.clone()).collect();
    let jobs = settle(&agent, &b.url, &key, &ids);
    for job in &jobs {
        assert_eq!(
            (&job["status"], &job["attempts"]),
            (&json!("done"), &json!(1)),
            "{job}"
        );
    }
    let mut texts: Vec<String> = list_all(&agent, &a2.url, &key, USER)
        .iter()
        .map(|m| m["memory"].as_str().expect("text").to_string())
        .collect();
    texts.sort();
    let mut expected: Vec<String> = sent.into_iter().map(|(_, t)| t).collect();
    expected.sort();
    assert_eq!(texts, expected);
    drop(a);
}
