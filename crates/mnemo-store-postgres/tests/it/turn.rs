//! Planning turns across processes: two stores on one database stand for two servers.

use mnemo_core::Tiers;
use mnemo_store_postgres::PgStore;
use std::sync::mpsc;
use std::time::Duration;

#[test]
fn a_scope_turn_excludes_other_stores_until_dropped_and_other_scopes_pass() {
    let (_schema, url) = super::fresh_schema("turn");
    let one = PgStore::connect(&url, 2).unwrap();
    let two = std::sync::Arc::new(PgStore::connect(&url, 2).unwrap());
    let held = one
        .plan_turn(&["u:alice".to_string()])
        .unwrap()
        .expect("PostgreSQL keeps turns");

    // Another scope's turn is free.
    let other = two.plan_turn(&["u:bob".to_string()]).unwrap();
    assert!(other.is_some());
    drop(other);

    // The same scope's turn waits for the holder.
    let (tx, rx) = mpsc::channel();
    let waiter = {
        let two = std::sync::Arc::clone(&two);
        std::thread::spawn(move || {
            let turn = two.plan_turn(&["u:alice".to_string(), "u:bob".to_string()]);
            tx.send(turn.map(|t| t.is_some())).unwrap();
        })
    };
    assert!(
        rx.recv_timeout(Duration::from_millis(300)).is_err(),
        "the second store got alice's turn while the first held it"
    );
    drop(held);
    let got = rx
        .recv_timeout(Duration::from_secs(30))
        .expect("the turn passes on once dropped");
    assert!(got.unwrap());
    waiter.join().unwrap();

    // A turn given back leaves its connection usable: the store still answers.
    assert!(one.plan_turn(&["u:alice".to_string()]).unwrap().is_some());
}

#[test]
fn gate_rows_hold_no_scope_name_in_clear() {
    use mnemo_core::Erasure;
    let (schema, url) = super::fresh_schema("gate_names");
    let store = PgStore::connect(&url, 2).unwrap();
    let names = [
        "u\u{1f}alice-7f3e".to_string(),
        "s\u{1f}session-of-alice-7f3e".to_string(),
    ];
    drop(store.erase_gate(&names, true).unwrap());
    drop(store.plan_turn(&["u:alice-7f3e".to_string()]).unwrap());
    let rows = super::admin()
        .query(&format!("SELECT part FROM {schema}.scope_gates"), &[])
        .unwrap();
    let parts: Vec<String> = rows.iter().map(|r| r.get(0)).collect();
    // One row per name, none of them naming the scope: an erased scope leaves no id here.
    assert_eq!(parts.len(), 3, "{parts:?}");
    assert!(
        parts.iter().all(|p| !p.contains("alice") && p.len() == 64),
        "{parts:?}"
    );
}
