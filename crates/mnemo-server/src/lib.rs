//! mnemo-server: the HTTP and MCP surfaces of mnemo.
//!
//! - [`service`]: the one service layer every surface calls; it checks the caller's key against
//!   the scope before any work, queues, measures and logs.
//! - [`rest`]: the axum application — the native `/v1` API with its OpenAPI document, health,
//!   readiness and metrics — and [`mem0`], the Mem0-compatible routes (platform SDK and OSS
//!   server); [`mcp`], the MCP tools over stdio and streamable HTTP (`/mcp`).
//! - [`auth`]: API keys (stored hashed, bound to scopes, revocable); [`ratelimit`]: per key.
//! - [`error`]: error kinds → HTTP status and MCP codes, in one match.
//! - [`ui`]: the web inspector at `/ui`, its assets compiled in, under a strict CSP.
//! - [`config`]: `mnemo.toml` and the validated [`ServerConfig`]; [`server`]: start, serve,
//!   shut down gracefully.

pub mod api;
mod api_log;
pub mod auth;
pub mod config;
pub mod error;
mod linger;
pub mod mcp;
pub mod mem0;
pub mod metrics;
pub mod ratelimit;
pub mod rest;
pub mod server;
pub mod service;
pub mod ui;

pub use auth::{KeyStore, Principal, ScopeParts};
pub use config::{FileConfig, ServerConfig};
pub use error::{ApiError, ApiKind};
pub use server::{start, RunningServer};
pub use service::{Service, ServiceConfig};
