//! The core crate stays free of I/O stacks: no async runtime, HTTP client, database driver or
//! web framework may appear anywhere in its (non-dev) dependency tree.

use std::process::Command;

const FORBIDDEN: &[&str] = &[
    "tokio",
    "async-std",
    "smol",
    "futures-executor",
    "reqwest",
    "hyper",
    "ureq",
    "isahc",
    "curl",
    "surf",
    "rusqlite",
    "libsqlite3-sys",
    "sqlx",
    "postgres",
    "tokio-postgres",
    "diesel",
    "redis",
    "mongodb",
    "axum",
    "actix-web",
    "warp",
    "rocket",
    "tide",
    "poem",
    "salvo",
    "tower-http",
    "usearch",
    "ort",
    "candle-core",
];

#[test]
fn core_depends_on_no_runtime_network_database_or_web_crate() {
    let out = Command::new(env!("CARGO"))
        .args([
            "tree",
            "--offline",
            "-p",
            "mnemo-core",
            "-e",
            "normal,build",
            "--prefix",
            "none",
            "--format",
            "{p}",
        ])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("cargo tree runs");
    assert!(
        out.status.success(),
        "cargo tree failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let tree = String::from_utf8_lossy(&out.stdout);
    let names: Vec<&str> = tree
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    assert!(
        names.contains(&"mnemo-core"),
        "unexpected cargo tree output: {tree}"
    );
    assert!(
        names.contains(&"serde"),
        "the tree should list real dependencies: {tree}"
    );
    let bad: Vec<&&str> = FORBIDDEN.iter().filter(|f| names.contains(f)).collect();
    assert!(bad.is_empty(), "mnemo-core pulls in {bad:?}");
}

/// Crates above the facade reach a store only through `mnemo` (`StoreConfig`, `open_store`,
/// `reembed_store`): none of them may depend on a store crate or a database driver directly,
/// outside dev-dependencies.
const ABOVE_THE_FACADE: &[&str] = &["mnemo-server", "mnemo-cli", "mnemo-eval", "mnemo-py"];
const BACKENDS: &[&str] = &[
    "mnemo-store-sqlite",
    "mnemo-store-postgres",
    "rusqlite",
    "libsqlite3-sys",
    "postgres",
    "tokio-postgres",
    "pgvector",
    "sqlx",
];

#[test]
fn nothing_above_the_facade_names_a_backend() {
    // The declared dependencies (optional ones included, so every feature is covered), read
    // from the manifests: nothing is resolved or fetched, so the check holds on a machine that
    // never downloaded an opt-in feature's crates.
    let out = Command::new(env!("CARGO"))
        .args([
            "metadata",
            "--offline",
            "--no-deps",
            "--format-version",
            "1",
        ])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("cargo metadata runs");
    assert!(
        out.status.success(),
        "cargo metadata failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let meta: serde_json::Value = serde_json::from_slice(&out.stdout).expect("metadata is JSON");
    let packages = meta["packages"].as_array().expect("packages");
    for krate in ABOVE_THE_FACADE {
        let package = packages
            .iter()
            .find(|p| p["name"] == *krate)
            .unwrap_or_else(|| panic!("{krate} is a workspace member"));
        // `kind` is null for normal dependencies, "build" or "dev" otherwise.
        let direct: Vec<&str> = package["dependencies"]
            .as_array()
            .expect("dependencies")
            .iter()
            .filter(|d| d["kind"] != "dev")
            .filter_map(|d| d["name"].as_str())
            .collect();
        assert!(
            direct.contains(&"mnemo"),
            "unexpected dependencies of {krate}: {direct:?}"
        );
        let bad: Vec<&&str> = BACKENDS.iter().filter(|b| direct.contains(b)).collect();
        assert!(
            bad.is_empty(),
            "{krate} depends directly on {bad:?}; reach the store through the facade"
        );
    }
}
