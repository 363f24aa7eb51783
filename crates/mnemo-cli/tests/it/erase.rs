//! `mnemo erase`: a raw memory's erase takes its message out of the files by default; a
//! session (`--session-id`) and a whole scope (`--all --confirm`) are erased in one command;
//! bad input names the field and writes nothing.

use crate::*;

fn add_turn(d: &Path, user: &str, session: &str, text: &str) -> String {
    let messages = serde_json::json!([{"role": "user", "content": text}]);
    let out = run_ok(mnemo(d).args([
        "add",
        "--user-id",
        user,
        "--infer",
        "false",
        "--session-id",
        session,
        "--messages",
        &messages.to_string(),
    ]));
    out["results"][0]["id"].as_str().unwrap().to_string()
}

fn held(d: &Path, needle: &str) -> usize {
    ["mnemo.db", "mnemo.db-wal"]
        .iter()
        .map(|f| {
            std::fs::read(d.join(f)).map_or(0, |b| {
                b.windows(needle.len())
                    .filter(|w| *w == needle.as_bytes())
                    .count()
            })
        })
        .sum()
}

#[test]
fn erase_takes_raw_turns_sessions_and_scopes_out_of_the_files() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let id = add_turn(d, "u1", "s1", "My bank PIN is Qz4417xv");
    add_turn(d, "u1", "s1", "The dog is called Mxyzptlk");
    add_turn(d, "u1", "s2", "My locker code is Vw5521yy");
    add_turn(d, "u2", "s1", "Another user says Jq8810kk");
    assert!(held(d, "Qz4417xv") > 0);

    // The default erase of a raw memory: its message too.
    let r = run_ok(mnemo(d).args(["erase", "--user-id", "u1", &id]));
    assert_eq!(r["messages_erased"], 1, "{r}");
    assert_eq!(held(d, "Qz4417xv"), 0);
    let (_, err) = run_err(mnemo(d).args(["erase", "--user-id", "u1", &id]));
    assert_eq!(err["error"]["kind"], "invalid_input", "{err}");
    assert!(err["error"]["message"].as_str().unwrap().contains("id"));

    for (args, field) in [
        (&["--session-id", "nope"][..], "session_id"),
        (&["--all"], "confirm"),
    ] {
        let (out, err) = run_err(mnemo(d).args(["erase", "--user-id", "u1"]).args(args));
        assert_eq!(err["error"]["kind"], "invalid_input", "{args:?}: {err}");
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let message = err["error"]["message"].as_str().unwrap();
        assert!(message.contains(field), "{args:?}: {message}");
    }
    // A session of another scope is unknown to this one.
    let (_, err) = run_err(mnemo(d).args(["erase", "--user-id", "u3", "--session-id", "s1"]));
    assert_eq!(err["error"]["kind"], "invalid_input", "{err}");
    assert!(held(d, "Mxyzptlk") > 0, "nothing written by refused erases");

    let r = run_ok(mnemo(d).args(["erase", "--user-id", "u1", "--session-id", "s1"]));
    assert_eq!(r["memories_erased"], 1, "{r}");
    assert_eq!(held(d, "Mxyzptlk"), 0);
    assert!(held(d, "Vw5521yy") > 0, "another session stays");

    let r = run_ok(mnemo(d).args(["erase", "--user-id", "u1", "--all", "--confirm"]));
    assert_eq!(r["memories_erased"], 1, "{r}");
    assert_eq!(held(d, "Vw5521yy"), 0);
    assert!(held(d, "Jq8810kk") > 0, "another user stays");
    let listed = run_ok(mnemo(d).args(["list", "--user-id", "u1"]));
    assert_eq!(listed["results"].as_array().unwrap().len(), 0, "{listed}");
}
