//! The store chosen by `--store`: a malformed URL stops the command with a typed error naming
//! `store_url`; on PostgreSQL, `doctor` names the backend and `reembed` replaces every vector
//! in place (one transaction, no file copy), keeping records and history.
//!
//! PostgreSQL comes from `two_servers`; the embedders are OpenAI-compatible stubs on 127.0.0.1.

use crate::two_servers::fresh_store_url;
use crate::{mnemo, run_err, run_ok};
use mnemo_testkit::stub_http::StubEndpoint;
use std::path::Path;
use std::process::Command;

/// `mnemo --data-dir DATA --json --embedder openai … --store STORE`.
fn on(data: &Path, store: &str, embed: &StubEndpoint, model: &str) -> Command {
    let mut c = mnemo(data);
    c.args(["--store", store, "--embedder", "openai", "--embed-base-url"])
        .arg(&embed.base_url)
        .args(["--embed-model", model]);
    c
}

#[test]
fn a_malformed_store_url_is_invalid_input_naming_store_url() {
    let dir = tempfile::tempdir().unwrap();
    for bad in ["mysql://h/db", "postgres://h:notaport/db"] {
        let (out, err) = run_err(mnemo(dir.path()).args(["--store", bad, "doctor"]));
        assert_eq!(out.status.code(), Some(2), "{bad}: {err}");
        assert_eq!(err["error"]["kind"], "invalid_input", "{bad}: {err}");
        let message = err["error"]["message"].as_str().unwrap_or("");
        assert!(message.contains("store_url"), "{bad}: {message}");
    }
    // Nothing was created in the data directory for a store that was never opened.
    assert!(!dir.path().join("mnemo.db").exists());
}

#[test]
fn reembed_on_postgres_replaces_vectors_in_place() {
    let pg = fresh_store_url("reembed");
    let dir = tempfile::tempdir().unwrap();
    let (old_ep, new_ep) = (StubEndpoint::embeddings(8), StubEndpoint::embeddings(16));
    let old = || on(dir.path(), &pg, &old_ep, "old-embed");
    let new = || on(dir.path(), &pg, &new_ep, "new-embed");
    let add = |text: &str| {
        run_ok(old().args(["add", "--user-id", "ann", "--infer", "false", text]))["results"][0]
            ["id"]
            .as_str()
            .expect("id")
            .to_string()
    };
    let dog = add("I adopted a greyhound named Biscuit");
    let city = add("Alice moved to Lisbon in May");
    run_ok(old().args([
        "update",
        "--user-id",
        "ann",
        "--text",
        "Alice moved to Porto",
        &city,
    ]));

    let doctor = run_ok(old().arg("doctor"));
    assert_eq!(doctor["store"]["kind"], "postgres", "{doctor}");
    assert_eq!(doctor["store"]["dimension"], 8, "{doctor}");

    let summary = run_ok(new().arg("reembed"));
    assert_eq!(summary["reembedded"]["memories"], 2, "{summary}");
    assert_eq!(summary["reembedded"]["to"]["dimension"], 16, "{summary}");
    assert!(summary["reembedded"]["backup"].is_null(), "{summary}");
    // No file store appeared in the data directory.
    assert!(!dir.path().join("mnemo.db").exists());

    let doctor = run_ok(new().arg("doctor"));
    assert_eq!(doctor["store"]["dimension"], 16, "{doctor}");
    let model = doctor["store"]["embedding_model"].as_str().unwrap_or("");
    assert!(model.contains("new-embed"), "{doctor}");
    let hits = run_ok(new().args([
        "search",
        "--user-id",
        "ann",
        "--top-k",
        "1",
        "greyhound Biscuit",
    ]));
    assert_eq!(hits["results"][0]["id"], dog.as_str(), "{hits}");
    let history = run_ok(new().args(["history", "--user-id", "ann", &city]));
    assert_eq!(
        history["results"].as_array().map(Vec::len),
        Some(2),
        "{history}"
    );
    // The old model no longer matches the store.
    let (_, err) = run_err(old().args(["search", "--user-id", "ann", "greyhound"]));
    assert_eq!(err["error"]["kind"], "conflict", "{err}");
}
