//! The server, driven over real HTTP on 127.0.0.1: a fresh store on the run's backend
//! (`MNEMO_TEST_STORE`: SQLite in a temp dir by default, or a PostgreSQL scratch schema;
//! `scripts/test.sh` runs this suite on both), the deterministic hash embedder, API keys in that
//! store. Each test starts its own server on port 0.

mod abandoned;
mod batches;
mod blocks;
mod content;
mod context;
mod erase;
mod fuzz;
mod graph;
mod http_hardening;
mod inproc;
mod input;
mod inspect;
mod jobs;
mod logs;
mod mcp;
mod mem0;
mod mem0_graph;
mod notes;
mod rest;
mod search_graph;
mod sessions;
mod shutdown;
mod tenancy;
mod tenancy_log;
mod timeline;
mod ui;

use mnemo::Memory;
use mnemo_core::{Embedder, RankParams};
use mnemo_server::{KeyStore, RunningServer, ScopeParts, ServerConfig};
use mnemo_testkit::{engines, HashEmbedder};
use serde_json::Value;
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

pub struct TestServer {
    pub url: String,
    pub admin: String,
    pub keys: KeyStore,
    agent: ureq::Agent,
    server: Option<RunningServer>,
    rt: tokio::runtime::Runtime,
    _dir: tempfile::TempDir,
    // Dropped after the server (fields drop in order): the schema outlives its connections.
    _schema: Option<mnemo::ScratchSchema>,
}

/// An embedder that holds every call at a gate until the test opens it, and lets the test wait
/// until a number of calls are held: a request stays in flight exactly as long as the test needs,
/// without sleeping.
#[derive(Default)]
pub struct GatedEmbedder {
    gate: Mutex<Gate>,
    changed: Condvar,
}

#[derive(Default)]
struct Gate {
    held: usize,
    open: bool,
}

impl GatedEmbedder {
    /// Blocks until `n` calls wait at the gate. Panics if they have not after a minute: the
    /// requests never reached the embedder (a guard against a hang, not a timing check).
    pub fn wait_for_held(&self, n: usize) {
        let gate = self.gate.lock().unwrap();
        let (gate, waited) = self
            .changed
            .wait_timeout_while(gate, Duration::from_secs(60), |g| g.held < n)
            .unwrap();
        assert!(
            !waited.timed_out(),
            "{} of {n} embedder calls arrived",
            gate.held
        );
    }

    /// Lets every held call, and every later one, through.
    pub fn open(&self) {
        self.gate.lock().unwrap().open = true;
        self.changed.notify_all();
    }

    /// Opens the gate when dropped, so a failing test does not leave a call held (the runtime
    /// would wait for it forever on drop).
    pub fn open_on_drop(self: &Arc<Self>) -> impl Drop {
        struct OpenOnDrop(Arc<GatedEmbedder>);
        impl Drop for OpenOnDrop {
            fn drop(&mut self) {
                self.0.open();
            }
        }
        OpenOnDrop(self.clone())
    }
}

impl Embedder for GatedEmbedder {
    fn model_id(&self) -> &str {
        HashEmbedder::MODEL_ID
    }
    fn dimension(&self) -> usize {
        HashEmbedder::DIM
    }
    fn embed(&self, texts: &[&str]) -> mnemo_core::Result<Vec<Vec<f32>>> {
        let mut gate = self.gate.lock().unwrap();
        gate.held += 1;
        self.changed.notify_all();
        let mut gate = self.changed.wait_while(gate, |g| !g.open).unwrap();
        gate.held -= 1;
        drop(gate);
        HashEmbedder.embed(texts)
    }
}

pub struct Reply {
    pub status: u16,
    pub body: Value,
    pub headers: Vec<(String, String)>,
}

impl Reply {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    pub fn kind(&self) -> &str {
        self.body["error"]["kind"].as_str().unwrap_or("")
    }
}

impl TestServer {
    pub fn start() -> Self {
        Self::start_with(Arc::new(HashEmbedder), |_| {})
    }

    /// A server on a fresh store of this run's backend (`MNEMO_TEST_STORE`, see
    /// `mnemo_testkit::engines`).
    pub fn start_with(embedder: Arc<dyn Embedder>, tweak: impl FnOnce(&mut ServerConfig)) -> Self {
        Self::start_on(
            engines::fresh_store(),
            embedder,
            mnemo::JobConfig::default(),
            None,
            tweak,
        )
    }

    /// A server whose engine runs jobs with `jobs` (this run's backend, hash embedder).
    pub fn start_with_jobs(jobs: mnemo::JobConfig, tweak: impl FnOnce(&mut ServerConfig)) -> Self {
        Self::start_on(
            engines::fresh_store(),
            Arc::new(HashEmbedder),
            jobs,
            None,
            tweak,
        )
    }

    /// A server on a fresh PostgreSQL schema, whatever the run's backend (the database at
    /// `MNEMO_TEST_PG_URL`, or one started for this process).
    pub fn start_postgres() -> Self {
        Self::start_postgres_with("")
    }

    /// [`start_postgres`](Self::start_postgres) with more session `options` for the store URL
    /// (URL-encoded, e.g. `%20-c%20lock_timeout%3D1s`); the schema's name is [`Self::pg_schema`].
    pub fn start_postgres_with(extra_options: &str) -> Self {
        Self::start_on(
            engines::fresh_postgres(extra_options),
            Arc::new(HashEmbedder),
            mnemo::JobConfig::default(),
            None,
            |_| {},
        )
    }

    /// The PostgreSQL schema a [`start_postgres`](Self::start_postgres) server works in.
    pub fn pg_schema(&self) -> &str {
        self._schema.as_ref().expect("a PostgreSQL server").name()
    }

    /// A server whose engine has a chat model (this run's backend, hash embedder).
    pub fn start_with_chat(
        chat: Arc<dyn mnemo_core::ChatModel>,
        infer: mnemo::InferConfig,
        tweak: impl FnOnce(&mut ServerConfig),
    ) -> Self {
        Self::start_on(
            engines::fresh_store(),
            Arc::new(HashEmbedder),
            mnemo::JobConfig::default(),
            Some((chat, infer)),
            tweak,
        )
    }

    fn start_on(
        test_store: engines::TestStore,
        embedder: Arc<dyn Embedder>,
        jobs: mnemo::JobConfig,
        chat: Option<(Arc<dyn mnemo_core::ChatModel>, mnemo::InferConfig)>,
        tweak: impl FnOnce(&mut ServerConfig),
    ) -> Self {
        let (store, dir, schema) = test_store.into_parts();
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        let memory = Memory::from_parts(store.clone(), embedder, RankParams::default())
            .unwrap()
            .with_job_config(jobs);
        let memory = match chat {
            Some((chat, infer)) => memory.with_chat(chat, infer),
            None => memory,
        };
        let mut cfg = ServerConfig::new("127.0.0.1:0".parse().unwrap(), dir.path().join("keys.db"));
        // Work is not priced unless a test asks: in a debug build every operation runs several
        // times longer than in the product, so the tests that count what a key is let in would
        // count the build's speed. The tests of work pricing set it themselves.
        cfg.rate_limit_work_ms = Some(0);
        tweak(&mut cfg);
        let server = rt
            .block_on(mnemo_server::start(memory, &cfg, std::future::pending()))
            .unwrap();
        // The keys live in the store the server runs on.
        let keys = KeyStore::new(store).unwrap();
        let admin = keys
            .create(Some("admin"), true, &ScopeParts::default())
            .unwrap()
            .key;
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .build()
            .into();
        Self {
            url: format!("http://{}", server.addr),
            admin,
            keys,
            agent,
            server: Some(server),
            rt,
            _dir: dir,
            _schema: schema,
        }
    }

    /// A key bound to one user.
    pub fn user_key(&self, user: &str) -> String {
        self.keys
            .create(None, false, &ScopeParts::new(Some(user.into()), None, None))
            .unwrap()
            .key
    }

    pub fn call(&self, method: &str, path: &str, key: Option<&str>, body: Option<Value>) -> Reply {
        let bytes = body.map(|b| b.to_string().into_bytes());
        self.raw(method, path, key, Some("application/json"), bytes)
    }

    pub fn raw(
        &self,
        method: &str,
        path: &str,
        key: Option<&str>,
        content_type: Option<&str>,
        body: Option<Vec<u8>>,
    ) -> Reply {
        let url = format!("{}{}", self.url, path);
        let mut req = ureq::http::Request::builder().method(method).uri(&url);
        if let Some(k) = key {
            req = req.header("Authorization", format!("Bearer {k}"));
        }
        if let (Some(ct), Some(_)) = (content_type, &body) {
            req = req.header("Content-Type", ct);
        }
        let req = req.body(body.unwrap_or_default()).unwrap();
        let mut resp = self.agent.run(req).expect("the server answers");
        let status = resp.status().as_u16();
        let headers = resp
            .headers()
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_str().unwrap_or("").to_string()))
            .collect();
        let text = resp
            .body_mut()
            .with_config()
            .limit(64 << 20)
            .read_to_string()
            .unwrap_or_default();
        let body = serde_json::from_str(&text).unwrap_or(Value::String(text));
        Reply {
            status,
            body,
            headers,
        }
    }

    /// Every record in the store (admin export), for before/after comparisons.
    /// The store's export, with the read counters (`access_count`, `last_accessed_at`) left
    /// out: reads count themselves, so a snapshot compares what writes changed.
    pub fn snapshot(&self) -> String {
        let r = self.call("GET", "/v1/export", Some(&self.admin.clone()), None);
        assert_eq!(r.status, 200, "{:?}", r.body);
        r.body
            .as_str()
            .unwrap()
            .lines()
            .map(|l| {
                let mut v: serde_json::Value = serde_json::from_str(l).unwrap();
                if let Some(o) = v.as_object_mut() {
                    o.remove("access_count");
                    o.remove("last_accessed_at");
                }
                v.to_string() + "\n"
            })
            .collect()
    }

    /// Adds a text for a user with the admin key; returns the memory id.
    pub fn seed(&self, user: &str, text: &str) -> String {
        let r = self.call(
            "POST",
            "/v1/memories",
            Some(&self.admin.clone()),
            Some(serde_json::json!({"text": text, "user_id": user})),
        );
        assert_eq!(r.status, 200, "{:?}", r.body);
        r.body["results"][0]["id"].as_str().unwrap().to_string()
    }

    pub fn stop(mut self) {
        if let Some(s) = self.server.take() {
            self.rt.block_on(s.shutdown()).unwrap();
        }
    }

    pub fn shutdown_handle(&mut self) -> RunningServer {
        self.server.take().unwrap()
    }

    pub fn runtime(&self) -> &tokio::runtime::Runtime {
        &self.rt
    }
}
