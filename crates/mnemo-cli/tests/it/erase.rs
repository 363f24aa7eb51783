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

/// Two processes on one data dir (this test's process holds the store, as a server would; the
/// CLI adds and erases beside it): the CLI adds T, the held store has T in its vector index,
/// the CLI erases T and exits, and the held store closes last. Neither saved index file holds
/// T's vector (8-bit in `.hnsw`, half precision in `.hnsw.f16`); the other memory's stays.
#[test]
fn an_erased_vector_is_in_no_saved_index_when_another_process_saves_last() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let kept = add_turn(d, "u1", "s1", "The quince trees are watered every Sunday");
    let secret = add_turn(d, "u1", "s1", "The letters are hidden in the Qwertzu attic");
    let held_store = mnemo_store_sqlite::SqliteStore::open(d.join("mnemo.db")).unwrap();
    let needles = |id: &str| {
        let id = mnemo_core::MemoryId::parse(id).unwrap();
        let graph = mnemo_store_sqlite::testing::graph_vector(&held_store, id)
            .expect("the held store indexed it");
        let halves = mnemo_store_sqlite::testing::exact_vector_bytes(&held_store, id)
            .expect("the held store keeps it");
        (graph.iter().map(|v| *v as u8).collect::<Vec<u8>>(), halves)
    };
    let (secret_graph, secret_halves) = needles(&secret);
    let (kept_graph, kept_halves) = needles(&kept);
    let r = run_ok(mnemo(d).args(["erase", "--user-id", "u1", &secret]));
    assert_eq!(r["id"], secret.as_str(), "{r}");
    drop(held_store);
    let file = |suffix: &str| std::fs::read(d.join(format!("mnemo.db{suffix}"))).unwrap();
    let has = |hay: &[u8], needle: &[u8]| hay.windows(needle.len()).any(|w| w == needle);
    let (graph, halves) = (file(".hnsw"), file(".hnsw.f16"));
    assert!(
        !has(&graph, &secret_graph),
        "the graph file keeps the erased vector"
    );
    assert!(
        !has(&halves, &secret_halves),
        "the exact copies keep the erased vector"
    );
    assert!(
        has(&graph, &kept_graph) && has(&halves, &kept_halves),
        "the other memory stays"
    );
}
