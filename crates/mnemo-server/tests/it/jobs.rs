//! Async adds and jobs over HTTP: queued with 202 and run by the server's workers, their turns
//! listed by the session routes from the 202 on (once, after the run), read back within the
//! key's scope (another user's job is not found), refused at once when invalid, answered in
//! Mem0's platform shape on the Mem0 route, and refused with 429 and `Retry-After` once the
//! queue is at its depth, with the queue in `/metrics`.

use crate::{GatedEmbedder, TestServer};
use serde_json::{json, Value};
use std::sync::Arc;
use std::time::{Duration, Instant};

fn quick() -> mnemo::JobConfig {
    mnemo::JobConfig {
        poll: Duration::from_millis(20),
        ..mnemo::JobConfig::default()
    }
}

/// Polls a job until it is final (bounded).
fn settle(s: &TestServer, key: &str, id: &str) -> Value {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let r = s.call("GET", &format!("/v1/jobs/{id}"), Some(key), None);
        assert_eq!(r.status, 200, "{}", r.body);
        if r.body["status"] == "done" || r.body["status"] == "failed" {
            return r.body;
        }
        assert!(Instant::now() < deadline, "job never finished: {}", r.body);
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn async_adds_are_queued_run_and_read_within_their_scope() {
    let s = TestServer::start_with_jobs(quick(), |_| {});
    let bob = s.user_key("bob");
    let alice = s.user_key("alice");
    let r = s.call(
        "POST",
        "/v1/memories",
        Some(&bob),
        Some(json!({"text": "Bob plays the cello", "user_id": "bob", "async_mode": true})),
    );
    assert_eq!(r.status, 202, "{}", r.body);
    let id = r.body["job_id"].as_str().expect("job id").to_string();
    assert_eq!(r.body["status"], "pending");
    let job = settle(&s, &bob, &id);
    assert_eq!(job["status"], "done", "{job}");
    assert_eq!(job["user_id"], "bob");
    assert_eq!(job["result"]["results"][0]["memory"], "Bob plays the cello");
    let listed = s.call("GET", "/v1/memories?user_id=bob", Some(&bob), None);
    assert_eq!(listed.body["results"].as_array().map(Vec::len), Some(1));

    // Another user's key cannot see the job; an admin can.
    let other = s.call("GET", &format!("/v1/jobs/{id}"), Some(&alice), None);
    assert_eq!(
        (other.status, other.kind()),
        (404, "not_found"),
        "{}",
        other.body
    );
    let admin = s.call("GET", &format!("/v1/jobs/{id}"), Some(&s.admin), None);
    assert_eq!(admin.status, 200);
    let foreign_list = s.call("GET", "/v1/jobs?user_id=bob", Some(&alice), None);
    assert_eq!(foreign_list.status, 403, "{}", foreign_list.body);

    // Invalid input is refused at once and queues nothing.
    for bad in [
        json!({"text": "x", "user_id": "bob", "async_mode": true, "metadata": [1]}),
        json!({"text": "x", "user_id": "bob", "async_mode": true, "infer": true}),
        json!({"user_id": "bob", "async_mode": true}),
    ] {
        let r = s.call("POST", "/v1/memories", Some(&bob), Some(bad.clone()));
        assert_eq!(r.status, 400, "{bad}: {}", r.body);
    }
    let mine = s.call("GET", "/v1/jobs?user_id=bob", Some(&bob), None);
    assert_eq!(mine.status, 200, "{}", mine.body);
    assert_eq!(mine.body["results"].as_array().map(Vec::len), Some(1));

    // Mem0's route answers as Mem0's platform does.
    let m = s.call(
        "POST",
        "/v1/memories/",
        Some(&bob),
        Some(
            json!({"messages": [{"role": "user", "content": "Bob moved to Oslo"}],
                    "user_id": "bob", "infer": false, "async_mode": true}),
        ),
    );
    assert_eq!(m.status, 200, "{}", m.body);
    let queued = &m.body["results"][0];
    assert_eq!(queued["status"], "PENDING", "{}", m.body);
    let event = queued["event_id"].as_str().expect("event id");
    assert_eq!(settle(&s, &bob, event)["status"], "done");
    // The event Mem0's SDK polls: succeeded, with the memory events a blocking add answers.
    let e = s.call("GET", &format!("/v1/event/{event}/"), Some(&bob), None);
    assert_eq!(e.status, 200, "{}", e.body);
    assert_eq!(
        (&e.body["id"], &e.body["status"], &e.body["event_type"]),
        (&json!(event), &json!("SUCCEEDED"), &json!("ADD")),
        "{}",
        e.body
    );
    assert_eq!(e.body["results"][0]["memory"], "Bob moved to Oslo");
    assert_eq!(e.body["results"][0]["event"], "ADD");
    assert!(e.body["error"].is_null(), "{}", e.body);
    // Another user's key gets the answer an unknown event gets.
    let foreign = s.call("GET", &format!("/v1/event/{event}/"), Some(&alice), None);
    let missing = s.call(
        "GET",
        &format!("/v1/event/{}/", uuid::Uuid::new_v4()),
        Some(&alice),
        None,
    );
    assert_eq!((foreign.status, foreign.kind()), (404, "not_found"));
    assert_eq!((missing.status, missing.kind()), (404, "not_found"));
}

#[test]
fn a_full_queue_answers_429_with_retry_after_and_metrics_show_it() {
    let s = TestServer::start_with_jobs(
        mnemo::JobConfig {
            max_queue_depth: Some(2),
            ..quick()
        },
        // No workers: the queue only grows.
        |c| c.job_workers = 0,
    );
    let add = |text: &str| {
        s.call(
            "POST",
            "/v1/memories",
            Some(&s.admin),
            Some(json!({"text": text, "user_id": "ana", "async_mode": true})),
        )
    };
    assert_eq!(add("one").status, 202);
    assert_eq!(add("two").status, 202);
    let full = add("three");
    assert_eq!(
        (full.status, full.kind()),
        (429, "rate_limited"),
        "{}",
        full.body
    );
    assert_eq!(full.header("retry-after"), Some("5"));
    assert_eq!(full.body["error"]["retryable"], true);
    let metrics = s.raw("GET", "/metrics", None, None, None);
    let text = metrics.body.as_str().expect("metrics are text");
    for line in [
        "mnemo_jobs{status=\"pending\"} 2",
        "mnemo_jobs_refused_total 1",
        "mnemo_jobs_oldest_open_seconds",
    ] {
        assert!(text.contains(line), "{line} not in /metrics:\n{text}");
    }
}

/// An MCP client queues through `add_memory` with `async_mode` and follows the job with
/// `get_job`: the answer comes at once with a job id, the job runs, and its result names the
/// memory written; invalid input is a tool error at once, and a job of another user is not
/// found.
#[test]
fn mcp_clients_queue_with_add_memory_and_follow_with_get_job() {
    use crate::mcp::{call_tool, open_session};
    let s = TestServer::start_with_jobs(quick(), |_| {});
    let (bob, alice) = (s.user_key("bob"), s.user_key("alice"));
    let session = open_session(&s, &bob);
    let r = call_tool(
        &s,
        &bob,
        &session,
        "add_memory",
        json!({"text": "Bob tunes pianos on Saturdays", "async_mode": true, "infer": false}),
    );
    let queued = r.tool_json();
    assert_eq!(queued["status"], "pending", "{queued}");
    let id = queued["job_id"].as_str().expect("a job id").to_string();
    let deadline = Instant::now() + Duration::from_secs(60);
    let job = loop {
        let job = call_tool(&s, &bob, &session, "get_job", json!({"job_id": id})).tool_json();
        if job["status"] == "done" || job["status"] == "failed" {
            break job;
        }
        assert!(Instant::now() < deadline, "job never finished: {job}");
        std::thread::sleep(Duration::from_millis(10));
    };
    assert_eq!(job["status"], "done", "{job}");
    assert_eq!(
        job["result"]["results"][0]["memory"], "Bob tunes pianos on Saturdays",
        "{job}"
    );
    let found = call_tool(
        &s,
        &bob,
        &session,
        "search_memories",
        json!({"query": "pianos"}),
    )
    .tool_json();
    assert_eq!(
        found["results"].as_array().map(Vec::len),
        Some(1),
        "{found}"
    );

    // Invalid input is refused at once: a tool error, no job.
    let bad = call_tool(
        &s,
        &bob,
        &session,
        "add_memory",
        json!({"async_mode": true}),
    );
    let (_, kind, _) = bad.tool_error();
    assert_eq!(kind, "invalid_input", "{}", bad.text);

    // Another user's key does not find bob's job.
    let other = open_session(&s, &alice);
    let r = call_tool(&s, &alice, &other, "get_job", json!({"job_id": id}));
    let (_, kind, _) = r.tool_error();
    assert_eq!(kind, "not_found", "{}", r.text);
}

/// The turns of session `s1` of `key`'s user as the REST route lists them: (id, text).
fn s1_turns(s: &TestServer, key: &str) -> Vec<(String, String)> {
    let r = s.call("GET", "/v1/sessions/s1/messages", Some(key), None);
    assert_eq!(r.status, 200, "{}", r.body);
    r.body["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .map(|m| {
            let field = |k: &str| m[k].as_str().expect("a string").to_string();
            (field("id"), field("text"))
        })
        .collect()
}

/// An async add's turns are listed by the session routes as soon as the 202 is answered,
/// while its job's add is still held at the embedder; once the job is done each is listed once.
#[test]
fn an_async_adds_turns_are_listed_from_the_202_and_once_after_the_run() {
    let gate = Arc::new(GatedEmbedder::default());
    let s = TestServer::start_with(gate.clone(), |_| {});
    // Dropped before the server, so a failing test does not leave the worker held at the gate.
    let _open = gate.open_on_drop();
    let ana = s.user_key("ana");
    let turns = ["I keep bees on the roof", "How many hives?", "Three hives"];
    let r = s.call(
        "POST",
        "/v1/memories",
        Some(&ana),
        Some(json!({
            "messages": [
                {"role": "user", "content": turns[0]},
                {"role": "assistant", "content": turns[1]},
                {"role": "user", "content": turns[2]},
            ],
            "user_id": "ana", "session_id": "s1", "infer": false, "async_mode": true,
        })),
    );
    assert_eq!(r.status, 202, "{}", r.body);
    let id = r.body["job_id"].as_str().expect("job id").to_string();
    // A worker took the job and its add waits at the embedder: nothing of it is committed.
    gate.wait_for_held(1);
    let queued = s1_turns(&s, &ana);
    let texts: Vec<&str> = queued.iter().map(|(_, t)| t.as_str()).collect();
    assert_eq!(texts, turns);
    let sessions = s.call("GET", "/v1/sessions", Some(&ana), None);
    assert_eq!(
        sessions.body["sessions"][0]["messages"], 3,
        "{}",
        sessions.body
    );
    let listed = s.call("GET", "/v1/memories?user_id=ana", Some(&ana), None);
    assert_eq!(listed.body["results"].as_array().map(Vec::len), Some(0));

    gate.open();
    assert_eq!(settle(&s, &ana, &id)["status"], "done");
    assert_eq!(s1_turns(&s, &ana), queued, "each turn once, as logged");
    let sessions = s.call("GET", "/v1/sessions", Some(&ana), None);
    assert_eq!(
        sessions.body["sessions"][0]["messages"], 3,
        "{}",
        sessions.body
    );
    let listed = s.call("GET", "/v1/memories?user_id=ana", Some(&ana), None);
    assert_eq!(listed.body["results"].as_array().map(Vec::len), Some(3));
}

/// `--max-queue-depth` is each tenant's share: ana filling hers gets 429, while bob's async
/// adds are still queued (before, one tenant filling the queue refused everyone).
#[test]
fn one_tenant_filling_the_queue_leaves_others_their_share() {
    let s = TestServer::start_with_jobs(
        mnemo::JobConfig {
            max_queue_depth: Some(2),
            ..quick()
        },
        |c| c.job_workers = 0,
    );
    let (ana, bob) = (s.user_key("ana"), s.user_key("bob"));
    let add = |key: &str, user: &str, text: &str| {
        s.call(
            "POST",
            "/v1/memories",
            Some(key),
            Some(json!({"text": text, "user_id": user, "async_mode": true})),
        )
    };
    assert_eq!(add(&ana, "ana", "one").status, 202);
    assert_eq!(add(&ana, "ana", "two").status, 202);
    let full = add(&ana, "ana", "three");
    assert_eq!(
        (full.status, full.kind()),
        (429, "rate_limited"),
        "{}",
        full.body
    );
    for text in ["bob one", "bob two"] {
        let r = add(&bob, "bob", text);
        assert_eq!(r.status, 202, "bob is refused by ana's backlog: {}", r.body);
    }
    assert_eq!(add(&bob, "bob", "bob three").status, 429);
}
