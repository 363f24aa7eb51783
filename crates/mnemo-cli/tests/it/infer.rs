//! Inferred adds through the binary: a real OpenAI-compatible chat endpoint on 127.0.0.1, the
//! real embedding model, supersession visible through `add`, `get`, `list` and `history`, and
//! the typed errors of a failing provider. Plus `mnemo eval correctness` as a user runs it.

use crate::{mnemo, run_err, run_ok};
use mnemo_testkit::stub_http::{completion, StubEndpoint};
use serde_json::{json, Value};
use std::path::Path;

/// An endpoint that extracts one fact per add from a fixed table and UPDATEs the memory it is
/// shown about the same topic.
fn model() -> StubEndpoint {
    StubEndpoint::start(|body: &Value| {
        let system = body["messages"][0]["content"].as_str().unwrap_or("");
        let user = body["messages"][1]["content"].as_str().unwrap_or("");
        let answer = if system.contains("NEW facts") {
            // Reconciliation: update whichever existing memory mentions Berlin.
            let id = user
                .lines()
                .find(|l| l.contains("Berlin"))
                .and_then(|l| l.split(':').next())
                .and_then(|n| n.trim().parse::<u64>().ok());
            match id {
                Some(n) => {
                    json!({"decisions": [{"fact": 1, "event": "UPDATE", "id": n, "text": "Alice lives in Lisbon", "reason": "moved"}]})
                }
                None => json!({"decisions": [{"fact": 1, "event": "ADD"}]}),
            }
        } else if user.contains("moved to Lisbon") {
            json!({"facts": [{"text": "Alice lives in Lisbon", "speaker": "Alice", "sources": [1]}]})
        } else if user.contains("Berlin") {
            json!({"facts": [{"text": "Alice lives in Berlin", "speaker": "Alice", "sources": [1]}]})
        } else {
            json!({"facts": []})
        };
        (200, completion(&format!("```json\n{answer}\n```"), 50))
    })
}

fn with_llm(data: &Path, endpoint: &StubEndpoint) -> std::process::Command {
    let mut c = mnemo(data);
    c.args([
        "--llm-base-url",
        &endpoint.base_url,
        "--llm-model",
        "stub-chat",
    ]);
    c
}

#[test]
fn an_inferred_add_supersedes_and_the_cli_shows_lineage_and_usage() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let ep = model();
    let first =
        run_ok(with_llm(&data, &ep).args(["add", "--user-id", "alice", "I live in Berlin"]));
    assert_eq!(first["results"][0]["event"], "ADD");
    let old = first["results"][0]["id"].as_str().unwrap().to_string();
    let second =
        run_ok(with_llm(&data, &ep).args(["add", "--user-id", "alice", "I moved to Lisbon!"]));
    let r = &second["results"][0];
    assert_eq!(r["event"], "UPDATE", "{second}");
    assert_eq!(r["previous_id"], old.as_str());
    assert_eq!(r["previous_memory"], "Alice lives in Berlin");
    let calls: Vec<&str> = second["usage"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["purpose"].as_str().unwrap())
        .collect();
    assert!(
        calls.contains(&"extract") && calls.contains(&"reconcile"),
        "{calls:?}"
    );

    let new = r["id"].as_str().unwrap();
    let list = run_ok(mnemo(&data).args(["list", "--user-id", "alice"]));
    let texts: Vec<&str> = list["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["memory"].as_str().unwrap())
        .collect();
    assert_eq!(texts, vec!["Alice lives in Lisbon"]);
    let got = run_ok(mnemo(&data).args(["get", "--user-id", "alice", new]));
    assert_eq!(got["kind"], "fact");
    assert_eq!(got["sources"].as_array().unwrap().len(), 1);
    let history = run_ok(mnemo(&data).args(["history", "--user-id", "alice", new]));
    let events: Vec<(String, String)> = history["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["memory_id"].as_str().unwrap().to_string(),
                e["event"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(
        events,
        vec![
            (old.clone(), "ADD".into()),
            (old.clone(), "SUPERSEDE".into()),
            (new.to_string(), "ADD".into())
        ]
    );
    // The audit view of the retired fact: its state, the words it came from, what replaced it.
    let detail = run_ok(mnemo(&data).args(["get", "--user-id", "alice", "--detail", &old]));
    assert_eq!(detail["state"], "superseded");
    assert_eq!(detail["source_messages"][0]["content"], "I live in Berlin");
    assert_eq!(detail["links"][0]["kind"], "supersedes");
    assert_eq!(detail["links"][0]["from"], new);
    assert!(
        detail["entities"]
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e["normalized"] == "berlin"),
        "{detail}"
    );
    // Searching history finds what used to be true; a normal search does not.
    let past = run_ok(mnemo(&data).args([
        "search",
        "--user-id",
        "alice",
        "--include-inactive",
        "Berlin",
    ]));
    assert!(past["results"]
        .as_array()
        .unwrap()
        .iter()
        .any(|h| h["id"] == old.as_str()));
    let now = run_ok(mnemo(&data).args(["search", "--user-id", "alice", "Berlin"]));
    assert!(now["results"]
        .as_array()
        .unwrap()
        .iter()
        .all(|h| h["id"] != old.as_str()));
    // A raw add is still one flag away.
    let raw = run_ok(with_llm(&data, &ep).args([
        "add",
        "--user-id",
        "alice",
        "--infer",
        "false",
        "hello there",
    ]));
    assert_eq!(raw["results"][0]["event"], "ADD");
}

#[test]
fn provider_failures_and_missing_models_are_typed_errors() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let down = StubEndpoint::start(|_| (503, "{\"error\":\"overloaded\"}".into()));
    let (out, err) = run_err(with_llm(&data, &down).args([
        "--llm-timeout-secs",
        "2",
        "add",
        "--user-id",
        "bob",
        "I live in Oslo",
    ]));
    assert_eq!(out.status.code(), Some(7), "{err}");
    assert_eq!(err["error"]["kind"], "unavailable");
    let nonsense =
        StubEndpoint::start(|_| (200, completion("I'd rather chat about the weather.", 10)));
    let (out, err) =
        run_err(with_llm(&data, &nonsense).args(["add", "--user-id", "bob", "I live in Oslo"]));
    assert_eq!(out.status.code(), Some(9), "{err}");
    assert_eq!(err["error"]["kind"], "model_output");
    // Nothing was remembered, but what bob said is in the log (export shows the messages).
    let list = run_ok(mnemo(&data).args(["list", "--user-id", "bob"]));
    assert!(list["results"].as_array().unwrap().is_empty());
    let export = mnemo(&data).arg("export").output().unwrap();
    let messages = String::from_utf8_lossy(&export.stdout)
        .lines()
        .filter(|l| l.contains("\"message\""))
        .count();
    assert!(messages >= 2, "{}", String::from_utf8_lossy(&export.stdout));

    let (out, err) =
        run_err(mnemo(&data).args(["add", "--user-id", "bob", "--infer", "true", "x"]));
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err["error"]["message"]
        .as_str()
        .unwrap()
        .contains("chat model"));
    let (_, err) = run_err(mnemo(&data).args(["--llm-model", "m", "add", "--user-id", "bob", "x"]));
    assert!(
        err["error"]["message"]
            .as_str()
            .unwrap()
            .contains("--llm-base-url"),
        "{err}"
    );
}

#[test]
fn eval_correctness_passes_every_scripted_scenario_and_scores_a_real_endpoint() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let out = dir.path().join("correctness.json");
    let report = run_ok(
        mnemo(&data)
            .args(["eval", "correctness", "--out"])
            .arg(&out),
    );
    assert_eq!(report["score"], 1.0, "{report}");
    assert_eq!(report["model"], "scripted");
    assert!(report["scenarios"].as_array().unwrap().len() >= 7);
    let written: Value = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    assert_eq!(written, report);

    let empty = StubEndpoint::start(|_| (200, completion("{\"facts\": []}", 10)));
    let scored = run_ok(mnemo(&data).args([
        "eval",
        "correctness",
        "--model",
        "stub-chat",
        "--base-url",
        &empty.base_url,
    ]));
    assert_eq!(scored["model"], "openai-compatible:stub-chat");
    let score = scored["score"].as_f64().unwrap();
    assert!(
        score < 0.5,
        "a model that extracts nothing fails most checks: {score}"
    );
}

#[cfg(not(feature = "llama"))]
#[test]
fn a_gguf_model_without_the_llama_feature_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let gguf = dir.path().join("model.gguf");
    std::fs::write(&gguf, b"not really").unwrap();
    let (out, err) = run_err(
        mnemo(&dir.path().join("data"))
            .arg("--llm-gguf")
            .arg(&gguf)
            .args(["add", "--user-id", "u", "hello"]),
    );
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err["error"]["message"]
            .as_str()
            .unwrap()
            .contains("--features llama"),
        "{err}"
    );
}
