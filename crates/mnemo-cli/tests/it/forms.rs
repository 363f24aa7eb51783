//! The exact command forms the README documents.

use crate::*;
use serde_json::json;

#[test]
fn add_search_get_list_update_history_delete() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let added = run_ok(mnemo(d).args([
        "add",
        "--user-id",
        "u1",
        "--infer",
        "false",
        "--metadata",
        r#"{"zip":"0012","n":3,"user_id":"mallory"}"#,
        "I adopted a greyhound named Biscuit",
    ]));
    let r = &added["results"][0];
    assert_eq!(r["event"], "ADD");
    assert_eq!(r["memory"], "I adopted a greyhound named Biscuit");
    let id = r["id"].as_str().unwrap().to_string();
    run_ok(mnemo(d).args([
        "add",
        "--user-id",
        "u1",
        "--infer",
        "false",
        "My sister lives in Porto",
    ]));
    run_ok(mnemo(d).args([
        "add",
        "--user-id",
        "u2",
        "--infer",
        "false",
        "u2 also has a dog",
    ]));

    let found = run_ok(mnemo(d).args([
        "search",
        "--user-id",
        "u1",
        "--top-k",
        "5",
        "what is my dog called?",
    ]));
    let hits = found["results"].as_array().unwrap();
    assert_eq!(hits[0]["id"], id.as_str());
    assert!(hits[0]["score"].as_f64().unwrap() > 0.0);
    assert!(hits[0]["scores"]["dense"].as_f64().unwrap() > 0.0);
    assert!(
        hits.iter().all(|h| h["user_id"] == "u1"),
        "search crossed scopes"
    );

    let got = run_ok(mnemo(d).args(["get", "--user-id", "u1", &id]));
    assert_eq!(got["memory"], "I adopted a greyhound named Biscuit");
    assert_eq!(
        got["metadata"],
        json!({"zip": "0012", "n": 3}),
        "identity key dropped, types kept"
    );
    assert_eq!(got["user_id"], "u1");
    assert!(got["created_at"].is_string() && got["updated_at"].is_string());
    assert!(got.get("agent_id").is_some() && got.get("run_id").is_some());

    let (_, err) = run_err(mnemo(d).args(["get", "--user-id", "u2", &id]));
    assert_eq!(
        err["error"]["kind"], "not_found",
        "out of scope reads as missing"
    );

    let listed = run_ok(mnemo(d).args(["list", "--user-id", "u1", "--limit", "1"]));
    assert_eq!(listed["results"].as_array().unwrap().len(), 1);
    let cursor = listed["next_cursor"].as_str().unwrap().to_string();
    let page2 = run_ok(mnemo(d).args([
        "list",
        "--user-id",
        "u1",
        "--limit",
        "1",
        "--cursor",
        &cursor,
    ]));
    assert_eq!(page2["results"][0]["memory"], "My sister lives in Porto");
    assert!(page2["next_cursor"].is_null());

    let updated = run_ok(mnemo(d).args([
        "update",
        "--user-id",
        "u1",
        "--text",
        "I adopted a greyhound named Pepper",
        &id,
    ]));
    assert_eq!(updated["memory"], "I adopted a greyhound named Pepper");
    let hist = run_ok(mnemo(d).args(["history", "--user-id", "u1", &id]));
    let events: Vec<&str> = hist["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["event"].as_str().unwrap())
        .collect();
    assert_eq!(events, vec!["ADD", "UPDATE"]);
    run_ok(mnemo(d).args(["delete", "--user-id", "u1", &id]));
    let (_, err) = run_err(mnemo(d).args(["get", "--user-id", "u1", &id]));
    assert_eq!(err["error"]["kind"], "not_found");
    let deleted = run_ok(mnemo(d).args(["delete-all", "--user-id", "u1"]));
    assert_eq!(deleted["deleted"], 1);
}

/// An export record of a memory that expired before the test began: restoring it is how a
/// test gets an expired memory without waiting for the clock (an add refuses a past expiry, and
/// the library reads the wall clock).
const EXPIRED_COUPON: &str = r#"{"type":"memory","id":"01a2308d-d164-7305-b45e-a01819e97608","memory":"an expired coupon","kind":"raw","state":"active","user_id":"u","agent_id":null,"run_id":null,"metadata":{},"hash":"","created_at":"2020-01-01T00:00:00Z","updated_at":"2020-01-01T00:00:00Z","expires_at":"2020-01-02T00:00:00Z","valid_from":null,"valid_until":null,"actor":null,"role":"user","sources":[],"access_count":0,"last_accessed_at":null}"#;

#[test]
fn expiry_and_bad_input_are_typed_errors() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // A memory whose expiry is still ahead is seen by every read, with the expiry it was given.
    let later = (chrono::Utc::now() + chrono::Duration::hours(1))
        .to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
    let added = run_ok(mnemo(d).args([
        "add",
        "--user-id",
        "u",
        "--infer",
        "false",
        "--expires-at",
        &later,
        "a short-lived coupon",
    ]));
    let live = added["results"][0]["id"].as_str().unwrap().to_string();
    let got = run_ok(mnemo(d).args(["get", "--user-id", "u", &live]));
    assert_eq!(got["memory"], "a short-lived coupon");
    assert_eq!(got["expires_at"], later.as_str());
    // An expiry already past is refused at the add.
    let (_, err) = run_err(mnemo(d).args([
        "add",
        "--user-id",
        "u",
        "--infer",
        "false",
        "--expires-at",
        "2020-01-02T00:00:00Z",
        "too late",
    ]));
    assert_eq!(err["error"]["kind"], "invalid_input");
    assert!(
        err["error"]["message"].as_str().unwrap().contains("past"),
        "{err}"
    );
    // A memory whose expiry has passed: hidden from get, list and search unless asked for.
    let file = d.join("expired.jsonl");
    std::fs::write(&file, format!("{EXPIRED_COUPON}\n")).unwrap();
    run_ok(mnemo(d).arg("import").arg(&file));
    let expired = "01a2308d-d164-7305-b45e-a01819e97608";
    let (_, err) = run_err(mnemo(d).args(["get", "--user-id", "u", expired]));
    assert_eq!(err["error"]["kind"], "not_found");
    let shown = run_ok(mnemo(d).args(["get", "--user-id", "u", "--include-expired", expired]));
    assert_eq!(shown["memory"], "an expired coupon");
    let ids = |v: &Value| -> Vec<String> {
        v["results"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["id"].as_str().unwrap().to_string())
            .collect()
    };
    let listed = run_ok(mnemo(d).args(["list", "--user-id", "u"]));
    assert_eq!(ids(&listed), [live.as_str()]);
    let found = run_ok(mnemo(d).args(["search", "--user-id", "u", "coupon"]));
    assert_eq!(ids(&found), [live.as_str()]);
    let mut all = ids(&run_ok(mnemo(d).args([
        "search",
        "--user-id",
        "u",
        "--include-expired",
        "coupon",
    ])));
    all.sort();
    let mut both = vec![live.clone(), expired.to_string()];
    both.sort();
    assert_eq!(all, both);

    let (out, err) = run_err(mnemo(d).args(["add", "--user-id", "u", "--infer", "true", "hello"]));
    assert_eq!(err["error"]["kind"], "invalid_input");
    assert!(err["error"]["message"]
        .as_str()
        .unwrap()
        .contains("chat model"));
    assert_eq!(out.status.code(), Some(2));
    for bad in [
        vec!["add", "--user-id", "a b", "--infer", "false", "x"],
        vec!["add", "--user-id", "", "--infer", "false", "x"],
        vec!["add", "--infer", "false", "no scope"],
        vec![
            "add",
            "--user-id",
            "u",
            "--infer",
            "false",
            "--metadata",
            "[1]",
            "x",
        ],
        vec![
            "add",
            "--user-id",
            "u",
            "--infer",
            "false",
            "--metadata",
            "{not json",
            "x",
        ],
        vec![
            "add",
            "--user-id",
            "u",
            "--infer",
            "false",
            "--expires-at",
            "tomorrow",
            "x",
        ],
        vec!["get", "--user-id", "u", "not-a-uuid"],
        vec![
            "search",
            "--user-id",
            "u",
            "--filters",
            r#"{"n":{"between":1}}"#,
            "x",
        ],
        vec!["reset"],
    ] {
        let (_, err) = run_err(mnemo(d).args(&bad));
        assert_eq!(err["error"]["kind"], "invalid_input", "{bad:?}");
    }
    let long = "x".repeat(129);
    let (_, err) = run_err(mnemo(d).args(["list", "--user-id", long.as_str()]));
    assert_eq!(err["error"]["kind"], "invalid_input");
    // Nothing was written by the failed calls.
    let listed = run_ok(mnemo(d).args(["list", "--user-id", "u", "--include-expired"]));
    assert_eq!(listed["results"].as_array().unwrap().len(), 2);
}

#[test]
fn export_then_import_is_lossless_and_idempotent() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("a"), dir.path().join("b"));
    run_ok(mnemo(&a).args([
        "add",
        "--user-id",
        "u",
        "--agent-id",
        "bot",
        "--infer",
        "false",
        "--metadata",
        r#"{"k":[1,"2",{"3":null}]}"#,
        "first memory",
    ]));
    run_ok(mnemo(&a).args([
        "add",
        "--user-id",
        "u",
        "--infer",
        "false",
        "--timestamp",
        "2023-05-01T10:00:00Z",
        "back-dated memory",
    ]));
    let file = dir.path().join("export.jsonl");
    let out = mnemo(&a).args(["export"]).arg(&file).output().unwrap();
    assert!(out.status.success());
    let summary = run_last_line(mnemo(&b).arg("import").arg(&file));
    // Two messages, two memories, their two ADD events and their two pages.
    assert_eq!(summary["imported"]["restored"], 8);
    let again = run_last_line(mnemo(&b).arg("import").arg(&file));
    assert_eq!(again["imported"]["restored"], 0);
    // Exported again, the copy is the original byte for byte.
    let copy = dir.path().join("copy.jsonl");
    assert!(mnemo(&b)
        .args(["export"])
        .arg(&copy)
        .output()
        .unwrap()
        .status
        .success());
    assert_eq!(
        std::fs::read_to_string(&copy).unwrap(),
        std::fs::read_to_string(&file).unwrap()
    );
    let la = run_ok(mnemo(&a).args(["list", "--user-id", "u"]));
    let lb = run_ok(mnemo(&b).args(["list", "--user-id", "u"]));
    assert_eq!(la["results"], lb["results"]);
    assert!(lb["results"][1]["created_at"]
        .as_str()
        .unwrap()
        .starts_with("2023-05-01"));
    let hits = run_ok(mnemo(&b).args(["search", "--user-id", "u", "back-dated"]));
    assert_eq!(hits["results"][0]["memory"], "back-dated memory");
}

fn run_last_line(cmd: &mut std::process::Command) -> serde_json::Value {
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    serde_json::from_str(text.lines().last().unwrap()).unwrap()
}

#[test]
fn doctor_reports_model_and_store_and_import_reads_memory_lines() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().join("data");
    let file = dir.path().join("memories.jsonl");
    std::fs::write(
        &file,
        concat!(
            r#"{"memory": "Ana prefers window seats", "metadata": {"src": "crm"}}"#, "\n",
            r#"{"role": "user", "content": "Book me a flight to Oslo", "user_id": "ana", "timestamp": "2024-02-03T09:00:00Z"}"#, "\n",
            "\n",
        ),
    )
    .unwrap();
    let out = mnemo(&d)
        .args(["import", "--user-id", "ana"])
        .arg(&file)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let listed = run_ok(mnemo(&d).args(["list", "--user-id", "ana"]));
    let items = listed["results"].as_array().unwrap();
    assert_eq!(items.len(), 2);
    assert_eq!(items[0]["metadata"]["src"], "crm");
    assert!(items[1]["created_at"]
        .as_str()
        .unwrap()
        .starts_with("2024-02-03"));
    let bad = dir.path().join("bad.jsonl");
    std::fs::write(&bad, "{\"nothing\": 1}\n").unwrap();
    let (_, err) = run_err(mnemo(&d).args(["import", "--user-id", "ana"]).arg(&bad));
    assert_eq!(err["error"]["kind"], "invalid_input");

    let doc = run_ok(mnemo(&d).args(["doctor"]));
    assert_eq!(doc["embedder"]["model"], "all-MiniLM-L6-v2/onnx-int8-dq");
    assert_eq!(doc["embedder"]["dimension"], 384);
    assert_eq!(doc["store"]["dimension"], 384);
    assert_eq!(doc["store"]["consistent"], true);
    assert_eq!(doc["store"]["memories"], 2);
    assert!(doc["schema_version"].as_u64().unwrap() >= 1);
    // Without model files, doctor says what is missing and fails.
    let mut cmd = mnemo(&d);
    cmd.env("MNEMO_MODELS_DIR", dir.path().join("no-models"));
    let (_, err) = run_err(cmd.args(["doctor"]));
    assert_eq!(err["error"]["kind"], "unavailable");
    assert!(err["error"]["message"]
        .as_str()
        .unwrap()
        .contains("models install"));
}
