//! Two `mnemo serve` processes on one PostgreSQL database: what one writes the other reads, a
//! key made for one works on the other, a revocation holds on both from the next request, and
//! concurrent adds through both lose nothing.
//!
//! PostgreSQL is `MNEMO_TEST_PG_URL` when set (as `scripts/test.sh` sets it), else one started
//! for this test process (`mnemo_testkit::engines::pg_url`); if it cannot start, the test fails
//! with the reason. The embedder is an OpenAI-compatible stub on 127.0.0.1 (hashed
//! bag-of-words vectors), shared by both servers.

use crate::clients::Server;
use crate::{mnemo, run_ok};
use mnemo_testkit::stub_http::StubEndpoint;
use serde_json::{json, Value};
use std::collections::BTreeSet;
use std::path::Path;
use std::time::Duration;

/// The admin URL of this run's PostgreSQL (`MNEMO_TEST_PG_URL`, or one started for this
/// process).
fn pg_server() -> &'static str {
    mnemo_testkit::engines::pg_url()
}

pub(crate) use mnemo_testkit::engines::{pg_sh, start_private};

/// A store URL for a new, empty schema of the test database (one per call: tests sharing the
/// run's server never meet).
pub(crate) fn fresh_store_url(tag: &str) -> String {
    static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let schema = format!("t_{tag}_{}_{n}", std::process::id());
    let mut admin = postgres::Client::connect(pg_server(), postgres::NoTls).expect("admin");
    admin
        .batch_execute(&format!(
            "DROP SCHEMA IF EXISTS {schema} CASCADE; CREATE SCHEMA {schema}"
        ))
        .expect("create schema");
    format!("{}?options=-c%20search_path%3D{schema},public", pg_server())
}

/// The global flags both servers and every CLI call share: the store and the stub embedder.
pub(crate) fn shared_flags(store: &str, embed: &StubEndpoint) -> Vec<String> {
    [
        "--store",
        store,
        "--embedder",
        "openai",
        "--embed-base-url",
        &embed.base_url,
        "--embed-model",
        "stub-16",
    ]
    .map(str::to_string)
    .to_vec()
}

/// `mnemo --data-dir DATA --json <shared flags> ARGS…`, with the JSON it printed.
pub(crate) fn cli(data: &Path, flags: &[String], args: &[&str]) -> Value {
    run_ok(mnemo(data).args(flags).args(args))
}

pub(crate) fn http_agent() -> ureq::Agent {
    ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(Duration::from_secs(120)))
        .build()
        .into()
}

/// One request; the status and the JSON body (`Null` when there is none).
pub(crate) fn call(
    agent: &ureq::Agent,
    method: &str,
    url: &str,
    key: &str,
    body: Option<Value>,
) -> (u16, Value) {
    let req = ureq::http::Request::builder()
        .method(method)
        .uri(url)
        .header("Authorization", format!("Bearer {key}"))
        .header("Content-Type", "application/json")
        .body(body.map(|b| b.to_string()).unwrap_or_default())
        .expect("request");
    let mut resp = agent.run(req).expect("the server answers");
    let status = resp.status().as_u16();
    let text = resp.body_mut().read_to_string().unwrap_or_default();
    (status, serde_json::from_str(&text).unwrap_or(Value::Null))
}

/// Every memory of `user` through `base`, walking the list's cursors.
pub(crate) fn list_all(agent: &ureq::Agent, base: &str, key: &str, user: &str) -> Vec<Value> {
    let mut out = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let url = match &cursor {
            Some(c) => format!("{base}/v1/memories?user_id={user}&limit=25&cursor={c}"),
            None => format!("{base}/v1/memories?user_id={user}&limit=25"),
        };
        let (status, body) = call(agent, "GET", &url, key, None);
        assert_eq!(status, 200, "{body}");
        out.extend(body["results"].as_array().expect("results").iter().cloned());
        match body["next_cursor"].as_str() {
            Some(c) => cursor = Some(c.to_string()),
            None => return out,
        }
    }
}

#[test]
fn two_servers_on_one_postgres_share_memories_keys_and_revocations() {
    let store = fresh_store_url("two_servers");
    let embed = StubEndpoint::embeddings(16);
    let flags = shared_flags(&store, &embed);
    let dir = tempfile::tempdir().unwrap();
    let (data_a, data_b) = (dir.path().join("a"), dir.path().join("b"));
    let global: Vec<&str> = flags.iter().map(String::as_str).collect();
    // Work is not priced: in a debug build on PostgreSQL the concurrent adds below each run
    // longer than the product's, and the key's rate is not what this test checks.
    let unpriced = ["--rate-limit-work-ms", "0"];
    let a = Server::start_with(&data_a, &global, &unpriced, &[]);
    let b = Server::start_with(&data_b, &global, &unpriced, &[]);
    let agent = http_agent();

    // A key made beside server A (its data directory, the shared store) works on both.
    let admin = cli(&data_a, &flags, &["keys", "create", "--admin"])["key"]
        .as_str()
        .expect("admin key")
        .to_string();

    // 1. What A writes, B finds.
    let (status, added) = call(
        &agent,
        "POST",
        &format!("{}/v1/memories", a.url),
        &admin,
        Some(json!({"text": "Alice keeps bees on a roof in Porto", "user_id": "alice"})),
    );
    assert_eq!(status, 200, "{added}");
    let id = added["results"][0]["id"].as_str().expect("id").to_string();
    let (status, found) = call(
        &agent,
        "POST",
        &format!("{}/v1/memories/search", b.url),
        &admin,
        Some(json!({"query": "bees in Porto", "user_id": "alice", "top_k": 3})),
    );
    assert_eq!(status, 200, "{found}");
    assert_eq!(found["results"][0]["id"], id.as_str(), "{found}");

    // 2. A scoped key made through B's configuration authenticates on A and on B.
    let bob = cli(&data_b, &flags, &["keys", "create", "--user-id", "bob"]);
    let (bob_key, bob_id) = (
        bob["key"].as_str().expect("key").to_string(),
        bob["id"].as_str().expect("id").to_string(),
    );
    for server in [&a, &b] {
        let (status, body) = call(
            &agent,
            "GET",
            &format!("{}/v1/memories", server.url),
            &bob_key,
            None,
        );
        assert_eq!(status, 200, "{}: {body}", server.url);
    }
    let listed = cli(&data_a, &flags, &["keys", "list"]);
    assert_eq!(
        listed["results"].as_array().map(Vec::len),
        Some(2),
        "{listed}"
    );

    // 3. Revoked beside A, refused by B on its very next request (and by A).
    cli(&data_a, &flags, &["keys", "revoke", &bob_id]);
    for server in [&b, &a] {
        let (status, body) = call(
            &agent,
            "GET",
            &format!("{}/v1/memories", server.url),
            &bob_key,
            None,
        );
        assert_eq!(status, 401, "{}: {body}", server.url);
    }

    // 4. Concurrent adds through both servers: every one lands, once, with its text.
    let (per_client, clients) = (15, 4);
    let mut handles = Vec::new();
    for c in 0..clients {
        let base = if c % 2 == 0 {
            a.url.clone()
        } else {
            b.url.clone()
        };
        let admin = admin.clone();
        handles.push(std::thread::spawn(move || {
            let agent = http_agent();
            (0..per_client)
                .map(|i| {
                    let text = format!("carol note {c}-{i}: tulips need {i} litres");
                    let (status, body) = call(
                        &agent,
                        "POST",
                        &format!("{base}/v1/memories"),
                        &admin,
                        Some(json!({"text": text, "user_id": "carol"})),
                    );
                    assert_eq!(status, 200, "{body}");
                    text
                })
                .collect::<Vec<_>>()
        }));
    }
    let sent: BTreeSet<String> = handles
        .into_iter()
        .flat_map(|h| h.join().expect("client thread"))
        .collect();
    assert_eq!(sent.len(), per_client * clients);
    for server in [&a, &b] {
        let listed = list_all(&agent, &server.url, &admin, "carol");
        let texts: Vec<String> = listed
            .iter()
            .map(|m| m["memory"].as_str().expect("memory text").to_string())
            .collect();
        assert_eq!(texts.len(), sent.len(), "{}: count", server.url);
        let got: BTreeSet<String> = texts.into_iter().collect();
        assert_eq!(got, sent, "{}: content", server.url);
    }
}
