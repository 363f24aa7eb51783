//! Wire bodies and parameters → the library's requests: ids, kinds, messages, keyword lists
//! and link kinds parsed with errors that name the field; the add and list requests.

use super::Service;
use crate::api::{AddBody, ListParams, MessageIn};
use crate::auth::{Principal, ScopeParts};
use crate::error::{ApiError, ApiResult};
use mnemo::{AddInput, AddRequest, ListRequest};
use mnemo_core::{Content, ContentMessage, LinkKind, MemoryId, MemoryKind};

pub fn parse_id(raw: &str) -> ApiResult<MemoryId> {
    Ok(MemoryId::parse(raw)?)
}

pub(super) fn parse_kinds(raw: &[String]) -> ApiResult<Vec<MemoryKind>> {
    raw.iter()
        .map(|k| k.trim().parse::<MemoryKind>().map_err(ApiError::from))
        .collect()
}

/// Messages as a client sent them, content parts included (resolved by the library).
fn parse_messages(raw: Vec<MessageIn>) -> ApiResult<AddInput> {
    let messages = raw
        .into_iter()
        .enumerate()
        .map(|(i, m)| {
            Ok(ContentMessage {
                role: m.role.parse()?,
                content: Content::from_json(&format!("messages[{i}].content"), &m.content)?,
                name: m.name,
            })
        })
        .collect::<ApiResult<Vec<_>>>()?;
    Ok(AddInput::from_content(messages))
}

/// A keyword or tag list from a request: a JSON list of strings, else invalid input naming it.
fn string_list(field: &str, v: serde_json::Value) -> ApiResult<Vec<String>> {
    match v {
        serde_json::Value::Array(items) => items
            .into_iter()
            .map(|i| match i {
                serde_json::Value::String(s) => Ok(s),
                _ => Err(mnemo::Error::invalid(field, "must be a list of strings").into()),
            })
            .collect(),
        _ => Err(mnemo::Error::invalid(field, "must be a list of strings").into()),
    }
}

/// A link kind a caller may create (`supersedes` is written by updates only).
pub(super) fn parse_link_kind(raw: Option<&str>) -> ApiResult<LinkKind> {
    match raw.map(|k| k.parse::<LinkKind>()).transpose()? {
        None => Ok(LinkKind::Related),
        Some(LinkKind::Supersedes) => Err(mnemo::Error::invalid(
            "kind",
            "supersedes links are written by updates, not by callers",
        )
        .into()),
        Some(k) => Ok(k),
    }
}

impl Service {
    /// The server's cap on messages per add (the library's own bound is the ceiling).
    pub(super) fn check_messages(&self, n: usize, what: &str) -> ApiResult<()> {
        if n > self.max_messages {
            return Err(ApiError::invalid(format!(
                "{what} holds {n} messages; this server takes at most {} (max_messages_per_add)",
                self.max_messages
            )));
        }
        Ok(())
    }

    pub(super) fn add_request(
        &self,
        p: &Principal,
        body: AddBody,
        request_id: &str,
    ) -> ApiResult<AddRequest> {
        let scope = p.require_scope(&ScopeParts::new(body.user_id, body.agent_id, body.run_id))?;
        self.check_write(p, &scope)?;
        if let Some(m) = &body.messages {
            self.check_messages(m.len(), "an add")?;
        }
        let input = match (body.messages, body.text) {
            (Some(m), None) => parse_messages(m)?,
            (None, Some(t)) => AddInput::Text(t),
            (Some(_), Some(_)) => {
                return Err(ApiError::invalid("give `messages` or `text`, not both"))
            }
            (None, None) => {
                return Err(ApiError::invalid(
                    "give `messages` (a conversation) or `text`",
                ))
            }
        };
        let memory_type = body
            .memory_type
            .as_deref()
            .map(|k| k.parse::<MemoryKind>())
            .transpose()?;
        if self.log_content {
            tracing::info!(request_id, input = ?input, "add content");
        }
        let note = mnemo::NoteInput {
            keywords: body
                .keywords
                .map(|v| string_list("keywords", v))
                .transpose()?,
            tags: body.tags.map(|v| string_list("tags", v)).transpose()?,
            context: body.context,
        };
        Ok(AddRequest {
            scope,
            input,
            metadata: body.metadata,
            expires_at: body.expires_at,
            timestamp: body.timestamp,
            idempotency_key: body.idempotency_key,
            infer: body.infer,
            memory_type,
            instructions: body.instructions,
            session_id: body.session_id,
            request_id: Some(request_id.to_string()),
            actor: Some(format!("api-key:{}", p.key_id)),
            note,
        })
    }

    pub(super) fn list_request(p: &Principal, params: ListParams) -> ApiResult<ListRequest> {
        let scope = p.require_scope(&ScopeParts::new(
            params.user_id,
            params.agent_id,
            params.run_id,
        ))?;
        let kinds = params
            .kinds
            .as_deref()
            .map(|k| parse_kinds(&k.split(',').map(str::to_string).collect::<Vec<_>>()))
            .transpose()?;
        let filters = params
            .filters
            .as_deref()
            .map(|f| {
                serde_json::from_str::<serde_json::Value>(f)
                    .map_err(|e| ApiError::invalid(format!("filters is not JSON: {e}")))
            })
            .transpose()?;
        Ok(ListRequest {
            scope,
            kinds,
            filters,
            limit: params.limit.unwrap_or(100),
            cursor: params.cursor,
            include_expired: params.include_expired,
            as_of: params.as_of,
        })
    }
}
