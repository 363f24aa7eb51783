//! Graceful shutdown: a write in flight when the server is told to stop completes, is answered
//! and is in the store; new connections are refused afterwards.

use crate::{GatedEmbedder, TestServer};
use serde_json::json;
use std::net::{SocketAddr, TcpStream};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Waits until `addr` refuses connections: the server has closed its listener, which it does
/// once it has begun to stop. Other connect errors (a reset from the closing listener's backlog,
/// no free local port) are retried: only a refusal proves the listener is gone. Probes are 5 ms
/// apart, so a slow shutdown on a loaded machine does not use up the local ports. Panics after
/// a minute (a guard against a hang).
fn wait_until_refused(addr: SocketAddr) {
    let give_up = Instant::now() + Duration::from_secs(60);
    loop {
        let last = match TcpStream::connect(addr) {
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionRefused => return,
            Err(e) => format!("connect error {e}"),
            Ok(_) => "it still accepts".to_string(),
        };
        assert!(
            Instant::now() < give_up,
            "{addr} is not refusing a minute after shutdown began ({last})"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[test]
fn shutdown_finishes_in_flight_writes() {
    let gate = Arc::new(GatedEmbedder::default());
    let mut s = TestServer::start_with(gate.clone(), |_| {});
    // Declared after the server, so dropped first: a failure never leaves the write held.
    let _release = gate.open_on_drop();
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
    // The write is in flight, held at the embedder, when the server is told to stop.
    gate.wait_for_held(1);
    let server = s.shutdown_handle();
    let (addr, state) = (server.addr, server.state.clone());
    let stopping = s.runtime().spawn(server.shutdown());
    wait_until_refused(addr);
    assert!(
        !stopping.is_finished(),
        "shutdown finished while a write was still in flight"
    );
    gate.open();
    let (status, body) = writer.join().unwrap();
    assert_eq!(status, 200, "{body}");
    s.runtime().block_on(stopping).unwrap().unwrap();
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
    // And the listener stays closed.
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .build()
        .into();
    assert!(agent.get(&format!("{url}/healthz")).call().is_err());
}
