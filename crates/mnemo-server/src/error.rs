//! The server's error type and the one place where error kinds become HTTP statuses and MCP
//! error codes. Bodies carry the kind, a message meant for the caller and whether a retry may
//! succeed; internal errors are logged and answered with a generic message.

use axum::http::{HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use mnemo_core::{Error as CoreError, ErrorKind};
use serde::Serialize;

/// Every kind of failure a server caller can see.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ApiKind {
    /// A library error kind, passed through.
    Core(ErrorKind),
    /// No API key, or one that is unknown or revoked.
    Unauthenticated,
    /// The key is valid but may not touch the scope (or operation) asked for.
    Forbidden,
    PayloadTooLarge,
    UnsupportedMediaType,
    /// The body did not arrive within the server's body read timeout.
    RequestTimeout,
    /// Without API keys, a `Host` that names neither loopback nor the server's own address: a
    /// page served from another name (DNS rebinding) must not reach a key-less server.
    HostNotAllowed,
    /// No such route.
    RouteNotFound,
    MethodNotAllowed,
}

impl ApiKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ApiKind::Core(k) => k.as_str(),
            ApiKind::Unauthenticated => "unauthenticated",
            ApiKind::Forbidden => "forbidden",
            ApiKind::PayloadTooLarge => "payload_too_large",
            ApiKind::UnsupportedMediaType => "unsupported_media_type",
            ApiKind::RequestTimeout => "request_timeout",
            ApiKind::HostNotAllowed => "host_not_allowed",
            ApiKind::RouteNotFound => "route_not_found",
            ApiKind::MethodNotAllowed => "method_not_allowed",
        }
    }

    /// The HTTP status and the JSON-RPC error code (MCP) of each kind, in one exhaustive match.
    pub fn codes(self) -> (StatusCode, i32) {
        // JSON-RPC: -32602 invalid params, -32603 internal; -32000..-32099 are ours.
        match self {
            ApiKind::Core(ErrorKind::InvalidInput) => (StatusCode::BAD_REQUEST, -32602),
            ApiKind::Core(ErrorKind::NotFound) => (StatusCode::NOT_FOUND, -32004),
            ApiKind::Core(ErrorKind::Conflict) => (StatusCode::CONFLICT, -32009),
            ApiKind::Core(ErrorKind::Unauthorized) => (StatusCode::FORBIDDEN, -32003),
            ApiKind::Core(ErrorKind::RateLimited) => (StatusCode::TOO_MANY_REQUESTS, -32029),
            ApiKind::Core(ErrorKind::Unavailable) => (StatusCode::SERVICE_UNAVAILABLE, -32050),
            ApiKind::Core(ErrorKind::ModelOutput) => (StatusCode::BAD_GATEWAY, -32052),
            ApiKind::Core(ErrorKind::Internal) => (StatusCode::INTERNAL_SERVER_ERROR, -32603),
            ApiKind::Core(ErrorKind::Corrupt) => (StatusCode::INTERNAL_SERVER_ERROR, -32055),
            ApiKind::Unauthenticated => (StatusCode::UNAUTHORIZED, -32001),
            ApiKind::Forbidden => (StatusCode::FORBIDDEN, -32003),
            ApiKind::PayloadTooLarge => (StatusCode::PAYLOAD_TOO_LARGE, -32013),
            ApiKind::UnsupportedMediaType => (StatusCode::UNSUPPORTED_MEDIA_TYPE, -32015),
            ApiKind::RequestTimeout => (StatusCode::REQUEST_TIMEOUT, -32008),
            ApiKind::HostNotAllowed => (StatusCode::FORBIDDEN, -32003),
            ApiKind::RouteNotFound => (StatusCode::NOT_FOUND, -32601),
            ApiKind::MethodNotAllowed => (StatusCode::METHOD_NOT_ALLOWED, -32601),
        }
    }

    pub fn retryable(self) -> bool {
        match self {
            ApiKind::Core(k) => k.is_retryable(),
            _ => false,
        }
    }
}

/// A failed request: what kind of failure and a message for the caller.
#[derive(Debug, Clone)]
pub struct ApiError {
    pub kind: ApiKind,
    pub message: String,
    /// Seconds after which a retry may succeed (rate limits).
    pub retry_after: Option<u64>,
}

impl ApiError {
    pub fn new(kind: ApiKind, message: impl Into<String>) -> Self {
        Self {
            kind,
            message: message.into(),
            retry_after: None,
        }
    }

    pub fn invalid(message: impl Into<String>) -> Self {
        Self::new(ApiKind::Core(ErrorKind::InvalidInput), message)
    }

    pub fn forbidden(message: impl Into<String>) -> Self {
        Self::new(ApiKind::Forbidden, message)
    }

    pub fn status(&self) -> StatusCode {
        self.kind.codes().0
    }
}

impl std::fmt::Display for ApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.kind.as_str(), self.message)
    }
}

impl std::error::Error for ApiError {}

impl From<CoreError> for ApiError {
    fn from(e: CoreError) -> Self {
        let kind = e.kind();
        let message = match kind {
            // Internal details (paths, SQL) stay in the log.
            ErrorKind::Internal => {
                match &e {
                    // A provider's error may quote what it was sent or answered: content.
                    CoreError::Model { .. } => tracing::error!("model provider error"),
                    _ => tracing::error!(error = %e, "internal error"),
                }
                "internal error; the server log has the details".to_string()
            }
            ErrorKind::Unavailable => {
                tracing::warn!(error_kind = kind.as_str(), "dependency unavailable");
                e.to_string()
            }
            _ => e.to_string(),
        };
        let mut out = Self::new(ApiKind::Core(kind), message);
        if kind == ErrorKind::Unavailable {
            // A busy store or a provider hiccup: a second later is a fair first retry.
            out.retry_after = Some(1);
        }
        out
    }
}

#[derive(Serialize)]
struct Body<'a> {
    error: Detail<'a>,
    /// The message again, where Mem0's clients look for it.
    detail: &'a str,
}

#[derive(Serialize)]
struct Detail<'a> {
    kind: &'static str,
    message: &'a str,
    retryable: bool,
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = Body {
            error: Detail {
                kind: self.kind.as_str(),
                message: &self.message,
                retryable: self.kind.retryable(),
            },
            detail: &self.message,
        };
        let mut resp = (self.status(), axum::Json(body)).into_response();
        if let Some(s) = self.retry_after {
            resp.headers_mut()
                .insert(axum::http::header::RETRY_AFTER, s.into());
        }
        if self.kind == ApiKind::Unauthenticated {
            // RFC 9110 §11.6.1: a 401 names the scheme that would succeed.
            resp.headers_mut().insert(
                axum::http::header::WWW_AUTHENTICATE,
                HeaderValue::from_static(r#"Bearer realm="mnemo""#),
            );
        }
        resp.extensions_mut().insert(self.kind);
        resp
    }
}

pub type ApiResult<T> = std::result::Result<T, ApiError>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn internal_details_are_not_sent() {
        let e: ApiError = CoreError::Internal {
            reason: "disk /secret/path failed".into(),
        }
        .into();
        assert_eq!(e.status(), StatusCode::INTERNAL_SERVER_ERROR);
        assert!(!e.message.contains("/secret/path"), "{}", e.message);
    }

    #[test]
    fn a_busy_store_is_503_with_retry_after() {
        let e: ApiError = CoreError::Unavailable {
            component: "store".into(),
            reason: "the database is busy".into(),
        }
        .into();
        let r = e.into_response();
        assert_eq!(r.status(), StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(r.headers()[axum::http::header::RETRY_AFTER], "1");
    }

    #[test]
    fn only_401_names_the_auth_scheme() {
        let r = ApiError::new(ApiKind::Unauthenticated, "no key").into_response();
        assert_eq!(r.status(), StatusCode::UNAUTHORIZED);
        assert_eq!(
            r.headers()[axum::http::header::WWW_AUTHENTICATE],
            r#"Bearer realm="mnemo""#
        );
        let r = ApiError::forbidden("not yours").into_response();
        assert!(!r
            .headers()
            .contains_key(axum::http::header::WWW_AUTHENTICATE));
    }

    #[test]
    fn every_kind_has_a_distinct_name_and_an_error_status() {
        let kinds = [
            ApiKind::Core(ErrorKind::InvalidInput),
            ApiKind::Core(ErrorKind::NotFound),
            ApiKind::Core(ErrorKind::Conflict),
            ApiKind::Core(ErrorKind::Unauthorized),
            ApiKind::Core(ErrorKind::RateLimited),
            ApiKind::Core(ErrorKind::Unavailable),
            ApiKind::Core(ErrorKind::ModelOutput),
            ApiKind::Core(ErrorKind::Internal),
            ApiKind::Unauthenticated,
            ApiKind::Forbidden,
            ApiKind::PayloadTooLarge,
            ApiKind::UnsupportedMediaType,
            ApiKind::RequestTimeout,
            ApiKind::HostNotAllowed,
            ApiKind::RouteNotFound,
            ApiKind::MethodNotAllowed,
        ];
        let mut names: Vec<_> = kinds.iter().map(|k| k.as_str()).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), kinds.len());
        for k in kinds {
            let (status, code) = k.codes();
            assert!(
                status.is_client_error() || status.is_server_error(),
                "{k:?}"
            );
            assert!(code < 0, "{k:?}");
        }
    }
}
