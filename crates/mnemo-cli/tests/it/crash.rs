//! SIGKILL in the middle of a large import: every acknowledged batch survives, and memories,
//! lexical rows, vectors and history agree.

use crate::*;
use mnemo_core::Admin;
use mnemo_core::Records;
use mnemo_core::{HistoryQuery, ReadOptions, Scope};
use std::io::{BufRead, BufReader, Write};
use std::process::Stdio;

#[test]
fn sigkill_during_import_loses_no_acknowledged_write_and_leaves_no_partial_record() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let file = dir.path().join("big.jsonl");
    let mut f = std::io::BufWriter::new(std::fs::File::create(&file).unwrap());
    for i in 0..20_000 {
        writeln!(f, "{}", serde_json::json!({"role": "user", "content": format!("message {i}: the weather in city {} was {}", i % 97, i % 13), "metadata": {"i": i}})).unwrap();
    }
    f.flush().unwrap();
    drop(f);
    let mut child = mnemo(&data)
        .args(["import", "--user-id", "crash", "--batch-size", "16"])
        .arg(&file)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut acked: Vec<String> = Vec::new();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut batches = 0;
    while batches < 8 {
        let line = lines.next().expect("import acknowledges batches").unwrap();
        let v: serde_json::Value = serde_json::from_str(&line).unwrap();
        let ids = v["acknowledged"]
            .as_array()
            .expect("an acknowledgement line");
        acked.extend(ids.iter().map(|i| i.as_str().unwrap().to_string()));
        batches += 1;
    }
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    // Anything printed before the kill landed was acknowledged too.
    for line in lines.map_while(Result::ok) {
        if let Ok(v) = serde_json::from_str::<serde_json::Value>(&line) {
            if let Some(ids) = v["acknowledged"].as_array() {
                acked.extend(ids.iter().map(|i| i.as_str().unwrap().to_string()));
            }
        }
    }
    assert!(acked.len() >= 8 * 16);
    let store = mnemo_store_sqlite::SqliteStore::open(data.join("mnemo.db")).unwrap();
    let report = store.integrity().unwrap();
    assert!(
        report.is_consistent(),
        "indexes disagree after the crash: {report:?}"
    );
    assert!(report.memories >= acked.len() as u64);
    assert!(report.memories < 20_000, "the import was interrupted");
    assert_eq!(
        report.messages, report.memories,
        "one message per raw memory: no partial batch"
    );
    let scope = Scope::user("crash").unwrap();
    for id in &acked {
        let id = mnemo_core::MemoryId::parse(id).unwrap();
        let m = store
            .get(&scope, id, &ReadOptions::default())
            .expect("acknowledged write is present");
        assert_eq!(m.sources.len(), 1);
        assert_eq!(
            store
                .history(&HistoryQuery::new(&scope, id, ReadOptions::default()))
                .unwrap()
                .len(),
            1
        );
    }
}
