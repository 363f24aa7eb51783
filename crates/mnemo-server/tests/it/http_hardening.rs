//! The HTTP edge as a hostile client meets it, over raw TCP so nothing is normalised on the
//! way: DNS rebinding against a key-less server, clients that never finish their headers or
//! body (slowloris), a declared body too large to ever accept, and 401s that name their scheme.
//!
//! Servers that must give up on a slow client run with read timeouts of a fraction of a second;
//! each read has a generous failsafe so that a server holding the connection fails the test
//! instead of hanging it. The tests assert what the client sees (status, closed connection),
//! never how long it took.

use crate::TestServer;
use mnemo::Memory;
use mnemo_core::RankParams;
use mnemo_server::rest::HttpConfig;
use mnemo_server::{KeyStore, RunningServer, ScopeParts, ServerConfig};
use mnemo_testkit::HashEmbedder;
use serde_json::{json, Value};
use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::Arc;
use std::time::Duration;

/// How long a read waits before the test calls the connection held open.
const FAILSAFE: Duration = Duration::from_secs(15);
/// The read timeouts of servers that must give up on slow clients.
const SHORT: Duration = Duration::from_millis(300);

/// A server started with HTTP settings of the test's choosing.
struct Served {
    addr: SocketAddr,
    admin: String,
    server: Option<RunningServer>,
    rt: tokio::runtime::Runtime,
    _dir: tempfile::TempDir,
}

impl Served {
    fn start(tweak: impl FnOnce(&mut HttpConfig)) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        let store: Arc<dyn mnemo_core::Store> =
            Arc::new(mnemo_store_sqlite::SqliteStore::open(dir.path().join("mnemo.db")).unwrap());
        let memory =
            Memory::from_parts(store.clone(), Arc::new(HashEmbedder), RankParams::default())
                .unwrap();
        let cfg = ServerConfig::new("127.0.0.1:0".parse().unwrap(), dir.path().join("keys.db"));
        let mut http = HttpConfig::new(&cfg);
        tweak(&mut http);
        let server = rt
            .block_on(mnemo_server::server::start_with(
                memory,
                &cfg,
                http,
                std::future::pending(),
            ))
            .unwrap();
        let admin = KeyStore::new(store)
            .unwrap()
            .create(Some("admin"), true, &ScopeParts::default())
            .unwrap()
            .key;
        Self {
            addr: server.addr,
            admin,
            server: Some(server),
            rt,
            _dir: dir,
        }
    }

    fn stop(mut self) {
        if let Some(s) = self.server.take() {
            self.rt.block_on(s.shutdown()).unwrap();
        }
    }
}

fn addr_of(s: &TestServer) -> SocketAddr {
    s.url.trim_start_matches("http://").parse().unwrap()
}

/// What came back on a connection before the server closed it.
struct Answer {
    status: u16,
    head: String,
    body: Value,
}

impl Answer {
    fn kind(&self) -> &str {
        self.body["error"]["kind"].as_str().unwrap_or("")
    }

    fn header(&self, name: &str) -> Option<&str> {
        self.head.lines().skip(1).find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.trim().eq_ignore_ascii_case(name).then_some(v.trim())
        })
    }
}

/// Sends `bytes` as they are on a new connection, then sends nothing more.
fn send(addr: SocketAddr, bytes: &[u8]) -> TcpStream {
    let mut c = TcpStream::connect(addr).unwrap();
    c.set_read_timeout(Some(FAILSAFE)).unwrap();
    c.write_all(bytes).unwrap();
    c.flush().unwrap();
    c
}

/// Reads until the server closes the connection; panics if it holds it open instead.
fn read_until_closed(mut c: TcpStream, what: &str) -> Vec<u8> {
    let mut got = Vec::new();
    let mut buf = [0u8; 8192];
    loop {
        match c.read(&mut buf) {
            Ok(0) => return got,
            Ok(n) => got.extend_from_slice(&buf[..n]),
            // A reset is the server closing too (it closed with our bytes unread).
            Err(e) if e.kind() == ErrorKind::ConnectionReset => return got,
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                panic!(
                    "{what}: the server still holds the connection open; got so far: {:?}",
                    String::from_utf8_lossy(&got)
                )
            }
            Err(e) => panic!("{what}: {e}"),
        }
    }
}

/// One request on its own connection; the answer read until the server closes it.
fn exchange(addr: SocketAddr, request: &str, what: &str) -> Answer {
    let got = read_until_closed(send(addr, request.as_bytes()), what);
    let text = String::from_utf8_lossy(&got).to_string();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("{what}: no HTTP answer in {text:?}"));
    Answer {
        status,
        head: head.to_string(),
        body: serde_json::from_str(body).unwrap_or(Value::String(body.to_string())),
    }
}

fn get(path: &str, host: &str) -> String {
    format!("GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n")
}

fn post_json(path: &str, host: &str, body: &str) -> String {
    format!(
        "POST {path} HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
}

fn keyless() -> TestServer {
    TestServer::start_with(Arc::new(HashEmbedder), |c| c.no_auth = true)
}

/// DNS rebinding: a page on rebind.evil.example re-points its name to 127.0.0.1 and, being
/// same-origin with itself, reads and writes a key-less server through the victim's browser.
/// Every route must refuse a Host that does not name this machine.
#[test]
fn dns_rebinding_host_cannot_read_or_write_a_keyless_server() {
    let s = keyless();
    let addr = addr_of(&s);
    let port = addr.port();
    s.seed("alice", "Alice's door code is 4711");
    let before = s.snapshot();
    let evil = format!("rebind.evil.example:{port}");
    let a = exchange(addr, &get("/v1/export", &evil), "rebound export");
    assert_eq!(
        (a.status, a.kind()),
        (403, "host_not_allowed"),
        "{:?}",
        a.body
    );
    assert!(!a.body.to_string().contains("4711"), "{:?}", a.body);
    let a = exchange(
        addr,
        &post_json(
            "/v1/memories",
            &evil,
            r#"{"text": "planted by a web page", "user_id": "alice"}"#,
        ),
        "rebound write",
    );
    assert_eq!(
        (a.status, a.kind()),
        (403, "host_not_allowed"),
        "{:?}",
        a.body
    );
    assert_eq!(s.snapshot(), before, "the rebound write reached the store");
    // Every route, near misses of loopback names, and an absolute-form target naming another
    // machine behind an allowed Host.
    for (path, host) in [
        ("/healthz", evil.as_str()),
        ("/metrics", evil.as_str()),
        ("/mcp", evil.as_str()),
        ("/v1/export", "localhost.evil.example"),
        ("/v1/export", "127.0.0.1.nip.io"),
        ("/v1/export", "evil.example:80@localhost"),
        ("/v1/export", "localhost:abc"),
    ] {
        let a = exchange(addr, &get(path, host), path);
        assert_eq!(
            (a.status, a.kind()),
            (403, "host_not_allowed"),
            "{path} {host}"
        );
    }
    let a = exchange(
        addr,
        "GET http://rebind.evil.example/v1/export HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n",
        "absolute-form target",
    );
    assert_eq!(
        (a.status, a.kind()),
        (403, "host_not_allowed"),
        "{:?}",
        a.body
    );
    // HTTP/1.0 without a Host cannot show where it was meant to go.
    let a = exchange(addr, "GET /v1/export HTTP/1.0\r\n\r\n", "no Host");
    assert_eq!(
        (a.status, a.kind()),
        (403, "host_not_allowed"),
        "{:?}",
        a.body
    );
    s.stop();
}

#[test]
fn loopback_names_still_reach_a_keyless_server() {
    let s = keyless();
    let addr = addr_of(&s);
    let port = addr.port();
    for host in [
        "localhost".to_string(),
        format!("localhost:{port}"),
        format!("LocalHost:{port}"),
        "127.0.0.1".to_string(),
        format!("127.0.0.1:{port}"),
        "[::1]".to_string(),
        format!("[::1]:{port}"),
    ] {
        let a = exchange(addr, &get("/v1/export", &host), &host);
        assert_eq!(a.status, 200, "{host}: {:?}", a.body);
    }
    s.stop();
}

/// With API keys each request proves itself: any name may reach the server.
#[test]
fn with_api_keys_the_host_is_not_checked() {
    let s = TestServer::start();
    let addr = addr_of(&s);
    let req = format!(
        "GET /v1/export HTTP/1.1\r\nHost: mnemo.internal.example\r\nAuthorization: Bearer {}\r\n\
         Connection: close\r\n\r\n",
        s.admin
    );
    let a = exchange(addr, &req, "keyed, any host");
    assert_eq!(a.status, 200, "{:?}", a.body);
    let a = exchange(addr, &get("/v1/export", "mnemo.internal.example"), "no key");
    assert_eq!(
        (a.status, a.kind()),
        (401, "unauthenticated"),
        "{:?}",
        a.body
    );
    s.stop();
}

/// RFC 9110: a 401 carries `WWW-Authenticate`, whether the key is missing or unknown.
#[test]
fn every_401_carries_www_authenticate_bearer() {
    let s = TestServer::start();
    for key in [None, Some("mnemo_not_a_real_key")] {
        for path in ["/v1/export", "/v1/memories?user_id=alice", "/mcp"] {
            let r = s.call("GET", path, key, None);
            assert_eq!((r.status, r.kind()), (401, "unauthenticated"), "{path}");
            assert_eq!(
                r.header("www-authenticate"),
                Some(r#"Bearer realm="mnemo""#),
                "{path} {key:?}"
            );
        }
    }
    // Other refusals do not ask for credentials.
    let r = s.call("GET", "/v1/export", Some(&s.user_key("alice")), None);
    assert_eq!(r.status, 403, "{:?}", r.body);
    assert_eq!(r.header("www-authenticate"), None);
    s.stop();
}

/// Slowloris: headers that never end must not hold a connection (nor its task) forever; the
/// server closes it once the header read timeout passes, before any authentication.
#[test]
fn slowloris_unfinished_headers_get_the_connection_closed() {
    let s = Served::start(|h| h.header_read_timeout = SHORT);
    let c = send(
        s.addr,
        b"GET /v1/export HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Padding: aaaa",
    );
    read_until_closed(c, "unfinished headers");
    // Nothing at all after connecting is the same attack.
    let c = send(s.addr, b"");
    read_until_closed(c, "silent connection");
    s.stop();
}

/// Slow body: `Content-Length: 1000` and 12 bytes sent. The server answers 408 once the body
/// read timeout passes and closes the connection, with a valid key or none at all (the body
/// deadline runs before authentication).
#[test]
fn slow_body_gets_408_and_the_connection_closed() {
    let s = Served::start(|h| h.body_read_timeout = SHORT);
    for auth in [
        format!("Authorization: Bearer {}\r\n", s.admin),
        String::new(),
    ] {
        let req = format!(
            "POST /v1/memories HTTP/1.1\r\nHost: 127.0.0.1\r\n{auth}\
             Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n{{\"text\": \"x"
        );
        let a = exchange(s.addr, &req, "slow body");
        assert_eq!(
            (a.status, a.kind()),
            (408, "request_timeout"),
            "{:?}",
            a.body
        );
        assert_eq!(a.header("connection"), Some("close"));
    }
    // Bodies that do arrive are served as before.
    let body = r#"{"text": "on time", "user_id": "alice"}"#;
    let req = format!(
        "POST /v1/memories HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {}\r\n\
         Content-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        s.admin,
        body.len()
    );
    let a = exchange(s.addr, &req, "whole body");
    assert_eq!(a.status, 200, "{:?}", a.body);
    s.stop();
}

/// `Content-Length: 10000000000` and no body: refused with 413 at once, before authentication
/// and without waiting for (or reading) a byte of the body; then the connection closes.
#[test]
fn ten_gigabyte_content_length_is_refused_before_the_body_is_sent() {
    let s = TestServer::start();
    let addr = addr_of(&s);
    for path in ["/v1/memories", "/v1/import", "/mcp", "/v3/memories/add/"] {
        let req = format!(
            "POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n\
             Content-Length: 10000000000\r\n\r\n"
        );
        let a = exchange(addr, &req, path);
        assert_eq!(
            (a.status, a.kind()),
            (413, "payload_too_large"),
            "{path}: {:?}",
            a.body
        );
        assert_eq!(a.header("connection"), Some("close"), "{path}");
    }
    // With a key it is the same answer.
    let req = format!(
        "POST /v1/memories HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {}\r\n\
         Content-Type: application/json\r\nContent-Length: 10000000000\r\n\r\n",
        s.admin
    );
    assert_eq!(exchange(addr, &req, "keyed").status, 413);
    s.stop();
}

/// The flaky "peer disconnected" of the oversized-body tests, at its cause: the server answered
/// 413 from the declared length and closed with the body unread, so its kernel reset the
/// connection and a client still writing (ureq without `Expect: 100-continue`) never read the
/// answer. Now the server's close lingers: FIN first, then it discards what the client still
/// sends, so the client finishes writing and reads the 413.
#[test]
fn a_client_that_sends_an_oversized_body_anyway_reads_the_413() {
    let s = TestServer::start_with(Arc::new(HashEmbedder), |c| c.max_body_bytes = 4096);
    let addr = addr_of(&s);
    let body = vec![b'x'; 4 << 20];
    let head = format!(
        "POST /v1/memories HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n\
         Authorization: Bearer {}\r\nContent-Length: {}\r\n\r\n",
        s.admin,
        body.len()
    );
    let mut c = TcpStream::connect(addr).unwrap();
    c.set_read_timeout(Some(FAILSAFE)).unwrap();
    c.set_write_timeout(Some(FAILSAFE)).unwrap();
    c.write_all(head.as_bytes()).unwrap();
    // The whole body, as a client that does not wait for an early answer sends it. With the old
    // close this write itself failed (broken pipe / reset) more often than not.
    c.write_all(&body)
        .expect("the server reads what the client still sends");
    let got = read_until_closed(c, "oversized body");
    let text = String::from_utf8_lossy(&got);
    assert!(text.starts_with("HTTP/1.1 413"), "{text}");
}

/// A database that holds every request (here: a lock on the memories table no statement may
/// pass): requests fail with a retryable 503 at the store's lock timeout, and `/readyz` answers
/// 503 within its own deadline although the store's timeout is far longer. Before, both waited
/// for as long as the database did (the probe's frozen PostgreSQL: 25 s).
#[test]
fn a_stuck_database_gives_503_and_readyz_answers_within_its_deadline() {
    fn answers_within_a_minute(
        s: &TestServer,
        method: &str,
        path: &str,
        key: &str,
    ) -> crate::Reply {
        let (url, key, method, path) = (
            s.url.clone(),
            key.to_string(),
            method.to_string(),
            path.to_string(),
        );
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let agent: ureq::Agent = ureq::Agent::config_builder()
                .http_status_as_error(false)
                .build()
                .into();
            let req = ureq::http::Request::builder()
                .method(method.as_str())
                .uri(format!("{url}{path}"))
                .header("Authorization", format!("Bearer {key}"))
                .body(Vec::new())
                .unwrap();
            let mut resp = agent.run(req).unwrap();
            let status = resp.status().as_u16();
            let text = resp.body_mut().read_to_string().unwrap_or_default();
            let _ = tx.send((status, text));
        });
        let (status, text) = rx
            .recv_timeout(std::time::Duration::from_secs(60))
            .expect("the request hung with the database");
        crate::Reply {
            status,
            body: serde_json::from_str(&text).unwrap_or(serde_json::Value::String(text)),
            headers: Vec::new(),
        }
    }
    let pg = mnemo_testkit::engines::pg_url();
    let check = |lock_timeout: &str, path: &str| {
        let s = TestServer::start_postgres_with(&format!("%20-c%20lock_timeout%3D{lock_timeout}"));
        let key = s.user_key("alice");
        let mut admin = postgres::Client::connect(pg, postgres::NoTls).unwrap();
        let mut tx = admin.transaction().unwrap();
        tx.batch_execute(&format!(
            "LOCK TABLE {}.memories IN ACCESS EXCLUSIVE MODE",
            s.pg_schema()
        ))
        .unwrap();
        let r = answers_within_a_minute(&s, "GET", path, &key);
        tx.rollback().unwrap();
        r
    };
    // A request meets the store's lock timeout: 503, retryable.
    let r = check("300ms", "/v1/memories?user_id=alice");
    assert_eq!(r.status, 503, "{:?}", r.body);
    assert_eq!(r.body["error"]["retryable"], true, "{:?}", r.body);
    // The readiness probe does not wait ten minutes for the store: its own deadline answers.
    let r = check("600s", "/readyz");
    assert_eq!(r.status, 503, "{:?}", r.body);
}

/// Request headers beyond the server's limit (32 KiB) are answered 431 and the connection
/// closed; headers well under it are served. (Before, ~488 KB of headers were read.)
#[test]
fn oversized_request_headers_get_431() {
    let s = keyless();
    let addr = addr_of(&s);
    let with_header = |bytes: usize| {
        format!(
            "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Filler: {}\r\nConnection: close\r\n\r\n",
            "a".repeat(bytes)
        )
    };
    let ok = exchange(addr, &with_header(8 * 1024), "8 KiB of headers");
    assert_eq!(ok.status, 200, "{}", ok.head);
    let big = exchange(addr, &with_header(40 * 1024), "40 KiB of headers");
    assert_eq!(big.status, 431, "{}", big.head);
}

/// `/v1` JSON answers — successes and errors — say `X-Content-Type-Options: nosniff`.
#[test]
fn api_answers_forbid_content_sniffing() {
    let s = TestServer::start();
    let key = s.user_key("ana");
    for (method, path, body) in [
        (
            "POST",
            "/v1/memories",
            Some(json!({"text": "hi", "user_id": "ana"})),
        ),
        ("GET", "/v1/memories?user_id=ana", None),
        ("GET", "/v1/memories/not-a-uuid?user_id=ana", None),
        ("GET", "/v1/memories?user_id=bob", None),
    ] {
        let r = s.call(method, path, Some(&key), body);
        assert_eq!(
            r.header("x-content-type-options"),
            Some("nosniff"),
            "{method} {path} ({})",
            r.status
        );
    }
}

/// Two different keys in one request (`Authorization` and `X-API-Key`) are refused with 400,
/// whichever would have been valid; the same key in both is served.
#[test]
fn two_different_keys_in_one_request_are_refused() {
    let s = TestServer::start();
    let (alice, bob) = (s.user_key("alice"), s.user_key("bob"));
    let addr = addr_of(&s);
    let req = |auth: &str, x: &str| {
        format!(
            "GET /v1/memories?user_id=bob HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {auth}\r\n\
             X-API-Key: {x}\r\nConnection: close\r\n\r\n"
        )
    };
    let both = exchange(addr, &req(&alice, &bob), "two keys");
    assert_eq!(both.status, 400, "{}", both.head);
    assert!(
        both.body.to_string().contains("two different API keys"),
        "{}",
        both.body
    );
    let same = exchange(addr, &req(&bob, &bob), "one key twice");
    assert_eq!(same.status, 200, "{}", same.head);
}
