//! A client that hangs up: the work it started keeps its `--max-in-flight` slot until that work
//! has stopped, and the work stops at its next check instead of running to the end.

use crate::{GatedEmbedder, TestServer};
use mnemo_core::Embedder;
use serde_json::json;
use std::io::Write;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Counts the embedder's calls; every call waits at the gate.
#[derive(Default)]
struct Counting {
    gate: GatedEmbedder,
    calls: AtomicUsize,
}

impl Embedder for Counting {
    fn model_id(&self) -> &str {
        self.gate.model_id()
    }
    fn dimension(&self) -> usize {
        self.gate.dimension()
    }
    fn embed(&self, texts: &[&str]) -> mnemo_core::Result<Vec<Vec<f32>>> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        self.gate.embed(texts)
    }
}

fn abandoned_count(s: &TestServer) -> u64 {
    let r = s.raw("GET", "/metrics", None, None, None);
    let text = r.body.as_str().unwrap_or_default().to_string();
    text.lines()
        .find_map(|l| l.strip_prefix("mnemo_requests_abandoned_total "))
        .map_or(0, |v| v.trim().parse().unwrap())
}

#[test]
fn an_abandoned_add_holds_its_slot_until_its_work_stops_and_stops_early() {
    let embedder = Arc::new(Counting::default());
    let s = TestServer::start_with(embedder.clone(), |c| c.max_in_flight = 1);
    struct Open(Arc<Counting>);
    impl Drop for Open {
        fn drop(&mut self) {
            self.0.gate.open();
        }
    }
    let _release = Open(embedder.clone());
    let key = s.user_key("alice");
    // 640 messages: five embedder calls of 128 texts when the add runs to its end.
    let messages: Vec<_> = (0..640)
        .map(|i| json!({"role": "user", "content": format!("message number {i} about hiking")}))
        .collect();
    let body = json!({"messages": messages, "infer": false}).to_string();
    let addr = s.url.trim_start_matches("http://").to_string();
    let mut client = std::net::TcpStream::connect(&addr).unwrap();
    write!(
        client,
        "POST /v1/memories HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {key}\r\n\
         Content-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    embedder.gate.wait_for_held(1);
    // The client hangs up while the add is held in its first embedder call.
    client.shutdown(std::net::Shutdown::Both).unwrap();
    drop(client);
    let give_up = Instant::now() + Duration::from_secs(60);
    while abandoned_count(&s) < 1 {
        assert!(Instant::now() < give_up, "the server never saw the hang-up");
        std::thread::sleep(Duration::from_millis(10));
    }

    // The slot is still taken: a list (no embedder call) waits for it.
    let (tx, rx) = std::sync::mpsc::channel();
    let url = s.url.clone();
    let lister = {
        let key = key.clone();
        std::thread::spawn(move || {
            let agent: ureq::Agent = ureq::Agent::config_builder()
                .http_status_as_error(false)
                .build()
                .into();
            let mut resp = agent
                .get(&format!("{url}/v1/memories?user_id=alice"))
                .header("Authorization", &format!("Bearer {key}"))
                .call()
                .unwrap();
            let status = resp.status().as_u16();
            let body = resp.body_mut().read_to_string().unwrap();
            tx.send((status, body)).unwrap();
        })
    };
    assert!(
        rx.recv_timeout(Duration::from_millis(300)).is_err(),
        "the abandoned add's slot was handed out while its work still ran"
    );
    embedder.gate.open();
    let (status, body) = rx
        .recv_timeout(Duration::from_secs(60))
        .expect("the slot is freed once the work stops");
    lister.join().unwrap();
    assert_eq!(status, 200, "{body}");
    let listed: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(
        listed["results"].as_array().map(Vec::len),
        Some(0),
        "the abandoned add wrote nothing: {body}"
    );
    let calls = embedder.calls.load(Ordering::SeqCst);
    assert!(
        calls <= 2,
        "the abandoned add went on embedding: {calls} of 5 calls"
    );
    s.stop();
}
