//! A reader that goes away (`mnemo list | head -1`) ends the command quietly: exit 0, no panic,
//! nothing on stderr, and the store keeps what the command wrote.

use crate::{mnemo, run_ok};
use std::io::Read;
use std::process::{Command, Stdio};

/// Runs `cmd` with stdout a pipe whose reader reads `keep` bytes (0: none) and then closes it.
fn run_into_closed_pipe(cmd: &mut Command, keep: usize) -> std::process::Output {
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("mnemo runs");
    let mut out = child.stdout.take().unwrap();
    if keep > 0 {
        let mut buf = vec![0u8; keep];
        out.read_exact(&mut buf).expect("the first bytes");
    }
    drop(out);
    child.wait_with_output().expect("mnemo ends")
}

fn assert_quiet(out: &std::process::Output, what: &str) {
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "{what}: {:?}; stderr:\n{err}",
        out.status
    );
    assert!(!err.contains("panicked"), "{what}: {err}");
    assert!(!err.contains("Broken pipe"), "{what}: {err}");
}

#[test]
fn every_output_path_ends_quietly_when_the_reader_closes() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    // Enough output (≈ 300 KB of JSON) that a reader that takes one line leaves most unread.
    let lines: String = (0..600)
        .map(|i| {
            format!(
                "{{\"memory\": \"memory number {i} about the garden, the boat and the long walk home along the river\", \"user_id\": \"u\"}}\n"
            )
        })
        .collect();
    let file = dir.path().join("m.jsonl");
    std::fs::write(&file, lines).unwrap();
    let out = run_into_closed_pipe(mnemo(&data).arg("import").arg(&file), 0);
    assert_quiet(&out, "import --json");

    let cases: [(&[&str], bool); 5] = [
        (&["list", "--user-id", "u", "--limit", "600"], true),
        (
            &["search", "--user-id", "u", "--top-k", "50", "garden"],
            true,
        ),
        (&["export"], false),
        (&["context", "--user-id", "u", "garden walk"], false),
        (
            &[
                "get",
                "--user-id",
                "u",
                "00000000-0000-0000-0000-000000000000",
            ],
            false,
        ),
    ];
    for (args, json) in cases {
        for keep in [0, 1] {
            let mut cmd = mnemo(&data);
            cmd.args(args);
            let out = run_into_closed_pipe(&mut cmd, keep);
            let what = format!("{args:?} (json, reader kept {keep} bytes)");
            if args[0] == "get" {
                // An error's JSON goes to the closed pipe too: the status is still the error's.
                assert_eq!(out.status.code(), Some(3), "{what}");
                assert!(!String::from_utf8_lossy(&out.stderr).contains("panicked"));
                continue;
            }
            assert_quiet(&out, &what);
            if json {
                // The same in text output.
                let mut text = Command::new(env!("CARGO_BIN_EXE_mnemo"));
                text.env("MNEMO_MODELS_DIR", crate::models_dir())
                    .env("MNEMO_THREADS", "1")
                    .arg("--data-dir")
                    .arg(&data)
                    .args(args);
                let out = run_into_closed_pipe(&mut text, keep);
                assert_quiet(&out, &format!("{args:?} (text, reader kept {keep} bytes)"));
            }
        }
    }
    // Nothing the import wrote was lost to the closed pipe.
    let all = run_ok(mnemo(&data).args(["list", "--user-id", "u", "--limit", "600"]));
    assert_eq!(all["results"].as_array().unwrap().len(), 600);
}
