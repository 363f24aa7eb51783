//! What only the web inspector needs from the service layer: the scopes a key can see with
//! their counts by kind and state, the store's statistics, and the admin key table. Each call
//! checks the caller first, like every other service operation.

use super::Service;
use crate::auth::{KeyInfo, KeyStore, NewKey, Principal, ScopeParts};
use crate::error::{ApiError, ApiResult};
use mnemo_core::{ListQuery, Memory, ReadOptions, Scope, StoreStats};
use serde::Serialize;
use std::collections::{BTreeMap, HashSet};

/// The most memories one `/v1/scopes` call tallies; past it the answer says `truncated`.
pub const SCOPE_TALLY_LIMIT: usize = 100_000;
/// Page size of the tally walk.
const TALLY_PAGE: usize = 1000;

/// One exact scope with what it holds.
#[derive(Debug, Clone, Serialize, Default)]
pub struct ScopeCounts {
    pub user_id: Option<String>,
    pub agent_id: Option<String>,
    pub run_id: Option<String>,
    /// Active, unexpired memories (what a plain list shows).
    pub active: u64,
    /// Memories by kind, any state.
    pub kinds: BTreeMap<String, u64>,
    /// Memories by state (`active`, `superseded`, `deleted`).
    pub states: BTreeMap<String, u64>,
}

/// `GET /v1/scopes`.
#[derive(Debug, Clone, Serialize)]
pub struct ScopesReport {
    pub scopes: Vec<ScopeCounts>,
    /// True when the tally stopped at [`SCOPE_TALLY_LIMIT`] memories (counts are then partial).
    pub truncated: bool,
}

/// `GET /v1/stats`.
#[derive(Debug, Clone, Serialize)]
pub struct StatsReport {
    #[serde(flatten)]
    pub store: StoreStats,
    /// Exact scopes owning active memories.
    pub scopes: u64,
}

/// An exact scope as its three optional parts (orders and compares as a map key).
type ScopeKey = (Option<String>, Option<String>, Option<String>);
/// Counts by exact scope.
type Tally = BTreeMap<ScopeKey, ScopeCounts>;

fn key_of(m: &Memory) -> ScopeKey {
    (m.user_id.clone(), m.agent_id.clone(), m.run_id.clone())
}

/// Tallies the memories (any state, expired included) under `roots`, each memory once, by its
/// exact owner. Linear in the memories visited, which [`SCOPE_TALLY_LIMIT`] bounds.
fn tally(store: &dyn mnemo_core::Store, roots: &[Scope]) -> mnemo_core::Result<(Tally, bool)> {
    let mut out = Tally::new();
    let mut seen = HashSet::new();
    for root in roots {
        let mut cursor = None;
        loop {
            let page = store.list(
                &ListQuery::new(root.clone(), TALLY_PAGE)
                    .with_cursor(cursor)
                    .with_read(ReadOptions {
                        include_expired: true,
                        include_inactive: true,
                        ..ReadOptions::default()
                    }),
            )?;
            for m in &page.results {
                if !seen.insert(m.id) {
                    continue;
                }
                if seen.len() > SCOPE_TALLY_LIMIT {
                    return Ok((out, true));
                }
                let k = key_of(m);
                let c = out.entry(k.clone()).or_insert_with(|| ScopeCounts {
                    user_id: k.0,
                    agent_id: k.1,
                    run_id: k.2,
                    ..ScopeCounts::default()
                });
                *c.kinds.entry(m.kind.as_str().to_string()).or_default() += 1;
                *c.states.entry(m.state.as_str().to_string()).or_default() += 1;
            }
            match page.next_cursor {
                Some(c) => cursor = Some(c),
                None => break,
            }
        }
    }
    Ok((out, false))
}

impl Service {
    /// The exact scopes with active memories that `p` may see, each with its active count and
    /// its memories counted by kind and by state. A bound key sees only scopes its binding
    /// covers; an admin key (or `--no-auth`) every scope.
    pub async fn scopes(&self, p: &Principal) -> ApiResult<ScopesReport> {
        self.run("scopes", p, async {
            let owners: Vec<(Scope, u64)> = self
                .memory
                .owners()
                .await?
                .into_iter()
                .filter(|(s, _)| p.may_see(s))
                .collect();
            // Walk only the outermost scopes: the inner ones are listed under them.
            let scopes: Vec<Scope> = owners.iter().map(|(s, _)| s.clone()).collect();
            let roots: Vec<Scope> = scopes
                .iter()
                .filter(|s| !scopes.iter().any(|o| o != *s && o.covers(s)))
                .cloned()
                .collect();
            let store = self.memory.store().clone();
            let (mut counts, truncated) =
                tokio::task::spawn_blocking(move || tally(store.as_ref(), &roots))
                    .await
                    .map_err(|_| ApiError::from(mnemo_core::Error::internal("tally panicked")))??;
            let mut out = Vec::with_capacity(owners.len());
            for (s, active) in owners {
                let k = (
                    s.user_id().map(|v| v.as_str().to_string()),
                    s.agent_id().map(|v| v.as_str().to_string()),
                    s.run_id().map(|v| v.as_str().to_string()),
                );
                let mut c = counts.remove(&k).unwrap_or_else(|| ScopeCounts {
                    user_id: k.0,
                    agent_id: k.1,
                    run_id: k.2,
                    ..ScopeCounts::default()
                });
                c.active = active;
                out.push(c);
            }
            Ok(ScopesReport {
                scopes: out,
                truncated,
            })
        })
        .await
    }

    /// A listing with superseded and deleted memories too (`include_inactive`): the same
    /// query as a plain list, read through the store with the inactive states admitted.
    pub(super) async fn list_any_state(
        &self,
        p: &Principal,
        req: mnemo::ListRequest,
    ) -> ApiResult<mnemo_core::Page> {
        if let Some(t) = req.as_of {
            mnemo_core::limits::check_timestamp("as_of", t)?;
        }
        let filter = match &req.filters {
            Some(f) => mnemo_core::Filter::from_json(f)?,
            None => None,
        };
        let query = ListQuery::new(req.scope, req.limit)
            .with_kinds(req.kinds)
            .with_filter(filter)
            .with_cursor(req.cursor)
            .with_read(ReadOptions {
                include_expired: req.include_expired,
                include_inactive: true,
                as_of: req.as_of,
                ..ReadOptions::default()
            });
        self.run("list", p, async {
            let store = self.memory.store().clone();
            tokio::task::spawn_blocking(move || store.list(&query))
                .await
                .map_err(|_| ApiError::from(mnemo_core::Error::internal("list panicked")))?
                .map_err(ApiError::from)
        })
        .await
    }

    /// The store's statistics (admin keys).
    pub async fn stats(&self, p: &Principal) -> ApiResult<StatsReport> {
        p.require_admin("store statistics")?;
        self.run("stats", p, async {
            let store = self.memory.store().clone();
            let stats = tokio::task::spawn_blocking(move || store.stats())
                .await
                .map_err(|_| ApiError::from(mnemo_core::Error::internal("stats panicked")))??;
            let scopes = self.memory.owners().await?.len() as u64;
            Ok(StatsReport {
                store: stats,
                scopes,
            })
        })
        .await
    }
}

/// The admin key table behind `/v1/keys`: every call needs an admin key, and a server started
/// without keys (`--no-auth`) has no table to show.
pub struct KeyAdmin<'a> {
    pub keys: Option<&'a KeyStore>,
}

impl KeyAdmin<'_> {
    fn table(&self, p: &Principal, what: &str) -> ApiResult<KeyStore> {
        p.require_admin(what)?;
        self.keys.cloned().ok_or_else(|| {
            ApiError::invalid(
                "this server runs without API keys (--no-auth); there are no keys to manage",
            )
        })
    }

    pub async fn list(&self, p: &Principal) -> ApiResult<Vec<KeyInfo>> {
        let keys = self.table(p, "listing keys")?;
        blocking(move || keys.list()).await
    }

    pub async fn create(
        &self,
        p: &Principal,
        name: Option<String>,
        admin: bool,
        bind: ScopeParts,
    ) -> ApiResult<NewKey> {
        let keys = self.table(p, "creating keys")?;
        if name.as_ref().is_some_and(|n| n.chars().count() > 200) {
            return Err(ApiError::invalid("name must be at most 200 characters"));
        }
        blocking(move || keys.create(name.as_deref(), admin, &bind)).await
    }

    pub async fn revoke(&self, p: &Principal, id: &str) -> ApiResult<()> {
        let keys = self.table(p, "revoking keys")?;
        let id = id.to_string();
        blocking(move || keys.revoke(&id)).await
    }
}

async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> ApiResult<T> + Send + 'static,
) -> ApiResult<T> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|_| ApiError::from(mnemo_core::Error::internal("key table call panicked")))?
}
