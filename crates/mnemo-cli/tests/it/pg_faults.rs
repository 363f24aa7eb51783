//! PostgreSQL going away under load, behind two `mnemo serve` processes: while clients add and
//! search, the database is shut down (fast: sessions in flight are ended) and started again.
//! Every answer that is not a success is a 503 with the retryable `unavailable` kind; every add
//! answered 200 is in the store afterwards, with its text, once; and both servers, never
//! restarted, answer every request once the database is back — also after a restart that
//! happened while they were idle, which only their pooled connections noticed.
//!
//! The database is a private one (`scripts/pg.sh` in a directory of this test's own), since
//! taking the run's shared server down would fail the other tests. The pause between shutdown
//! and start lasts until a client has seen a 503, so the outage is observed whatever the timing.

use crate::clients::{Server, NO_RATE_LIMIT};
use crate::two_servers::{call, cli, http_agent, list_all, pg_sh, shared_flags, start_private};
use mnemo_testkit::stub_http::StubEndpoint;
use serde_json::{json, Value};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// What the clients saw.
#[derive(Default)]
struct Seen {
    /// Every text an add sent (answered or not).
    sent: Mutex<BTreeSet<String>>,
    /// Adds answered 200: id → text.
    acked: Mutex<BTreeMap<String, String>>,
    acked_n: AtomicUsize,
    unavailable: AtomicUsize,
    /// Answers that were neither a success nor a retryable `unavailable`.
    wrong: Mutex<Vec<String>>,
}

impl Seen {
    /// Files one answer; true when it was a success.
    fn answer(&self, what: &str, status: u16, body: &Value) -> bool {
        if status == 200 {
            return true;
        }
        let error = &body["error"];
        if status == 503 && error["kind"] == "unavailable" && error["retryable"] == true {
            self.unavailable.fetch_add(1, Ordering::SeqCst);
        } else {
            self.wrong
                .lock()
                .unwrap()
                .push(format!("{what}: {status} {body}"));
        }
        false
    }
}

/// Polls `done` until it holds; fails the test after `limit` with `what`.
fn wait_for(what: &str, limit: Duration, done: impl Fn() -> bool, logs: impl Fn() -> String) {
    let until = Instant::now() + limit;
    while !done() {
        assert!(
            Instant::now() < until,
            "timed out waiting for {what}\n{}",
            logs()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn a_database_restart_under_load_is_unavailable_then_recovered_with_no_acknowledged_add_lost() {
    let pg_dir = std::env::temp_dir().join(format!("mnemo-pg-faults-{}", std::process::id()));
    let store = start_private(&pg_dir)
        .unwrap_or_else(|why| panic!("PostgreSQL for the test could not start: {why}"));
    let embed = StubEndpoint::embeddings(16);
    let flags = shared_flags(&store, &embed);
    let dir = tempfile::tempdir().unwrap();
    let (data_a, data_b) = (dir.path().join("a"), dir.path().join("b"));
    let global: Vec<&str> = flags.iter().map(String::as_str).collect();
    let servers = [
        Server::start_with(&data_a, &global, NO_RATE_LIMIT, &[]),
        Server::start_with(&data_b, &global, NO_RATE_LIMIT, &[]),
    ];
    let admin = cli(&data_a, &flags, &["keys", "create", "--admin"])["key"]
        .as_str()
        .expect("admin key")
        .to_string();
    let urls: Vec<String> = servers.iter().map(|s| s.url.clone()).collect();
    let logs = || format!("A:\n{}\nB:\n{}", servers[0].log(), servers[1].log());

    // Six clients, each alternating servers: an add every round, a search every other one.
    let (seen, stop) = (Arc::new(Seen::default()), Arc::new(AtomicBool::new(false)));
    let clients: Vec<_> = (0..6)
        .map(|c| {
            let (seen, stop) = (seen.clone(), stop.clone());
            let (urls, key) = (urls.clone(), admin.clone());
            std::thread::spawn(move || {
                let agent = http_agent();
                // Bounded: the main thread stops the clients long before this.
                for i in 0..3000 {
                    if stop.load(Ordering::SeqCst) {
                        break;
                    }
                    let base = &urls[(c + i) % 2];
                    let text = format!("client {c} round {i}: the ferry left pier {}", i % 7);
                    seen.sent.lock().unwrap().insert(text.clone());
                    let (status, body) = call(
                        &agent,
                        "POST",
                        &format!("{base}/v1/memories"),
                        &key,
                        Some(json!({"text": text, "user_id": "erin"})),
                    );
                    let mut ok = seen.answer("add", status, &body);
                    if ok {
                        let result = &body["results"][0];
                        let id = result["id"].as_str().unwrap_or_default().to_string();
                        if result["memory"] != text.as_str() || id.is_empty() {
                            seen.wrong.lock().unwrap().push(format!("add answered {body}"));
                        }
                        seen.acked.lock().unwrap().insert(id, text);
                        seen.acked_n.fetch_add(1, Ordering::SeqCst);
                    }
                    if i % 2 == 1 {
                        let (status, body) = call(
                            &agent,
                            "POST",
                            &format!("{base}/v1/memories/search"),
                            &key,
                            Some(json!({"query": "which pier did the ferry leave", "user_id": "erin", "top_k": 3})),
                        );
                        ok &= seen.answer("search", status, &body);
                    }
                    if !ok {
                        // The database is down: no need to hammer the servers meanwhile.
                        std::thread::sleep(Duration::from_millis(20));
                    }
                }
            })
        })
        .collect();

    let acked = || seen.acked_n.load(Ordering::SeqCst);
    let limit = Duration::from_secs(90);
    wait_for("adds before the restart", limit, || acked() >= 12, logs);
    let pg = pg_dir.display().to_string();
    pg_sh(&["down", &pg]).expect("fast shutdown");
    wait_for(
        "a 503 while the database is down",
        limit,
        || seen.unavailable.load(Ordering::SeqCst) > 0,
        logs,
    );
    pg_sh(&["up", &pg]).expect("start again");
    let before = acked();
    wait_for(
        "adds after the restart",
        limit,
        || acked() >= before + 12,
        logs,
    );
    stop.store(true, Ordering::SeqCst);
    for c in clients {
        c.join().expect("client thread");
    }
    let wrong = seen.wrong.lock().unwrap().clone();
    assert!(
        wrong.is_empty(),
        "answers other than 200 or 503 unavailable: {wrong:#?}"
    );

    // The database is back: both servers, the same processes, answer every request.
    let agent = http_agent();
    let every_request_succeeds = |round: &str| {
        for (s, base) in urls.iter().enumerate() {
            for i in 0..5 {
                let text = format!("{round}, server {s} note {i}: the pier reopened");
                let (status, body) = call(
                    &agent,
                    "POST",
                    &format!("{base}/v1/memories"),
                    &admin,
                    Some(json!({"text": text, "user_id": "erin"})),
                );
                assert_eq!(status, 200, "{round}, server {s}: {body}");
                seen.sent.lock().unwrap().insert(text.clone());
                let id = body["results"][0]["id"].as_str().expect("id").to_string();
                seen.acked.lock().unwrap().insert(id, text);
                let (status, body) = call(
                    &agent,
                    "POST",
                    &format!("{base}/v1/memories/search"),
                    &admin,
                    Some(json!({"query": "the pier reopened", "user_id": "erin", "top_k": 3})),
                );
                assert_eq!(status, 200, "{round}, server {s}: {body}");
            }
        }
    };
    every_request_succeeds("after the restart under load");

    // A restart while both servers are idle: no request saw it, so the pooled connections are
    // broken unbeknown to the servers; the first requests afterwards must not fail on them.
    // (Waiting out the pool's idle-check threshold, 250 ms, makes them checked before use.)
    pg_sh(&["down", &pg]).expect("fast shutdown");
    pg_sh(&["up", &pg]).expect("start again");
    std::thread::sleep(Duration::from_millis(500));
    every_request_succeeds("after a quiet restart");

    // Every acknowledged add is stored, with its text; nothing is stored twice or unasked.
    let sent = seen.sent.lock().unwrap().clone();
    let acked = seen.acked.lock().unwrap().clone();
    for base in &urls {
        let mut stored = BTreeMap::new();
        let mut texts = BTreeSet::new();
        for m in list_all(&agent, base, &admin, "erin") {
            let (id, text) = (
                m["id"].as_str().expect("id"),
                m["memory"].as_str().expect("text"),
            );
            assert!(texts.insert(text.to_string()), "stored twice: {text}");
            assert!(sent.contains(text), "stored but never sent: {text}");
            stored.insert(id.to_string(), text.to_string());
        }
        for (id, text) in &acked {
            assert_eq!(
                stored.get(id),
                Some(text),
                "{base}: acknowledged add {id} is missing"
            );
        }
    }
    eprintln!(
        "restart under load: {} adds acknowledged, {} sent, {} answers 503 unavailable",
        acked.len(),
        sent.len(),
        seen.unavailable.load(Ordering::SeqCst)
    );
    drop(servers);
    let _ = pg_sh(&["stop", &pg]);
}
