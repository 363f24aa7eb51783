//! `mnemo blocks`: the documented forms (create, get, list, append with the text last,
//! replace with --old/--new, rewrite with --value, history, delete, seed --from-profile), typed
//! errors naming the field, and `mnemo context --no-blocks`.

use crate::*;

fn blocks(d: &Path, args: &[&str]) -> Value {
    run_ok(mnemo(d).arg("blocks").args(args))
}

#[test]
fn blocks_commands_edit_with_history_and_packs_start_with_them() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let u = ["--user-id", "u1", "--label", "human"];
    let made = blocks(
        d,
        &[
            &["create"],
            &u[..],
            &["--value", "Likes tea.", "--limit", "100"],
        ]
        .concat(),
    );
    assert_eq!(
        (made["version"].as_u64(), made["limit"].as_u64()),
        (Some(1), Some(100))
    );
    blocks(d, &[&["append"], &u[..], &["Uses metric units."]].concat());
    let r = blocks(
        d,
        &[&["replace"], &u[..], &["--old", "tea", "--new", "coffee"]].concat(),
    );
    assert_eq!(r["value"], "Likes coffee.\nUses metric units.");
    let (_, e) = run_err(
        mnemo(d)
            .arg("blocks")
            .args([&["replace"], &u[..], &["--old", "zzz", "--new", "x"]].concat()),
    );
    assert!(e.to_string().contains("occurs 0 times"), "{e}");
    let (_, e) = run_err(
        mnemo(d)
            .arg("blocks")
            .args([&["rewrite"], &u[..], &["--value", &"x".repeat(101)]].concat()),
    );
    assert!(e.to_string().contains("limit of 100"), "{e}");
    let (_, e) = run_err(mnemo(d).args(["blocks", "get", "--user-id", "u1", "--label", "Bad!"]));
    assert!(e.to_string().contains("label"), "{e}");
    let h = blocks(d, &[&["history"], &u[..]].concat());
    let ops: Vec<&str> = h["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["op"].as_str().unwrap())
        .collect();
    assert_eq!(ops, ["create", "append", "replace"]);
    let listed = blocks(d, &["list", "--user-id", "u1"]);
    assert_eq!(listed["blocks"].as_array().unwrap().len(), 1);

    run_ok(mnemo(d).args([
        "add",
        "--user-id",
        "u1",
        "--infer",
        "false",
        "I moved to Porto",
    ]));
    let pack = run_ok(mnemo(d).args([
        "context",
        "--user-id",
        "u1",
        "--budget",
        "300",
        "where do I live?",
    ]));
    assert!(
        pack["rendered"]
            .as_str()
            .unwrap()
            .starts_with("## Core memory"),
        "{pack}"
    );
    let bare = run_ok(mnemo(d).args([
        "context",
        "--user-id",
        "u1",
        "--budget",
        "300",
        "--no-blocks",
        "where do I live?",
    ]));
    assert!(
        !bare["rendered"].as_str().unwrap().contains("Core memory"),
        "{bare}"
    );

    blocks(d, &[&["delete"], &u[..]].concat());
    let seeded = blocks(d, &["seed", "--from-profile", "--user-id", "u1"]);
    assert_eq!(seeded["source"], "facts");
    assert_eq!(seeded["block"]["value"], "- I moved to Porto");
}
