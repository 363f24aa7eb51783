//! `mnemo reembed` and `--embedder openai`, end to end through the binary: a store written with
//! one OpenAI-compatible endpoint (8-dimensional vectors) is moved to another (16-dimensional),
//! both stubs on 127.0.0.1. No model files are needed.

use crate::{run_err, run_ok};
use mnemo_testkit::stub_http::{embeddings, StubEndpoint};
use serde_json::Value;
use std::path::Path;
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};

/// `mnemo --data-dir DATA --json --embedder openai …` against `endpoint` serving `model`.
fn remote(data: &Path, endpoint: &StubEndpoint, model: &str) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_mnemo"));
    for var in [
        "MNEMO_EMBEDDER",
        "MNEMO_EMBED_BASE_URL",
        "MNEMO_EMBED_MODEL",
        "MNEMO_EMBED_API_KEY_ENV",
        "MNEMO_EMBED_DIMENSION",
    ] {
        c.env_remove(var);
    }
    c.arg("--data-dir")
        .arg(data)
        .arg("--json")
        .args(["--embedder", "openai", "--embed-base-url"])
        .arg(&endpoint.base_url)
        .args(["--embed-model", model]);
    c
}

fn add(cmd: &mut Command, text: &str, metadata: &str) -> String {
    let out = run_ok(cmd.args([
        "add",
        "--user-id",
        "ann",
        "--infer",
        "false",
        "--metadata",
        metadata,
        text,
    ]));
    out["results"][0]["id"].as_str().unwrap().to_string()
}

/// Export lines keyed by id, without the access counters that reads may bump.
fn exported(cmd: &mut Command) -> Vec<Value> {
    let out = cmd.arg("export").output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut lines: Vec<Value> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| {
            let mut v: Value = serde_json::from_str(l).unwrap();
            if let Some(o) = v.as_object_mut() {
                o.remove("access_count");
                o.remove("last_accessed_at");
            }
            v
        })
        .collect();
    lines.sort_by_key(|v| v["id"].as_str().unwrap_or("").to_string());
    lines
}

fn store_files(data: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(data)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[test]
fn reembed_moves_a_store_to_another_model_and_keeps_no_copy_an_erase_misses() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let old_ep = StubEndpoint::embeddings(8);
    let new_ep = StubEndpoint::embeddings(16);
    let old = || remote(&data, &old_ep, "old-embed");
    let new = || remote(&data, &new_ep, "new-embed");

    let dog = add(
        &mut old(),
        "I adopted a greyhound named Biscuit",
        r#"{"topic":"pets"}"#,
    );
    let city = add(
        &mut old(),
        "Alice moved to Lisbon in May",
        r#"{"topic":"travel","n":1}"#,
    );
    let report = add(
        &mut old(),
        "The quarterly report is due on Friday",
        r#"{"topic":"work"}"#,
    );
    run_ok(old().args([
        "update",
        "--user-id",
        "ann",
        "--text",
        "Alice moved to Porto in June",
        &city,
    ]));
    run_ok(old().args(["delete", "--user-id", "ann", &report]));
    let hits = run_ok(old().args([
        "search",
        "--user-id",
        "ann",
        "--top-k",
        "1",
        "greyhound Biscuit",
    ]));
    assert_eq!(hits["results"][0]["id"], dog.as_str());
    let history_before = run_ok(old().args(["history", "--user-id", "ann", &city]));
    assert_eq!(history_before["results"].as_array().unwrap().len(), 2);
    let before = exported(&mut old());

    let summary = run_ok(new().arg("reembed"));
    let s = &summary["reembedded"];
    assert_eq!(s["memories"], 3, "{summary}");
    assert_eq!(
        s["vectors"], 2,
        "the deleted memory has no vector: {summary}"
    );
    assert_eq!(s["from"]["dimension"], 8);
    assert_eq!(s["to"]["dimension"], 16);
    let host = old_ep
        .base_url
        .trim_start_matches("http://")
        .trim_end_matches("/v1");
    assert_eq!(s["from"]["model"], format!("openai:old-embed/{host}"));
    assert!(s["to"]["model"]
        .as_str()
        .unwrap()
        .starts_with("openai:new-embed/"));
    assert_eq!(s["swapped"], true, "{summary}");

    // The data directory holds the new store and its index: no backup, no leftovers.
    let files = store_files(&data);
    assert!(files.contains(&"mnemo.db".to_string()), "{files:?}");
    assert!(!files.iter().any(|f| f.contains(".bak")), "{files:?}");
    assert!(!files.iter().any(|f| f.contains("reembed")), "{files:?}");
    assert!(!files.iter().any(|f| f.ends_with("-wal")), "{files:?}");

    // Ids, texts, states, metadata, times, provenance and messages are what they were.
    assert_eq!(exported(&mut new()), before);

    // The new model answers searches; the remembered vectors were made by it (a dense search for
    // a memory's exact text finds it first, at cosine 1).
    let query = "Alice moved to Porto in June";
    let hits = run_ok(new().args([
        "search",
        "--user-id",
        "ann",
        "--top-k",
        "2",
        "--mode",
        "dense",
        query,
    ]));
    assert_eq!(hits["results"][0]["id"], city.as_str(), "{hits}");
    let last = new_ep.requests().last().unwrap().1.clone();
    assert_eq!(
        last["input"][0], query,
        "the query was embedded by the new endpoint"
    );
    let doctor = run_ok(new().arg("doctor"));
    assert_eq!(doctor["store"]["dimension"], 16);
    assert_eq!(doctor["store"]["consistent"], true);
    let got = run_ok(new().args(["get", "--user-id", "ann", &city]));
    assert_eq!(got["memory"], "Alice moved to Porto in June");
    assert_eq!(got["metadata"]["n"], 1);

    // History survives the move whole.
    let history_after = run_ok(new().args(["history", "--user-id", "ann", &city]));
    assert_eq!(history_after, history_before);

    // An erase after the move leaves the text in no file of the data directory (a backup of
    // the old file would still hold it).
    let held = |needle: &str| -> Vec<String> {
        store_files(&data)
            .into_iter()
            .filter(|f| {
                std::fs::read(data.join(f))
                    .is_ok_and(|b| b.windows(needle.len()).any(|w| w == needle.as_bytes()))
            })
            .collect()
    };
    assert!(!held("greyhound named Biscuit").is_empty());
    run_ok(new().args(["erase", "--user-id", "ann", &dog]));
    assert_eq!(held("greyhound named Biscuit"), Vec::<String>::new());

    // The old embedder is now refused, and the error says what to do.
    let (out, err) = run_err(old().args(["search", "--user-id", "ann", "Biscuit"]));
    assert_eq!(out.status.code(), Some(4), "{err}");
    assert_eq!(err["error"]["kind"], "conflict");
    let msg = err["error"]["message"].as_str().unwrap();
    assert!(
        msg.contains("mnemo reembed") && msg.contains("old-embed"),
        "{msg}"
    );
}

#[test]
fn a_failed_reembed_leaves_the_store_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let old_ep = StubEndpoint::embeddings(8);
    let old = || remote(&data, &old_ep, "old-embed");
    add(&mut old(), "I adopted a greyhound named Biscuit", "{}");
    add(&mut old(), "Alice moved to Lisbon", "{}");
    let before = exported(&mut old());
    let files_before = store_files(&data);

    // Answers the probe, then breaks in the middle of the import.
    let calls = AtomicUsize::new(0);
    let broken = StubEndpoint::start(move |body| {
        if calls.fetch_add(1, Ordering::SeqCst) == 0 {
            let n = body["input"].as_array().map_or(0, Vec::len);
            (200, embeddings(&vec![vec![1.0; 16]; n]))
        } else {
            (200, r#"{"data":"#.into())
        }
    });
    let (out, err) = run_err(remote(&data, &broken, "broken").arg("reembed"));
    // A 2xx body that is not JSON is what a failing proxy sends: retryable (`unavailable`).
    assert_eq!(out.status.code(), Some(7), "{err}");
    assert!(
        err["error"]["message"]
            .as_str()
            .unwrap()
            .contains("not JSON"),
        "{err}"
    );

    assert_eq!(store_files(&data), files_before, "no copy left behind");
    assert_eq!(exported(&mut old()), before);
    let hits = run_ok(old().args(["search", "--user-id", "ann", "--top-k", "1", "greyhound"]));
    assert_eq!(hits["results"].as_array().unwrap().len(), 1);
}

#[test]
fn the_openai_embedder_needs_its_endpoint() {
    let dir = tempfile::tempdir().unwrap();
    let mut c = Command::new(env!("CARGO_BIN_EXE_mnemo"));
    c.env_remove("MNEMO_EMBED_BASE_URL")
        .env_remove("MNEMO_EMBED_MODEL")
        .arg("--data-dir")
        .arg(dir.path())
        .args([
            "--json",
            "--embedder",
            "openai",
            "--embed-model",
            "m",
            "search",
            "--user-id",
            "u",
            "x",
        ]);
    let (out, err) = run_err(&mut c);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err["error"]["message"]
            .as_str()
            .unwrap()
            .contains("--embed-base-url"),
        "{err}"
    );

    // Nothing was found to re-embed: a missing store is not created by `reembed`.
    let stub = StubEndpoint::embeddings(4);
    let (out, err) = run_err(remote(&dir.path().join("none"), &stub, "m").arg("reembed"));
    assert_eq!(out.status.code(), Some(3), "{err}");
    assert!(!dir.path().join("none").exists());
}

#[test]
fn a_store_held_open_elsewhere_is_not_swapped() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let old_ep = StubEndpoint::embeddings(8);
    let new_ep = StubEndpoint::embeddings(16);
    add(
        &mut remote(&data, &old_ep, "old-embed"),
        "Alice moved to Lisbon",
        "{}",
    );
    let files_before = store_files(&data);

    // Another handle (as a running server would be) keeps the file open.
    let other = mnemo_store_sqlite::SqliteStore::open(data.join("mnemo.db")).unwrap();
    let (out, err) = run_err(remote(&data, &new_ep, "new-embed").arg("reembed"));
    assert_eq!(out.status.code(), Some(4), "{err}");
    assert!(
        err["error"]["message"]
            .as_str()
            .unwrap()
            .contains("open in another process"),
        "{err}"
    );
    drop(other);

    let files: Vec<String> = store_files(&data)
        .into_iter()
        .filter(|f| !f.ends_with("-wal") && !f.ends_with("-shm"))
        .collect();
    assert_eq!(files, files_before, "no copy left behind");
    let hits =
        run_ok(remote(&data, &old_ep, "old-embed").args(["search", "--user-id", "ann", "Lisbon"]));
    assert_eq!(hits["results"].as_array().unwrap().len(), 1);
}
