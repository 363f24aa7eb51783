//! Graceful shutdown: a write in flight when the server is told to stop completes, is answered
//! and is in the store; new connections are refused afterwards.

use crate::{SlowEmbedder, TestServer};
use serde_json::json;
use std::sync::Arc;
use std::time::Duration;

#[test]
fn shutdown_finishes_in_flight_writes() {
    let mut s = TestServer::start_with(Arc::new(SlowEmbedder(Duration::from_millis(800))), |_| {});
    let key = s.user_key("alice");
    let url = s.url.clone();
    let writer = {
        let key = key.clone();
        let url = url.clone();
        std::thread::spawn(move || {
            let agent: ureq::Agent = ureq::Agent::config_builder()
                .http_status_as_error(false)
                .build()
                .into();
            let mut resp = agent
                .post(&format!("{url}/v1/memories"))
                .header("Authorization", &format!("Bearer {key}"))
                .send_json(json!({"text": "written during shutdown"}))
                .unwrap();
            (
                resp.status().as_u16(),
                resp.body_mut().read_to_string().unwrap(),
            )
        })
    };
    // Let the request reach the (slow) embedder, then stop the server.
    std::thread::sleep(Duration::from_millis(300));
    let server = s.shutdown_handle();
    let state = server.state.clone();
    s.runtime().block_on(server.shutdown()).unwrap();
    let (status, body) = writer.join().unwrap();
    assert_eq!(status, 200, "{body}");
    let id: serde_json::Value = serde_json::from_str(&body).unwrap();
    let id = mnemo_core::MemoryId::parse(id["results"][0]["id"].as_str().unwrap()).unwrap();
    // The write is in the store.
    let scope = mnemo_core::Scope::user("alice").unwrap();
    let got = s
        .runtime()
        .block_on(state.service.memory().get(mnemo::GetRequest {
            scope,
            id,
            include_expired: false,
        }))
        .unwrap();
    assert_eq!(got.text, "written during shutdown");
    // And the listener is closed.
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .build()
        .into();
    assert!(agent.get(&format!("{url}/healthz")).call().is_err());
}
