//! A database that stops answering fails requests fast and retryably: a server that accepts
//! and never answers (what a frozen PostgreSQL looks like to a new connection) and a lock
//! held past `lock_timeout` are both `unavailable` within their deadlines, not a hang.

use mnemo_core::Records;
use mnemo_core::{ErrorKind, MemoryId};
use mnemo_store_postgres::PgStore;
use std::time::Duration;

/// Runs `f` on a thread and waits for it; a minute is a guard against a hang, not a timing.
fn within_a_minute<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(Duration::from_secs(60))
        .expect("the store hung on a database that does not answer")
}

#[test]
fn a_server_that_accepts_and_never_answers_is_unavailable_after_the_connect_timeout() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    // Accepts every connection and keeps it open without a byte of answer.
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for c in listener.incoming() {
            held.push(c);
        }
    });
    let url = format!("postgres://mnemo@127.0.0.1:{port}/mnemo?connect_timeout=1");
    let err = within_a_minute(move || PgStore::connect(&url, 2).err())
        .expect("connecting to a silent server succeeded");
    assert_eq!(err.kind(), ErrorKind::Unavailable, "{err}");
    assert!(err.to_string().contains("connect_timeout"), "{err}");
}

#[test]
fn a_lock_held_past_lock_timeout_is_unavailable() {
    let (schema, url) = super::fresh_schema("locktimeout");
    let url = format!("{url}%20-c%20lock_timeout%3D200ms");
    let store = PgStore::connect(&url, 2).unwrap();
    let mut admin = super::admin();
    let mut tx = admin.transaction().unwrap();
    tx.batch_execute(&format!(
        "LOCK TABLE {schema}.memories IN ACCESS EXCLUSIVE MODE"
    ))
    .unwrap();
    let err = within_a_minute(move || store.owner_of(MemoryId::new()).err())
        .expect("the read went through a held lock");
    assert_eq!(err.kind(), ErrorKind::Unavailable, "{err}");
    assert!(err.to_string().contains("55P03"), "{err}");
    tx.rollback().unwrap();
}

/// A burst of requests larger than the pool, on a database that answers: the requests past the
/// pool's handshake slots wait for a connection instead of failing as if the database were
/// gone (they once failed at once with "earlier connection attempts have not been answered").
#[test]
fn a_burst_larger_than_the_pool_waits_for_connections() {
    let (_schema, url) = super::fresh_schema("burst");
    let store = std::sync::Arc::new(PgStore::connect(&url, 2).unwrap());
    let threads = 16;
    let barrier = std::sync::Arc::new(std::sync::Barrier::new(threads));
    let handles: Vec<_> = (0..threads)
        .map(|_| {
            let (store, barrier) = (store.clone(), barrier.clone());
            std::thread::spawn(move || {
                barrier.wait();
                store.owner_of(MemoryId::new()).err()
            })
        })
        .collect();
    for h in handles {
        if let Some(e) = h.join().expect("a request thread panicked") {
            assert_ne!(e.kind(), ErrorKind::Unavailable, "{e}");
        }
    }
}
