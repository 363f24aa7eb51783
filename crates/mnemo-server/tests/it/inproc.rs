//! The server's router in-process: the real application (every layer, a temp store, the key
//! store, an admin key) driven with `tower::ServiceExt::oneshot`, no socket. Optionally every
//! thread of its runtime logs into a buffer at debug level, as `MNEMO_LOG=debug` would.

use axum::body::Body;
use axum::http::{Method, Request};
use axum::Router;
use mnemo::Memory;
use mnemo_core::RankParams;
use mnemo_server::rest::{router, HttpConfig};
use mnemo_server::{ScopeParts, ServerConfig};
use mnemo_testkit::HashEmbedder;
use serde_json::Value;
use std::sync::{Arc, Mutex};
use tower::ServiceExt;

/// What the capturing subscriber has written.
#[derive(Clone, Default)]
pub(crate) struct LogBuffer(Arc<Mutex<Vec<u8>>>);

impl LogBuffer {
    pub(crate) fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().unwrap()).into_owned()
    }
}

impl std::io::Write for LogBuffer {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for LogBuffer {
    type Writer = LogBuffer;
    fn make_writer(&'a self) -> Self::Writer {
        self.clone()
    }
}

pub(crate) struct App {
    pub app: Router,
    pub admin: String,
    rt: tokio::runtime::Runtime,
    dispatch: Option<tracing::Dispatch>,
    _dir: tempfile::TempDir,
}

pub(crate) struct Answer {
    pub status: u16,
    pub body: Vec<u8>,
}

impl Answer {
    pub(crate) fn json(&self) -> Option<Value> {
        serde_json::from_slice(&self.body).ok()
    }
}

impl App {
    /// The app over a fresh store with the hash embedder and no chat model.
    pub(crate) fn new() -> Self {
        Self::build(None, |dir| {
            let store = mnemo_store_sqlite::SqliteStore::open(dir.join("mnemo.db")).unwrap();
            Memory::from_parts(
                Arc::new(store),
                Arc::new(HashEmbedder),
                RankParams::default(),
            )
            .unwrap()
        })
    }

    /// The app over `memory(dir)`, its runtime's threads logging into `log` when given.
    pub(crate) fn build(
        log: Option<LogBuffer>,
        memory: impl FnOnce(&std::path::Path) -> Memory,
    ) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let dispatch = log.map(|buf| {
            tracing::Dispatch::new(
                tracing_subscriber::fmt()
                    .with_max_level(tracing::Level::DEBUG)
                    .with_ansi(false)
                    .with_writer(buf)
                    .finish(),
            )
        });
        let mut rt = tokio::runtime::Builder::new_multi_thread();
        rt.worker_threads(2).enable_all();
        if let Some(d) = dispatch.clone() {
            // Workers and the blocking pool (model calls, store work) log through it too.
            rt.on_thread_start(move || {
                std::mem::forget(tracing::dispatcher::set_default(&d));
            });
        }
        let rt = rt.build().unwrap();
        let memory = memory(dir.path());
        let mut cfg = ServerConfig::new("127.0.0.1:0".parse().unwrap(), dir.path().join("keys.db"));
        // Thousands of requests from one key: no rate limit.
        cfg.rate_limit_per_minute = Some(0);
        let state = mnemo_server::server::build_state(memory, &cfg).unwrap();
        let admin = state
            .keys
            .as_ref()
            .unwrap()
            .create(Some("admin"), true, &ScopeParts::default())
            .unwrap()
            .key;
        let app = router(state, &HttpConfig::new(&cfg));
        Self {
            app,
            admin,
            rt,
            dispatch,
            _dir: dir,
        }
    }

    /// One request with the admin key; the whole answer.
    pub(crate) fn send(
        &self,
        method: Method,
        uri: &str,
        content_type: &str,
        body: Vec<u8>,
    ) -> Answer {
        let req = Request::builder()
            .method(method)
            .uri(uri)
            .header("authorization", format!("Bearer {}", self.admin))
            .header("content-type", content_type)
            .body(Body::from(body))
            .unwrap();
        let run = || {
            self.rt.block_on(async {
                let resp = self.app.clone().oneshot(req).await.unwrap();
                let status = resp.status().as_u16();
                let body = axum::body::to_bytes(resp.into_body(), usize::MAX)
                    .await
                    .unwrap()
                    .to_vec();
                Answer { status, body }
            })
        };
        match &self.dispatch {
            Some(d) => tracing::dispatcher::with_default(d, run),
            None => run(),
        }
    }

    pub(crate) fn json(&self, method: Method, uri: &str, body: &Value) -> Answer {
        self.send(
            method,
            uri,
            "application/json",
            body.to_string().into_bytes(),
        )
    }
}
