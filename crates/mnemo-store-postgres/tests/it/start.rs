//! Starting the test run's PostgreSQL (see the crate's test docs).

use std::path::PathBuf;
use std::process::{Command, Stdio};

/// The URL of the run's server: `MNEMO_TEST_PG_URL`, or one started here.
pub fn server() -> Result<String, String> {
    if let Ok(url) = std::env::var("MNEMO_TEST_PG_URL") {
        if !url.trim().is_empty() {
            return Ok(url);
        }
    }
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../scripts/pg.sh");
    let dir = std::env::temp_dir().join(format!("mnemo-pg-test-{}", std::process::id()));
    let out = Command::new(&script)
        .arg("start")
        .arg(&dir)
        .stderr(Stdio::inherit())
        .output()
        .map_err(|e| format!("cannot run {}: {e}", script.display()))?;
    if !out.status.success() {
        return Err(format!(
            "{} start failed ({})",
            script.display(),
            out.status
        ));
    }
    // Stops the server when this process is gone, however it ends.
    let watcher = format!(
        "while kill -0 {pid} 2>/dev/null; do sleep 1; done; {script} stop {dir}",
        pid = std::process::id(),
        script = script.display(),
        dir = dir.display()
    );
    Command::new("sh")
        .arg("-c")
        .arg(watcher)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("cannot start the stop watcher: {e}"))?;
    let url = String::from_utf8_lossy(&out.stdout).trim().to_string();
    if url.is_empty() {
        return Err("pg.sh printed no URL".into());
    }
    Ok(url)
}
