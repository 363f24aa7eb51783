//! Starting and stopping the server: validate the config, open the key store, bind, serve until
//! told to stop, then stop accepting and let in-flight requests (and their writes) finish.

use crate::auth::KeyStore;
use crate::config::ServerConfig;
use crate::metrics::Metrics;
use crate::ratelimit::RateLimiter;
use crate::rest::{router, AppState, HttpConfig};
use crate::service::{Service, ServiceConfig};
use mnemo::Memory;
use mnemo_core::{Error, Result};
use std::net::SocketAddr;
use std::sync::Arc;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

/// A server accepting requests; [`shutdown`](Self::shutdown) stops it gracefully.
#[derive(Debug)]
pub struct RunningServer {
    pub addr: SocketAddr,
    pub state: AppState,
    stop: Option<oneshot::Sender<()>>,
    /// Fires when shutdown begins.
    stopping: tokio::sync::watch::Receiver<bool>,
    task: JoinHandle<std::io::Result<()>>,
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
                return Ok(());
            }
        };
        match joined {
            Ok(Ok(())) => Ok(()),
            Ok(Err(e)) => Err(Error::Unavailable {
                component: "server".into(),
                reason: e.to_string(),
            }),
            Err(e) => Err(Error::internal(format!("server task: {e}"))),
        }
    }
}

/// The state both transports share: one service, one key store, one limiter.
pub fn build_state(memory: Memory, config: &ServerConfig) -> Result<AppState> {
    config.validate()?;
    let keys = if config.no_auth {
        None
    } else {
        Some(Arc::new(
            KeyStore::open(&config.keys_path).map_err(|e| Error::Storage { reason: e.message })?,
        ))
    };
    let metrics = Arc::new(Metrics::new());
    let service = Service::new(
        memory,
        metrics,
        &ServiceConfig {
            max_in_flight: config.max_in_flight,
            log_content: config.log_content,
        },
    );
    Ok(AppState {
        service: Arc::new(service),
        keys,
        limiter: Arc::new(RateLimiter::new(
            config.rate_limit_per_minute,
            config.rate_limit_burst,
        )),
    })
}

/// Binds `config.bind` and serves in the background; stops when `shutdown` is called or
/// `signal` resolves.
pub async fn start(
    memory: Memory,
    config: &ServerConfig,
    signal: impl std::future::Future<Output = ()> + Send + 'static,
) -> Result<RunningServer> {
    let state = build_state(memory, config)?;
    let app = router(
        state.clone(),
        &HttpConfig {
            max_body_bytes: config.max_body_bytes,
            cors_origins: config.cors_origins.clone(),
        },
    );
    let listener = tokio::net::TcpListener::bind(config.bind)
        .await
        .map_err(|e| Error::Unavailable {
            component: "server".into(),
            reason: format!("cannot listen on {}: {e}", config.bind),
        })?;
    let addr = listener.local_addr().map_err(|e| Error::Unavailable {
        component: "server".into(),
        reason: format!("listener address: {e}"),
    })?;
    let (stop, stopped) = oneshot::channel::<()>();
    let (stopping_tx, stopping) = tokio::sync::watch::channel(false);
    let task = tokio::spawn(async move {
        axum::serve(listener, app)
            .with_graceful_shutdown(async move {
                tokio::select! {
                    _ = stopped => {}
                    _ = signal => {}
                }
                tracing::info!("shutting down: finishing in-flight requests");
                let _ = stopping_tx.send(true);
            })
            .await
    });
    tracing::info!(%addr, auth = !config.no_auth, "listening");
    Ok(RunningServer {
        addr,
        state,
        stop: Some(stop),
        stopping,
        task,
    })
}
