//! `mnemo context`: the documented form prints a pack within its budget (JSON with `--json`,
//! the rendering alone on stdout without), and bad budgets or sessions are typed errors naming
//! the field.

use crate::*;

fn add_turn(d: &Path, session: &str, user: &str, assistant: &str) {
    let messages = serde_json::json!([
        {"role": "user", "content": user},
        {"role": "assistant", "content": assistant},
    ]);
    run_ok(mnemo(d).args([
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
}

#[test]
fn context_prints_a_pack_within_budget_and_names_bad_fields() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    add_turn(
        d,
        "s1",
        "I moved to Porto last spring",
        "How do you like it there?",
    );
    add_turn(
        d,
        "s1",
        "The tram to the beach is my favourite",
        "Line 1 along the river?",
    );
    run_ok(mnemo(d).args([
        "add",
        "--user-id",
        "u2",
        "--infer",
        "false",
        "u2 lives in Oslo",
    ]));

    let pack = run_ok(mnemo(d).args([
        "context",
        "--user-id",
        "u1",
        "--budget",
        "300",
        "--session-id",
        "s1",
        "where do I live?",
    ]));
    assert_eq!(pack["budget_tokens"], 300);
    assert!(pack["used_tokens"].as_u64().unwrap() <= 300, "{pack}");
    assert!(!pack["sections"].as_array().unwrap().is_empty(), "{pack}");
    let rendered = pack["rendered"].as_str().unwrap();
    assert!(rendered.contains("Porto"), "{rendered}");
    assert!(
        !rendered.contains("Oslo"),
        "another user's memory: {rendered}"
    );

    // Without --json, stdout is the rendering itself.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_mnemo"))
        .env("MNEMO_MODELS_DIR", models_dir())
        .env("MNEMO_THREADS", "1")
        .args(["--data-dir"])
        .arg(d)
        .args([
            "context",
            "--user-id",
            "u1",
            "--budget",
            "300",
            "--session-id",
            "s1",
        ])
        .arg("where do I live?")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        String::from_utf8(out.stdout).unwrap().trim_end(),
        rendered.trim_end()
    );

    for (args, field) in [
        (&["--budget", "0"][..], "budget_tokens"),
        (&["--budget", "-20"], "budget_tokens"),
        (&["--budget", "200001"], "budget_tokens"),
        (&["--budget", "300", "--session-id", "nope"], "session_id"),
    ] {
        let (out, err) = run_err(
            mnemo(d)
                .args(["context", "--user-id", "u1"])
                .args(args)
                .arg("where do I live?"),
        );
        assert_eq!(err["error"]["kind"], "invalid_input", "{args:?}: {err}");
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let message = err["error"]["message"].as_str().unwrap();
        assert!(message.contains(field), "{args:?}: {message}");
    }
}
