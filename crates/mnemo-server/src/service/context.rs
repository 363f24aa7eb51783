//! Context packs for REST (`POST /v1/context`) and MCP (`get_context`): the scope comes from
//! the request and the key's binding exactly as for a search (a key bound to one user cannot
//! name another), the budget is checked here, and assembly is the library's.

use super::Service;
use crate::api::ContextBody;
use crate::auth::{Principal, ScopeParts};
use crate::error::ApiResult;
use mnemo_core::pack::{ContextOptions, ContextPack, MAX_BUDGET_TOKENS};

/// A budget from a request: any integer is accepted on the wire, so that a negative or huge
/// one gets the library's answer (invalid input naming `budget_tokens`) instead of a
/// deserialiser's; the range itself is checked by [`mnemo::ContextRequest::validate`].
pub fn budget_tokens(raw: i64) -> mnemo_core::Result<u32> {
    u32::try_from(raw).map_err(|_| {
        mnemo_core::Error::invalid(
            "budget_tokens",
            format!("must be between 1 and {MAX_BUDGET_TOKENS} (got {raw})"),
        )
    })
}

impl Service {
    /// A context pack for `body.query` under `body.budget_tokens`.
    pub async fn context(&self, p: &Principal, body: ContextBody) -> ApiResult<ContextPack> {
        let scope = p.require_scope(&ScopeParts::new(body.user_id, body.agent_id, body.run_id))?;
        let budget_tokens = budget_tokens(body.budget_tokens)?;
        if self.log_content {
            tracing::info!(query = %body.query, "context content");
        }
        let req = mnemo::ContextRequest {
            scope,
            query: body.query,
            budget_tokens,
            options: ContextOptions {
                session_id: body.session_id,
                no_profile: body.no_profile,
                no_blocks: body.no_blocks,
                memory_candidates: body.memory_candidates,
                tokenizer: body.tokenizer,
            },
        };
        self.run("context", p, async {
            let pack = self.memory.context(req).await?;
            tracing::debug!(key = %p.key_id, used = pack.used_tokens, omitted = pack.omitted, "context");
            Ok(pack)
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn budgets_a_u32_cannot_hold_name_the_field() {
        for bad in [-1, i64::MIN, i64::from(u32::MAX) + 1] {
            let e = budget_tokens(bad).unwrap_err();
            assert_eq!(e.kind(), mnemo_core::ErrorKind::InvalidInput, "{bad}");
            assert!(e.to_string().contains("budget_tokens"), "{bad}: {e}");
        }
        assert_eq!(budget_tokens(1000).unwrap(), 1000);
    }
}
