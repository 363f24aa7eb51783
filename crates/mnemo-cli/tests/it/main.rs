//! The `mnemo` binary, driven as a user would: the documented command forms, JSON errors, and
//! crashes (in the middle of an import, and of a server under concurrent adds). These use the
//! real embedding model (see README: models are installed by `mnemo models install`;
//! `MNEMO_MODELS_DIR` points at them), except `reembed`, whose embedders are OpenAI-compatible
//! stubs on 127.0.0.1.

mod blocks;
mod clients;
mod context;
mod crash;
mod erase;
mod eval;
mod forms;
mod graph;
mod infer;
mod jobs_crash;
mod migrate;
mod pg_concurrency;
mod pg_faults;
mod pipe;
mod profile;
mod reembed;
mod serve;
mod server_crash;
mod sessions;
mod store_url;
mod two_servers;

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

pub fn models_dir() -> PathBuf {
    let dir = std::env::var_os("MNEMO_MODELS_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../models"));
    assert!(
        dir.join("all-minilm-l6-v2/model.safetensors").exists(),
        "models not found in {}; run `mnemo models install` with MNEMO_MODELS_DIR set",
        dir.display()
    );
    dir
}

pub fn mnemo(data: &Path) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_mnemo"));
    c.env("MNEMO_MODELS_DIR", models_dir())
        .env("MNEMO_THREADS", "1")
        .arg("--data-dir")
        .arg(data)
        .arg("--json");
    c
}

pub fn run_ok(cmd: &mut Command) -> Value {
    let out = cmd.output().expect("mnemo runs");
    assert!(
        out.status.success(),
        "mnemo failed: {}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "stdout is not JSON ({e}): {}",
            String::from_utf8_lossy(&out.stdout)
        )
    })
}

pub fn run_err(cmd: &mut Command) -> (Output, Value) {
    let out = cmd.output().expect("mnemo runs");
    assert!(
        !out.status.success(),
        "expected failure: {}",
        String::from_utf8_lossy(&out.stdout)
    );
    let v = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "error is not JSON ({e}): {}",
            String::from_utf8_lossy(&out.stdout)
        )
    });
    (out, v)
}
