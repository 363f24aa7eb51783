//! Concurrent writers through two `mnemo serve` processes on one PostgreSQL: eight writers in one
//! scope and eight in eight scopes lose and duplicate nothing (every answered id is listed once,
//! with its text, in its own scope only), and one idempotency key sent through both servers at
//! once writes once, every answer carrying the same result.
//!
//! PostgreSQL and the HTTP helpers come from `two_servers` (a schema of each test's own in the
//! run's server); the embedder is the same OpenAI-compatible stub for both servers.

use crate::clients::{Server, NO_RATE_LIMIT};
use crate::two_servers::{call, cli, fresh_store_url, http_agent, list_all, shared_flags};
use mnemo_testkit::stub_http::StubEndpoint;
use serde_json::{json, Value};
use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::sync::{Arc, Barrier};

/// Two servers on a fresh schema, and an admin key that works on both.
struct Pair {
    servers: [Server; 2],
    admin: String,
    _embed: StubEndpoint,
    _dir: tempfile::TempDir,
}

fn pair(tag: &str) -> Pair {
    let store = fresh_store_url(tag);
    let embed = StubEndpoint::embeddings(16);
    let flags = shared_flags(&store, &embed);
    let dir = tempfile::tempdir().unwrap();
    let data: [PathBuf; 2] = [dir.path().join("a"), dir.path().join("b")];
    let global: Vec<&str> = flags.iter().map(String::as_str).collect();
    let servers = [
        Server::start_with(&data[0], &global, NO_RATE_LIMIT, &[]),
        Server::start_with(&data[1], &global, NO_RATE_LIMIT, &[]),
    ];
    let admin = cli(&data[0], &flags, &["keys", "create", "--admin"])["key"]
        .as_str()
        .expect("admin key")
        .to_string();
    Pair {
        servers,
        admin,
        _embed: embed,
        _dir: dir,
    }
}

/// The (id, text) of a one-memory add answer.
fn added(body: &Value) -> (String, String) {
    let results = body["results"].as_array().expect("results");
    assert_eq!(results.len(), 1, "{body}");
    (
        results[0]["id"].as_str().expect("id").to_string(),
        results[0]["memory"].as_str().expect("memory").to_string(),
    )
}

/// Every memory of `user`, as id → text; fails on an id listed twice.
fn listed(pair: &Pair, server: usize, user: &str) -> BTreeMap<String, String> {
    let agent = http_agent();
    let mut out = BTreeMap::new();
    for m in list_all(&agent, &pair.servers[server].url, &pair.admin, user) {
        let id = m["id"].as_str().expect("id").to_string();
        let text = m["memory"].as_str().expect("memory").to_string();
        assert!(out.insert(id.clone(), text).is_none(), "{id} listed twice");
    }
    out
}

/// `writers` threads, writer `w` adding `per_writer` texts for `user_of(w)` through server
/// `w % 2`, all started together: every answer's id → text.
fn write_concurrently(
    pair: &Pair,
    writers: usize,
    per_writer: usize,
    user_of: fn(usize) -> String,
) -> Vec<BTreeMap<String, String>> {
    let start = Arc::new(Barrier::new(writers));
    let handles: Vec<_> = (0..writers)
        .map(|w| {
            let (base, key) = (pair.servers[w % 2].url.clone(), pair.admin.clone());
            let start = start.clone();
            std::thread::spawn(move || {
                let agent = http_agent();
                start.wait();
                let mut got = BTreeMap::new();
                for i in 0..per_writer {
                    let text = format!("writer {w} note {i}: the heron came back {} times", i + w);
                    let (status, body) = call(
                        &agent,
                        "POST",
                        &format!("{base}/v1/memories"),
                        &key,
                        Some(json!({"text": text, "user_id": user_of(w)})),
                    );
                    assert_eq!(status, 200, "writer {w}: {body}");
                    let (id, memory) = added(&body);
                    assert_eq!(memory, text, "writer {w}");
                    assert!(got.insert(id, memory).is_none(), "writer {w}: id reused");
                }
                got
            })
        })
        .collect();
    handles
        .into_iter()
        .map(|h| h.join().expect("writer thread"))
        .collect()
}

#[test]
fn eight_writers_in_one_scope_and_across_scopes_lose_and_duplicate_nothing() {
    let pair = pair("pg_writers");
    let (writers, per_writer) = (8, 8);

    // Eight writers, one scope: the scope's listing is exactly the union of the answers.
    let answered = write_concurrently(&pair, writers, per_writer, |_| "shared".to_string());
    let mut all = BTreeMap::new();
    for got in answered {
        for (id, text) in got {
            assert!(all.insert(id, text).is_none(), "one id answered twice");
        }
    }
    assert_eq!(all.len(), writers * per_writer);
    for server in 0..2 {
        assert_eq!(listed(&pair, server, "shared"), all, "server {server}");
    }

    // Eight writers, eight scopes: each scope lists its own writer's answers and nothing else.
    let answered = write_concurrently(&pair, writers, per_writer, |w| format!("solo{w}"));
    let mut ids = BTreeSet::new();
    for (w, got) in answered.iter().enumerate() {
        assert_eq!(got.len(), per_writer, "writer {w}");
        assert_eq!(
            &listed(&pair, (w + 1) % 2, &format!("solo{w}")),
            got,
            "scope of writer {w}"
        );
        ids.extend(got.keys().cloned());
    }
    assert_eq!(
        ids.len(),
        writers * per_writer,
        "an id shared by two scopes"
    );
    // The shared scope was not touched by the second round.
    assert_eq!(listed(&pair, 0, "shared"), all);
}

#[test]
fn one_idempotency_key_through_two_servers_writes_once() {
    let pair = pair("pg_idempotency");
    let (keys, senders) = (6, 4);
    let mut expected = BTreeMap::new();
    for k in 0..keys {
        let body = json!({
            "text": format!("the lighthouse keeper logged storm {k}"),
            "user_id": "dana",
            "idempotency_key": format!("storm-{k}"),
        });
        // Four senders, two through each server, released together.
        let start = Arc::new(Barrier::new(senders));
        let handles: Vec<_> = (0..senders)
            .map(|s| {
                let (base, key) = (pair.servers[s % 2].url.clone(), pair.admin.clone());
                let (start, body) = (start.clone(), body.clone());
                std::thread::spawn(move || {
                    let agent = http_agent();
                    start.wait();
                    call(
                        &agent,
                        "POST",
                        &format!("{base}/v1/memories"),
                        &key,
                        Some(body),
                    )
                })
            })
            .collect();
        let answers: Vec<(u16, Value)> = handles
            .into_iter()
            .map(|h| h.join().expect("sender thread"))
            .collect();
        for (status, body) in &answers {
            assert_eq!(*status, 200, "key {k}: {body}");
        }
        let first = &answers[0].1["results"];
        for (_, body) in &answers {
            assert_eq!(
                &body["results"], first,
                "key {k}: the same result for every sender"
            );
        }
        let fresh = answers
            .iter()
            .filter(|(_, b)| b["replayed"] == false)
            .count();
        assert_eq!(fresh, 1, "key {k}: exactly one answer wrote: {answers:?}");
        let (id, text) = added(&answers[0].1);
        expected.insert(id, text);
    }
    for server in 0..2 {
        assert_eq!(listed(&pair, server, "dana"), expected, "server {server}");
    }
}
