//! The official Python clients, unchanged, against a running `mnemo`: the Mem0 SDK (`mem0ai`)
//! on the Mem0-compatible REST routes, and the MCP Python SDK (`mcp`) over stdio and streamable
//! HTTP. `scripts/pyenv.sh` installs both, pinned, into a virtualenv under the target dir (once;
//! later runs reuse it); the scripts in `tests/python/` make their own assertions and print a JSON
//! summary, which is checked here again.

use crate::*;
use std::io::{BufRead, BufReader, Read};
use std::process::{Child, ChildStdout, Stdio};
use std::sync::mpsc;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn script(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/python")
        .join(name)
}

/// The virtualenv's python, installed by `scripts/pyenv.sh` once per test process.
fn python() -> &'static Path {
    static PYTHON: OnceLock<PathBuf> = OnceLock::new();
    PYTHON.get_or_init(|| {
        let started = Instant::now();
        let out = Command::new("bash")
            .arg(repo_root().join("scripts/pyenv.sh"))
            .stderr(Stdio::inherit())
            .output()
            .expect("bash runs scripts/pyenv.sh");
        assert!(
            out.status.success(),
            "scripts/pyenv.sh failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stdout)
        );
        let stdout = String::from_utf8(out.stdout).unwrap();
        let path = PathBuf::from(
            stdout
                .lines()
                .last()
                .expect("pyenv.sh prints a path")
                .trim(),
        );
        assert!(path.exists(), "no python at {}", path.display());
        eprintln!(
            "python env ready in {:.1}s: {}",
            started.elapsed().as_secs_f64(),
            path.display()
        );
        path
    })
}

/// A `mnemo serve` child on 127.0.0.1:0. Dropping it stops the server (SIGTERM, then SIGKILL).
pub(crate) struct Server {
    child: Child,
    pub(crate) url: String,
    stderr_log: PathBuf,
    // Held so the server's stdout stays open while it runs.
    _stdout: BufReader<ChildStdout>,
}

/// `serve` flags for tests whose request rate is part of the load, not what they check: the
/// per-key limit (20 a second by default) would answer 429 on a fast machine.
pub(crate) const NO_RATE_LIMIT: &[&str] = &["--rate-limit-per-minute", "0"];

impl Server {
    fn start(data: &Path) -> Server {
        Self::start_with(data, &[], &[], &[])
    }

    /// Starts `mnemo [GLOBAL…] serve --bind 127.0.0.1:0 [SERVE…]` with extra environment.
    pub(crate) fn start_with(
        data: &Path,
        global: &[&str],
        serve: &[&str],
        env: &[(&str, &str)],
    ) -> Server {
        let stderr_log = data.with_extension("serve.log");
        let mut cmd = mnemo(data);
        cmd.args(global)
            .args(["serve", "--bind", "127.0.0.1:0"])
            .args(serve)
            .envs(env.iter().copied());
        let mut child = cmd
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(&stderr_log).unwrap())
            .spawn()
            .expect("mnemo serve starts");
        // The first stdout line says where it listens; read it on a thread, to time out.
        let mut stdout = BufReader::new(child.stdout.take().unwrap());
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let mut line = String::new();
            let n = stdout.read_line(&mut line);
            let _ = tx.send((n.map(|_| line), stdout));
        });
        let (line, stdout) = match rx.recv_timeout(Duration::from_secs(180)) {
            Ok((Ok(line), stdout)) if !line.trim().is_empty() => (line, stdout),
            other => {
                let _ = child.kill();
                let _ = child.wait();
                panic!(
                    "mnemo serve did not say where it listens ({:?}); its log:\n{}",
                    other.map(|(l, _)| l.map_err(|e| e.to_string())),
                    std::fs::read_to_string(&stderr_log).unwrap_or_default()
                );
            }
        };
        let v: Value = serde_json::from_str(&line)
            .unwrap_or_else(|e| panic!("serve's first line is not JSON ({e}): {line}"));
        assert_eq!(v["auth"], true, "{v}");
        let url = v["listening"].as_str().expect("listening").to_string();
        assert!(url.starts_with("http://127.0.0.1:"), "{url}");
        Server {
            child,
            url,
            stderr_log,
            _stdout: stdout,
        }
    }

    pub(crate) fn log(&self) -> String {
        std::fs::read_to_string(&self.stderr_log).unwrap_or_default()
    }

    /// SIGKILL, as a crash would: no handler runs, nothing is flushed. Waits for the exit.
    pub(crate) fn kill(&mut self) -> std::process::ExitStatus {
        let _ = self.child.kill();
        self.child.wait().expect("the killed server is reaped")
    }

    /// SIGTERM and wait up to `grace`; `Some(status)` when it exited by itself.
    pub(crate) fn terminate(&mut self, grace: Duration) -> Option<std::process::ExitStatus> {
        if let Ok(Some(st)) = self.child.try_wait() {
            return Some(st);
        }
        let _ = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        let until = Instant::now() + grace;
        while Instant::now() < until {
            if let Ok(Some(st)) = self.child.try_wait() {
                return Some(st);
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        None
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if self.terminate(Duration::from_secs(10)).is_none() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// `mnemo keys create --user-id USER`: the key's secret.
pub(crate) fn key_for(data: &Path, user: &str) -> String {
    let v = run_ok(mnemo(data).args(["keys", "create", "--user-id", user]));
    let key = v["key"].as_str().expect("a key").to_string();
    assert!(key.starts_with("mnemo_"), "{v}");
    key
}

/// `mnemo keys create --admin`: the key's secret.
pub(crate) fn key_for_admin(data: &Path) -> String {
    let v = run_ok(mnemo(data).args(["keys", "create", "--admin"]));
    let key = v["key"].as_str().expect("a key").to_string();
    assert!(key.starts_with("mnemo_"), "{v}");
    key
}

/// Runs a Python script with the venv's python and the binary's environment; it must exit 0.
/// Returns its summary (the last stdout line, as JSON).
fn run_script(server: &Server, name: &str, args: &[&str]) -> Value {
    let started = Instant::now();
    let mut cmd = Command::new(python());
    cmd.arg(script(name))
        .args(args)
        .env("MNEMO_MODELS_DIR", models_dir())
        .env("MNEMO_THREADS", "1")
        .env("MEM0_TELEMETRY", "False")
        .env("PYTHONUNBUFFERED", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("python runs");
    // Drain stderr on a thread (it can be long), stdout here.
    let mut err = child.stderr.take().unwrap();
    let err_thread = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = err.read_to_string(&mut s);
        s
    });
    let mut out = String::new();
    child
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut out)
        .unwrap();
    let status = child.wait().unwrap();
    let err = err_thread.join().unwrap();
    eprintln!(
        "{name}: exit {status} in {:.1}s\n--- stderr ---\n{err}--- end ---",
        started.elapsed().as_secs_f64()
    );
    assert!(
        status.success(),
        "{name} failed ({status})\nstdout:\n{out}\nstderr:\n{err}\nserver log:\n{}",
        server.log()
    );
    let last = out.lines().last().unwrap_or_default();
    serde_json::from_str(last)
        .unwrap_or_else(|e| panic!("{name}'s last line is not JSON ({e}): {out}"))
}

fn strs(v: &Value) -> Vec<&str> {
    v.as_array()
        .unwrap_or_else(|| panic!("not an array: {v}"))
        .iter()
        .map(|s| s.as_str().unwrap())
        .collect()
}

#[test]
fn mem0_python_sdk_works_unchanged() {
    let py = python();
    let started = Instant::now();
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let alice = key_for(&data, "alice");
    let bob = key_for(&data, "bob");
    let mut server = Server::start(&data);
    eprintln!(
        "server up at {} in {:.1}s ({})",
        server.url,
        started.elapsed().as_secs_f64(),
        py.display()
    );

    let s = run_script(&server, "mem0_sdk.py", &[&server.url, &alice, &bob]);

    assert_eq!(s["sdk"], "mem0ai", "{s}");
    assert!(
        s["bad_key"].as_str().unwrap().starts_with("Error:"),
        "a wrong key is refused at the ping: {s}"
    );
    assert_eq!(
        strs(&s["steps"]),
        [
            "add",
            "add2",
            "search",
            "get_all",
            "get",
            "update",
            "history",
            "cross_tenant",
            "unchanged_after_cross_tenant",
            "delete",
            "delete_all",
            "get_all_after",
            "add_run",
            "run_is_a_session",
            "graph_add",
            "graph_relations"
        ],
        "{s}"
    );
    assert_eq!(strs(&s["history_events"]), ["ADD", "UPDATE"], "{s}");
    assert!(s["added"].as_u64().unwrap() >= 2, "{s}");
    assert_eq!(s["left_after_delete_all"], 0, "{s}");
    let mid = s["memory_id"].as_str().unwrap();
    assert_eq!(mid.len(), 36, "a UUID: {mid}");

    // Every cross-tenant call was refused with a Mem0 exception: 404 (bob cannot see alice's
    // memory) or 403 (bob may not name alice's scope).
    let denied = s["cross_tenant"].as_array().unwrap();
    let calls: Vec<&str> = denied.iter().map(|d| d["call"].as_str().unwrap()).collect();
    assert_eq!(
        calls,
        [
            "get",
            "update",
            "history",
            "delete",
            "search",
            "get_all",
            "delete_all"
        ]
    );
    for d in denied {
        match d["status"].as_u64().unwrap() {
            404 => assert_eq!(d["error"], "MemoryNotFoundError", "{d}"),
            403 => assert_eq!(d["error"], "AuthenticationError", "{d}"),
            other => panic!("unexpected status {other}: {d}"),
        }
    }
    for scoped in &denied[4..] {
        assert_eq!(scoped["status"], 403, "naming alice's scope: {scoped}");
    }
    assert_eq!(s["get_after_delete"]["error"], "MemoryNotFoundError", "{s}");
    assert_eq!(s["get_after_delete"]["status"], 404, "{s}");

    // The server saw the SDK's own requests, and stops cleanly on SIGTERM.
    let status = server.terminate(Duration::from_secs(20));
    let log = server.log();
    assert!(
        matches!(status, Some(st) if st.success()),
        "serve did not stop cleanly on SIGTERM ({status:?}):\n{log}"
    );
    eprintln!(
        "mem0_python_sdk_works_unchanged: {:.1}s",
        started.elapsed().as_secs_f64()
    );
}

#[test]
fn mcp_python_client_over_stdio_and_http() {
    python();
    let started = Instant::now();
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("http-data");
    let stdio_data = dir.path().join("stdio-data");
    let alice = key_for(&data, "alice");
    let bob = key_for(&data, "bob");
    let mut server = Server::start(&data);

    let bin = env!("CARGO_BIN_EXE_mnemo");
    let s = run_script(
        &server,
        "mcp_clients.py",
        &[
            "--bin",
            bin,
            "--stdio-data",
            stdio_data.to_str().unwrap(),
            "--url",
            &server.url,
            "--alice-key",
            &alice,
            "--bob-key",
            &bob,
        ],
    );

    let tools = [
        "add_link",
        "add_memory",
        "core_memory_append",
        "core_memory_list",
        "core_memory_replace",
        "core_memory_rewrite",
        "core_memory_seed",
        "delete_all_memories",
        "delete_memory",
        "delete_session",
        "erase_memory",
        "erase_scope",
        "erase_session",
        "get_context",
        "get_job",
        "get_links",
        "get_memory",
        "get_profile",
        "get_relation_history",
        "get_relations",
        "get_relations_between",
        "get_segment_pages",
        "get_session",
        "get_session_messages",
        "list_memories",
        "list_segments",
        "list_sessions",
        "memory_history",
        "refresh_profile",
        "remove_link",
        "search_memories",
        "timeline",
        "update_memory",
    ];
    for transport in ["stdio", "http"] {
        let t = &s[transport];
        assert_eq!(t["server"], "mnemo", "{transport}: {t}");
        assert_eq!(strs(&t["tools"]), tools, "{transport}: {t}");
        assert_eq!(t["memory_id"].as_str().unwrap().len(), 36, "{t}");
        assert_eq!(strs(&t["history_events"]), ["ADD", "UPDATE"], "{t}");
        assert_eq!(t["get_after_delete"]["code"], -32004, "{transport}: {t}");
        assert_eq!(
            t["get_after_delete"]["kind"], "not_found",
            "{transport}: {t}"
        );
        assert_eq!(t["left_after_delete_all"], 0, "{transport}: {t}");
        // Core memory through the official client: seeded, edited, refused with typed codes.
        let b = &t["blocks"];
        assert_eq!(
            b["value"], "Lives in Porto. Prefers imperial units.",
            "{transport}: {b}"
        );
        assert_eq!(b["version"], 5, "{transport}: {b}");
        assert_eq!(b["ambiguous_code"], -32602, "{transport}: {b}");
        assert_eq!(b["conflict_code"], -32009, "{transport}: {b}");
    }
    // stdio wrote to its own data dir, not the HTTP server's.
    assert!(stdio_data.join("mnemo.db").exists());
    assert_ne!(s["stdio"]["memory_id"], s["http"]["memory_id"]);

    // Over HTTP, bob's key could use none of the 13 tools on alice's memory or scope.
    let http = &s["http"];
    let denied = http["cross_tenant"].as_array().unwrap();
    let mut denied_tools: Vec<&str> = denied.iter().map(|d| d["tool"].as_str().unwrap()).collect();
    denied_tools.sort();
    denied_tools.dedup();
    assert_eq!(denied_tools, tools);
    for d in denied {
        let code = d["code"].as_i64().unwrap();
        assert!(code == -32003 || code == -32004, "{d}");
    }
    for d in denied {
        if [
            "add_memory",
            "search_memories",
            "list_memories",
            "delete_all_memories",
            "get_context",
            "core_memory_list",
            "core_memory_replace",
            "core_memory_rewrite",
            "core_memory_seed",
        ]
        .contains(&d["tool"].as_str().unwrap())
        {
            assert_eq!(d["code"], -32003, "naming alice's scope is forbidden: {d}");
        }
    }
    assert_eq!(http["unchanged_after_cross_tenant"], true);
    // No key, or a wrong key: the session does not initialize.
    for case in ["no_key", "wrong_key"] {
        let r = &http["rejected"][case];
        assert!(
            r["error"]
                .as_str()
                .is_some_and(|m| m.starts_with("MCPError")),
            "{case}: {r}"
        );
        assert_eq!(r["status"], 401, "{case}: {r}");
    }

    let status = server.terminate(Duration::from_secs(20));
    assert!(
        matches!(status, Some(st) if st.success()),
        "serve did not stop cleanly on SIGTERM ({status:?}):\n{}",
        server.log()
    );
    eprintln!(
        "mcp_python_client_over_stdio_and_http: {:.1}s",
        started.elapsed().as_secs_f64()
    );
}
