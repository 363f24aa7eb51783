//! Extractors whose rejections are API errors: a malformed body, a wrong type, an unknown field
//! or an oversized body is a 4xx with a message that says what was wrong.

use crate::error::{ApiError, ApiKind};
use axum::extract::rejection::{JsonRejection, QueryRejection};
use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::request::Parts;
use axum::http::StatusCode;
use serde::de::DeserializeOwned;

/// A JSON body.
#[derive(Debug)]
pub struct ApiJson<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequest<S> for ApiJson<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, ApiError> {
        match axum::Json::<T>::from_request(req, state).await {
            Ok(axum::Json(v)) => Ok(ApiJson(v)),
            Err(rej) => Err(json_rejection(rej)),
        }
    }
}

pub fn json_rejection(rej: JsonRejection) -> ApiError {
    match rej {
        JsonRejection::MissingJsonContentType(_) => ApiError::new(
            ApiKind::UnsupportedMediaType,
            "send the body as JSON with `Content-Type: application/json`",
        ),
        JsonRejection::JsonSyntaxError(e) => ApiError::invalid(format!(
            "the body is not valid JSON: {}",
            inner(&e.body_text())
        )),
        JsonRejection::JsonDataError(e) => ApiError::invalid(format!(
            "the body does not fit this route: {}",
            inner(&e.body_text())
        )),
        JsonRejection::BytesRejection(e) if e.status() == StatusCode::PAYLOAD_TOO_LARGE => {
            ApiError::new(
                ApiKind::PayloadTooLarge,
                "the body exceeds the server's size limit",
            )
        }
        other => ApiError::invalid(format!("the body could not be read: {}", other.body_text())),
    }
}

/// axum prefixes its own explanation; keep serde's part, which names the field.
fn inner(text: &str) -> &str {
    text.split_once(": ").map_or(text, |(_, rest)| rest)
}

/// A path parameter (a memory id); a segment that is not UTF-8 is invalid input with the JSON
/// error body every refusal has.
#[derive(Debug)]
pub struct ApiPath<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned + Send> FromRequestParts<S> for ApiPath<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        match axum::extract::Path::<T>::from_request_parts(parts, state).await {
            Ok(axum::extract::Path(v)) => Ok(ApiPath(v)),
            Err(e) => Err(ApiError::invalid(format!(
                "bad path parameter: {}",
                e.body_text()
            ))),
        }
    }
}

/// Query-string parameters.
#[derive(Debug)]
pub struct ApiQuery<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequestParts<S> for ApiQuery<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        match axum::extract::Query::<T>::from_request_parts(parts, state).await {
            Ok(axum::extract::Query(v)) => Ok(ApiQuery(v)),
            Err(QueryRejection::FailedToDeserializeQueryString(e)) => Err(ApiError::invalid(
                format!("bad query parameters: {}", inner(&e.body_text())),
            )),
            Err(e) => Err(ApiError::invalid(format!(
                "bad query parameters: {}",
                e.body_text()
            ))),
        }
    }
}
