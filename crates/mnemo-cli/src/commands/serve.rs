//! `mnemo serve`, `mnemo mcp` and `mnemo keys`: the server surfaces and their API keys (the
//! `mnemo.toml` settings file that feeds every command's flags is read in `config.rs`).
//!
//! API keys live in the configured store, so every server on one store shares them. A
//! `keys.db` left by an older mnemo (`--keys-path`, by default in the data directory) is
//! imported into the store whenever one of these commands opens it: idempotently, keys already
//! in the store are kept as they are (a key revoked there stays revoked).

use crate::args::{Cli, KeysAction, ServeArgs};
use crate::commands::config_of;
use crate::io::outln;
use crate::io::print_json;
use mnemo::{Memory, StoreConfig};
use mnemo_server::{KeyStore, Principal, ScopeParts, ServerConfig};
use std::path::{Path, PathBuf};
use std::sync::Arc;

fn keys_path(cli: &Cli, explicit: &Option<PathBuf>) -> PathBuf {
    explicit.clone().unwrap_or_else(|| {
        cli.data_dir
            .clone()
            .unwrap_or_else(mnemo::default_data_dir)
            .join("keys.db")
    })
}

/// Libraries whose own debug and trace events carry request content: rmcp logs tool arguments,
/// results and session ids, the HTTP stack logs headers. Without `--log-content` they are held
/// at `warn` whatever `MNEMO_LOG` asks, so no level leaks a memory, a query or a session id.
const CONTENT_BEARING_TARGETS: &[&str] = &[
    "rmcp",
    "hyper",
    "hyper_util",
    "h2",
    "tower_http",
    "axum",
    "tower",
    "ureq",
];

fn log_filter(
    spec: Option<&str>,
    default: &str,
    log_content: bool,
) -> tracing_subscriber::EnvFilter {
    let held = |d: &str| {
        let target = d.split(['=', '[']).next().unwrap_or("").trim();
        CONTENT_BEARING_TARGETS
            .iter()
            .any(|t| target == *t || target.starts_with(&format!("{t}::")))
    };
    // A directive naming one of those targets (or a module inside one) is dropped, so a more
    // specific `rmcp::transport=debug` cannot outrank the cap below.
    let spec = spec.map(|s| {
        s.split(',')
            .filter(|d| log_content || !held(d))
            .collect::<Vec<_>>()
            .join(",")
    });
    let mut filter = spec
        .and_then(|s| tracing_subscriber::EnvFilter::try_new(s).ok())
        .unwrap_or_else(|| tracing_subscriber::EnvFilter::new(default));
    if !log_content {
        for target in CONTENT_BEARING_TARGETS {
            if let Ok(d) = format!("{target}=warn").parse() {
                filter = filter.add_directive(d);
            }
        }
    }
    filter
}

fn init_logs(default: &str, log_content: bool) {
    let spec = std::env::var("MNEMO_LOG").ok();
    let filter = log_filter(spec.as_deref(), default, log_content);
    // Logs go to stderr: stdout is the MCP channel (stdio) or the --json output.
    let _ = tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .with_env_filter(filter)
        .try_init();
}

async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        _ = ctrl_c => {}
        _ = term => {}
    }
}

pub(super) async fn serve(cli: &Cli, args: &ServeArgs, json: bool) -> anyhow::Result<()> {
    init_logs("info", args.log_content);
    let config = ServerConfig {
        bind: args.bind,
        no_auth: args.no_auth,
        max_body_bytes: args.max_body_bytes,
        rate_limit_per_minute: args.rate_limit_per_minute,
        rate_limit_burst: args.rate_limit_burst,
        rate_limit_work_ms: args.rate_limit_work_ms,
        cors_origins: args.cors_origins.clone(),
        log_content: args.log_content,
        max_in_flight: args.max_in_flight,
        keys_path: keys_path(cli, &args.keys_path),
        allow_agent_writes_for_users: args.allow_agent_writes_for_users,
        header_read_timeout_secs: args.header_read_timeout_secs,
        body_read_timeout_secs: args.body_read_timeout_secs,
        max_messages_per_add: args.max_messages_per_add,
        job_workers: args.job_workers,
    };
    config.validate()?;
    let memory = Memory::open(config_of(cli)?).await?;
    let (store, legacy) = (memory.store().clone(), config.keys_path.clone());
    blocking(move || Ok(mnemo::import_legacy_keys(store.as_ref(), &legacy)?)).await?;
    // Load the embedder now, so the first request does not pay for it and a missing model
    // stops the start instead of failing requests.
    memory.embedder().await?;
    let server = mnemo_server::start(memory, &config, shutdown_signal()).await?;
    let url = format!("http://{}", server.addr);
    if json {
        print_json(&serde_json::json!({ "listening": url, "auth": !config.no_auth }))?;
    } else {
        eprintln!(
            "mnemo listening on {url} (auth {})",
            if config.no_auth { "off" } else { "on" }
        );
    }
    server.wait().await?;
    eprintln!("mnemo stopped");
    Ok(())
}

pub(super) async fn mcp(cli: &Cli, api_key: &Option<String>) -> anyhow::Result<()> {
    init_logs("warn", false);
    let memory = Memory::open(config_of(cli)?).await?;
    let caller = match api_key {
        Some(k) => {
            let (store, legacy, k) = (memory.store().clone(), keys_path(cli, &None), k.clone());
            blocking(move || {
                mnemo::import_legacy_keys(store.as_ref(), &legacy)?;
                Ok(KeyStore::new(store)?.authenticate(&k)?)
            })
            .await?
        }
        None => Principal::anonymous_admin(),
    };
    let service = mnemo_server::Service::new(
        memory,
        Arc::new(mnemo_server::metrics::Metrics::new()),
        &mnemo_server::ServiceConfig::default(),
    );
    mnemo_server::mcp::serve_stdio(Arc::new(service), caller).await?;
    Ok(())
}

/// Runs blocking store work off the async workers (the PostgreSQL driver may not run on them).
async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> anyhow::Result<T> + Send + 'static,
) -> anyhow::Result<T> {
    tokio::task::spawn_blocking(f).await?
}

pub(super) async fn keys(cli: &Cli, action: &KeysAction, json: bool) -> anyhow::Result<()> {
    let store = config_of(cli)?.store_config();
    let legacy = keys_path(
        cli,
        match action {
            KeysAction::Create { keys_path, .. }
            | KeysAction::List { keys_path }
            | KeysAction::Revoke { keys_path, .. } => keys_path,
        },
    );
    let action = action.clone();
    blocking(move || keys_on(&store, &legacy, &action, json)).await
}

/// `mnemo keys` on the configured store (blocking).
fn keys_on(
    location: &StoreConfig,
    legacy: &Path,
    action: &KeysAction,
    json: bool,
) -> anyhow::Result<()> {
    let store = mnemo::open_store(location)?;
    mnemo::import_legacy_keys(store.as_ref(), legacy)?;
    let keys = KeyStore::new(store)?;
    match action {
        KeysAction::Create {
            scope, admin, name, ..
        } => {
            let bind = ScopeParts::new(
                scope.user_id.clone(),
                scope.agent_id.clone(),
                scope.run_id.clone(),
            );
            let key = keys.create(name.as_deref(), *admin, &bind)?;
            if json {
                print_json(&key)?;
            } else {
                outln!("{}", key.key);
                eprintln!(
                    "created {} ({}); the key is shown only now",
                    key.info.id,
                    if key.info.admin { "admin" } else { "scoped" }
                );
            }
        }
        KeysAction::List { .. } => {
            let list = keys.list()?;
            if json {
                print_json(&serde_json::json!({ "results": list }))?;
            } else {
                for k in list {
                    let scope = if k.admin {
                        "admin".to_string()
                    } else {
                        format!(
                            "user={} agent={} run={}",
                            k.user_id.as_deref().unwrap_or("*"),
                            k.agent_id.as_deref().unwrap_or("*"),
                            k.run_id.as_deref().unwrap_or("*")
                        )
                    };
                    let state = if k.revoked_at.is_some() {
                        "revoked"
                    } else {
                        "active"
                    };
                    outln!("{}  {state}  {scope}  {}", k.id, k.name.unwrap_or_default());
                }
            }
        }
        KeysAction::Revoke { id, .. } => {
            keys.revoke(id)?;
            if json {
                print_json(&serde_json::json!({ "revoked": id }))?;
            } else {
                outln!("revoked {id}");
            }
        }
    }
    Ok(())
}
