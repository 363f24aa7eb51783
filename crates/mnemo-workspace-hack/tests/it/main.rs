//! The promise of this crate: the partial builds of the test command (the Python wheel, built by
//! maturin from mnemo-py alone, and `cargo test -p mnemo-models --lib`) ask for no third-party
//! crate in a feature set that `cargo test --workspace` (scripts/test.sh) did not compile. When a
//! dependency change breaks it, the message names the crates and the features to add to this
//! crate's Cargo.toml; nothing fails at run time, the test command only gets minutes slower.

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;

/// `cargo tree` over the given selection, as `name vX.Y.Z|feature,feature` lines of the
/// third-party packages (workspace members print their path and are left out: their own
/// feature sets differ between these builds on purpose, `candle` and `testing`).
fn tree(selection: &[&str], edges: &str) -> BTreeSet<String> {
    let out = Command::new(env!("CARGO"))
        .args([
            "tree",
            "--offline",
            "--prefix",
            "none",
            "--format",
            "{p}|{f}",
            "-e",
            edges,
        ])
        .args(selection)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("cargo tree runs");
    assert!(
        out.status.success(),
        "cargo tree {selection:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let lines: BTreeSet<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| !l.contains(" (/"))
        .map(|l| l.replace(" (*)", "").replace(" (proc-macro)", ""))
        .collect();
    assert!(
        lines.iter().any(|l| l.starts_with("serde v")),
        "the tree should list real dependencies: {lines:?}"
    );
    lines
}

/// The feature list of the workspace build, read from scripts/test.sh (`features=(…)`), so the
/// check follows the script.
fn test_sh_features() -> Vec<String> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/test.sh");
    let text = std::fs::read_to_string(&script).expect("scripts/test.sh is readable");
    let line = text
        .lines()
        .find_map(|l| l.strip_prefix("features=("))
        .expect("scripts/test.sh sets features=(...)");
    line.trim_end_matches(')')
        .split_whitespace()
        .map(str::to_owned)
        .collect()
}

/// What `selection` compiles that the workspace build did not, in two views: every package
/// (proc-macros and build scripts included), and the target side alone (no build-dependencies,
/// no proc-macros), where a crate can have the same features as its host copy but other deps.
fn missing_from_workspace_build(selection: &[&str], dev: bool) -> Vec<String> {
    let features = test_sh_features();
    let mut workspace: Vec<&str> = vec!["--workspace"];
    workspace.extend(features.iter().map(String::as_str));
    let views = [
        (
            "normal,build,dev",
            if dev {
                "normal,build,dev"
            } else {
                "normal,build"
            },
        ),
        (
            "normal,dev,no-proc-macro",
            if dev {
                "normal,dev,no-proc-macro"
            } else {
                "normal,no-proc-macro"
            },
        ),
    ];
    let mut missing = Vec::new();
    for (all_edges, part_edges) in views {
        let all = tree(&workspace, all_edges);
        for line in tree(selection, part_edges) {
            if !all.contains(&line) {
                let name = line.split(' ').next().unwrap_or_default();
                let have: Vec<&String> = all
                    .iter()
                    .filter(|l| l.starts_with(&format!("{name} v")))
                    .collect();
                missing.push(format!("{line} (the workspace build has {have:?})"));
            }
        }
    }
    missing.sort();
    missing.dedup();
    missing
}

#[test]
fn the_test_wheel_reuses_the_workspace_builds_crates() {
    let missing = missing_from_workspace_build(&["-p", "mnemo-py", "--features", "testing"], false);
    assert!(
        missing.is_empty(),
        "the wheel's build (mnemo-py --features testing) would compile these again; add their \
         features to crates/mnemo-workspace-hack/Cargo.toml:\n{}",
        missing.join("\n")
    );
}

#[test]
fn the_embedder_crates_default_build_reuses_the_workspace_builds_crates() {
    let missing = missing_from_workspace_build(&["-p", "mnemo-models"], true);
    assert!(
        missing.is_empty(),
        "`cargo test -p mnemo-models --lib` would compile these again; add their features to \
         crates/mnemo-workspace-hack/Cargo.toml:\n{}",
        missing.join("\n")
    );
}
