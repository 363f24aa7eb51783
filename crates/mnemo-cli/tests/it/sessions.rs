//! `mnemo sessions list|messages|show|delete`, `mnemo segments list|pages` and the `--reason`
//! of update and delete: what the library shows, as JSON, with typed errors for bad input.

use crate::*;

fn add_turn(d: &Path, session: &str, text: &str) -> String {
    let messages = serde_json::json!([{"role": "user", "content": text, "name": "Ann"}]);
    let out = run_ok(mnemo(d).args([
        "add",
        "--user-id",
        "u1",
        "--infer",
        "false",
        "--session-id",
        session,
        "--messages",
        &messages.to_string(),
    ]));
    out["results"][0]["id"].as_str().unwrap().to_string()
}

#[test]
fn sessions_and_segments_commands_show_the_log_and_reasons_reach_history() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let first = add_turn(d, "s1", "the dog is called Miso");
    let pin = add_turn(d, "s1", "my bank PIN is 4417");
    add_turn(d, "s2", "tea with oat milk");

    let r = run_ok(mnemo(d).args(["sessions", "list", "--user-id", "u1"]));
    assert_eq!(r["sessions"][0]["session_id"], "s1", "{r}");
    assert_eq!(r["sessions"][0]["messages"], 2, "{r}");
    assert_eq!(r["sessions"][1]["session_id"], "s2", "{r}");

    let r = run_ok(mnemo(d).args(["delete", "--user-id", "u1", "--reason", "asked", &pin]));
    assert_eq!(r["event"], "DELETE");
    let r = run_ok(mnemo(d).args([
        "sessions",
        "messages",
        "--user-id",
        "u1",
        "--limit",
        "1",
        "s1",
    ]));
    assert_eq!(r["messages"][0]["text"], "the dog is called Miso", "{r}");
    assert_eq!(r["messages"][0]["name"], "Ann", "{r}");
    assert!(
        !r.to_string().contains("4417"),
        "deleted turns leave the log: {r}"
    );

    let r = run_ok(mnemo(d).args([
        "update",
        "--user-id",
        "u1",
        "--text",
        "the dog is Miso",
        "--reason",
        "shorter",
        &first,
    ]));
    assert_eq!(r["memory"], "the dog is Miso");
    let h = run_ok(mnemo(d).args(["history", "--user-id", "u1", &first]));
    let events = h["results"].as_array().unwrap();
    assert_eq!(
        events[0]["actor"], "Ann",
        "a conversation add names its speaker: {h}"
    );
    let update = events.iter().find(|e| e["event"] == "UPDATE").unwrap();
    assert_eq!(update["reason"], "shorter", "{h}");

    let r = run_ok(mnemo(d).args(["sessions", "show", "--user-id", "u1", "s1"]));
    assert_eq!(r["session_id"], "s1", "{r}");
    assert!(r["window"].is_array(), "{r}");
    let r = run_ok(mnemo(d).args(["sessions", "delete", "--user-id", "u1", "s2"]));
    assert_eq!(r["deleted"], 1, "{r}");
    let r = run_ok(mnemo(d).args(["segments", "list", "--user-id", "u1"]));
    assert!(r["segments"].is_array(), "{r}");

    for (args, field) in [
        (
            &["sessions", "messages", "--user-id", "u1", "nope"][..],
            "session_id",
        ),
        (
            &["sessions", "show", "--user-id", "u1", "nope"],
            "session_id",
        ),
        (
            &["sessions", "list", "--user-id", "u1", "--cursor", "x"],
            "cursor",
        ),
        (
            &["segments", "pages", "--user-id", "u1", "not-a-uuid"],
            "segment",
        ),
    ] {
        let (_, err) = run_err(mnemo(d).args(args));
        assert_eq!(err["error"]["kind"], "invalid_input", "{args:?}: {err}");
        assert!(
            err["error"]["message"].as_str().unwrap().contains(field),
            "{args:?}: {err}"
        );
    }
}
