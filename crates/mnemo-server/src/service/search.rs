//! Search: the body checked and turned into a [`SearchRequest`], then one hybrid search.

use super::convert::parse_kinds;
use super::Service;
use crate::api::SearchBody;
use crate::auth::{Principal, ScopeParts};
use crate::error::{ApiError, ApiResult};
use mnemo_core::{Filter, ReadOptions, SearchMode, SearchRequest};

impl Service {
    pub async fn search(
        &self,
        p: &Principal,
        body: SearchBody,
    ) -> ApiResult<mnemo::SearchResponse> {
        let scope = p.require_scope(&ScopeParts::new(body.user_id, body.agent_id, body.run_id))?;
        let kinds = body.kinds.as_deref().map(parse_kinds).transpose()?;
        let filter = match &body.filters {
            Some(f) => Filter::from_json(f)?,
            None => None,
        };
        let mode = match body.mode.as_deref() {
            None | Some("hybrid") => SearchMode::Hybrid,
            Some("dense") => SearchMode::Dense,
            Some("lexical") => SearchMode::Lexical,
            Some(other) => {
                return Err(ApiError::invalid(format!(
                    "mode {other:?} is not one of hybrid, dense, lexical"
                )))
            }
        };
        if self.log_content {
            tracing::info!(query = %body.query, "search content");
        }
        let req = SearchRequest {
            scope,
            query: body.query,
            top_k: body.top_k.unwrap_or(10),
            threshold: body.threshold,
            kinds,
            filter,
            read: ReadOptions {
                include_expired: body.include_expired,
                include_inactive: body.include_inactive,
                as_of: body.as_of,
                ..ReadOptions::default()
            },
            mode,
            expand_links: body.expand_links,
            expand_limit: body.expand_limit,
            reference_date: body.reference_date,
            temporal: None,
            graph: body.graph,
        };
        self.run("search", p, async {
            let out = self.memory.search(req).await?;
            self.metrics.observe_model(&out.usage);
            Ok(out)
        })
        .await
    }
}
