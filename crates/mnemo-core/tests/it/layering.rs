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
    for krate in ABOVE_THE_FACADE {
        let out = Command::new(env!("CARGO"))
            .args([
                "tree",
                "--offline",
                "-p",
                krate,
                "--all-features",
                "-e",
                "normal,build",
                "--depth",
                "1",
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
            "cargo tree -p {krate} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let tree = String::from_utf8_lossy(&out.stdout);
        let direct: Vec<&str> = tree
            .lines()
            .filter_map(|l| l.split_whitespace().next())
            .collect();
        assert!(
            direct.contains(krate) && direct.contains(&"mnemo"),
            "unexpected cargo tree output for {krate}: {tree}"
        );
        let bad: Vec<&&str> = BACKENDS.iter().filter(|b| direct.contains(b)).collect();
        assert!(
            bad.is_empty(),
            "{krate} depends directly on {bad:?}; reach the store through the facade"
        );
    }
}
