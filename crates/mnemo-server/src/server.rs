//! Starting and stopping the server: validate the config, open the key store, bind, serve until
//! told to stop, then stop accepting and let in-flight requests (and their writes) finish.
//!
//! Connections are served with hyper's HTTP/1 builder rather than `axum::serve`, which offers
//! no settings: a client that never finishes its headers is cut off after the header read
//! timeout instead of holding a connection (and a task) forever.

use crate::auth::KeyStore;
use crate::config::ServerConfig;
use crate::metrics::Metrics;
use crate::ratelimit::RateLimiter;
use crate::rest::{router, AppState, HttpConfig};
use crate::service::{Service, ServiceConfig};
use axum::Router;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use mnemo::Memory;
use mnemo_core::{Error, Result};
use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{oneshot, watch};
use tokio::task::{JoinHandle, JoinSet};

/// A server accepting requests; [`shutdown`](Self::shutdown) stops it gracefully.
#[derive(Debug)]
pub struct RunningServer {
    pub addr: SocketAddr,
    pub state: AppState,
    stop: Option<oneshot::Sender<()>>,
    /// Fires when shutdown begins.
    stopping: tokio::sync::watch::Receiver<bool>,
    task: JoinHandle<()>,
    /// This server's job workers; they stop with it.
    workers: Option<mnemo::JobWorkers>,
}

/// How long shutdown waits for open connections. Requests finish well within it; what can
/// outlive it is a connection that never ends by itself (an MCP event stream a client keeps).
pub const SHUTDOWN_GRACE: std::time::Duration = std::time::Duration::from_secs(30);

impl RunningServer {
    /// Stops accepting connections and waits for in-flight requests to finish.
    pub async fn shutdown(mut self) -> Result<()> {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        self.wait().await
    }

    /// Waits until the server stops: every connection closed, or [`SHUTDOWN_GRACE`] after
    /// shutdown began, whichever comes first.
    pub async fn wait(mut self) -> Result<()> {
        let mut stopping = self.stopping.clone();
        let grace_over = async move {
            let _ = stopping.wait_for(|s| *s).await;
            tokio::time::sleep(SHUTDOWN_GRACE).await;
        };
        let joined = tokio::select! {
            r = &mut self.task => r,
            _ = grace_over => {
                tracing::warn!("connections still open after the shutdown grace; closing them");
                self.task.abort();
                Ok(())
            }
        };
        // A job a worker was running is taken over after its lease by the next worker.
        drop(self.workers.take());
        // Reads and visits counted by the last requests are written before the process ends.
        if let Err(e) = self.state.service.memory().flush_usage().await {
            tracing::warn!(
                error_kind = e.kind().as_str(),
                "usage counts not written at shutdown"
            );
        }
        joined.map_err(|e| Error::internal(format!("server task: {e}")))
    }
}

/// The state both transports share: one service, one key store, one limiter.
pub fn build_state(memory: Memory, config: &ServerConfig) -> Result<AppState> {
    config.validate()?;
    let keys = if config.no_auth {
        None
    } else {
        // The store's own key table: every server on one store sees the same keys.
        Some(Arc::new(KeyStore::new(memory.store().clone()).map_err(
            |e| Error::Unavailable {
                component: "api keys".into(),
                reason: e.message,
            },
        )?))
    };
    let metrics = Arc::new(Metrics::new());
    let limits = config.rate_limits();
    let limiter = Arc::new(RateLimiter::with_work_price(
        limits.per_minute,
        limits.burst,
        limits.work_ms,
    ));
    let service = Service::new(
        memory,
        metrics,
        &ServiceConfig {
            max_in_flight: config.max_in_flight,
            log_content: config.log_content,
            allow_agent_writes_for_users: config.allow_agent_writes_for_users,
            max_messages_per_add: config.max_messages_per_add,
        },
    )
    .with_work_pricing(limiter.clone());
    Ok(AppState {
        service: Arc::new(service),
        keys,
        limiter,
    })
}

/// Binds `config.bind` and serves in the background; stops when `shutdown` is called or
/// `signal` resolves.
pub async fn start(
    memory: Memory,
    config: &ServerConfig,
    signal: impl Future<Output = ()> + Send + 'static,
) -> Result<RunningServer> {
    start_with(memory, config, HttpConfig::new(config), signal).await
}

/// [`start`] with the HTTP settings given, the read timeouts included; `http.local_addr` is
/// set here, to the address bound.
pub async fn start_with(
    memory: Memory,
    config: &ServerConfig,
    mut http: HttpConfig,
    signal: impl Future<Output = ()> + Send + 'static,
) -> Result<RunningServer> {
    let max = Duration::from_secs(crate::config::MAX_READ_TIMEOUT_SECS);
    if http.header_read_timeout.is_zero()
        || http.body_read_timeout.is_zero()
        || http.header_read_timeout > max
        || http.body_read_timeout > max
    {
        return Err(Error::invalid(
            "http",
            format!(
                "the header and body read timeouts must be longer than zero and at most {} seconds",
                crate::config::MAX_READ_TIMEOUT_SECS
            ),
        ));
    }
    let state = build_state(memory, config)?;
    let workers = (config.job_workers > 0 && state.service.memory().store().jobs().is_some())
        .then(|| state.service.start_job_workers(config.job_workers));
    let listener = TcpListener::bind(config.bind)
        .await
        .map_err(|e| Error::Unavailable {
            component: "server".into(),
            reason: format!("cannot listen on {}: {e}", config.bind),
        })?;
    let addr = listener.local_addr().map_err(|e| Error::Unavailable {
        component: "server".into(),
        reason: format!("listener address: {e}"),
    })?;
    http.local_addr = Some(addr);
    let app = router(state.clone(), &http);
    let (stop, stopped) = oneshot::channel::<()>();
    let (stopping_tx, stopping) = watch::channel(false);
    let told_to_stop = async move {
        tokio::select! {
            _ = stopped => {}
            _ = signal => {}
        }
        tracing::info!("shutting down: finishing in-flight requests");
        let _ = stopping_tx.send(true);
    };
    let task = tokio::spawn(serve(listener, app, http.header_read_timeout, told_to_stop));
    tracing::info!(%addr, auth = !config.no_auth, "listening");
    Ok(RunningServer {
        workers,
        addr,
        state,
        stop: Some(stop),
        stopping,
        task,
    })
}

/// Accepts connections until `stop` resolves, then closes the listener, asks every connection
/// to end after its current request and returns when all have. Aborting the task drops the
/// connection set, and with it every connection still open.
async fn serve(
    listener: TcpListener,
    app: Router,
    header_read_timeout: Duration,
    stop: impl Future<Output = ()>,
) {
    let (closing_tx, closing) = watch::channel(false);
    let mut conns = JoinSet::new();
    let mut stop = std::pin::pin!(stop);
    loop {
        tokio::select! {
            () = &mut stop => break,
            accepted = listener.accept() => match accepted {
                Ok((tcp, _)) => {
                    conns.spawn(connection(tcp, app.clone(), header_read_timeout, closing.clone()));
                }
                // The peer gave up before we took the connection: nothing to do.
                Err(e) if matches!(
                    e.kind(),
                    std::io::ErrorKind::ConnectionRefused
                        | std::io::ErrorKind::ConnectionAborted
                        | std::io::ErrorKind::ConnectionReset
                ) => {}
                // Out of file descriptors, most likely: connections that end will free some.
                Err(e) => {
                    tracing::error!(error = %e, "cannot accept connections; retrying in 1 s");
                    tokio::time::sleep(Duration::from_secs(1)).await;
                }
            },
            Some(_) = conns.join_next(), if !conns.is_empty() => {}
        }
    }
    drop(listener);
    let _ = closing_tx.send(true);
    while conns.join_next().await.is_some() {}
}

/// The most bytes a request's start line and headers may take; larger ones are answered 431
/// and the connection closed. Ample for any client (a key, cookies, tracing headers), small
/// enough that no request makes the server buffer much before it is authenticated.
pub const MAX_HEADER_BYTES: usize = 32 * 1024;

/// One HTTP/1 connection (upgrades allowed), cut off when its headers do not arrive within
/// `header_read_timeout`; told to finish its request and close once `closing` turns true.
async fn connection(
    tcp: TcpStream,
    app: Router,
    header_read_timeout: Duration,
    mut closing: watch::Receiver<bool>,
) {
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(header_read_timeout)
        .max_header_size(MAX_HEADER_BYTES);
    let conn = builder
        .serve_connection(
            TokioIo::new(crate::linger::Lingering::new(tcp)),
            TowerToHyperService::new(app),
        )
        .with_upgrades();
    let mut conn = std::pin::pin!(conn);
    let mut draining = false;
    loop {
        tokio::select! {
            done = conn.as_mut() => {
                if let Err(e) = done {
                    tracing::debug!(error = %e, "connection ended with an error");
                }
                return;
            }
            _ = closing.wait_for(|c| *c), if !draining => {
                draining = true;
                conn.as_mut().graceful_shutdown();
            }
        }
    }
}
