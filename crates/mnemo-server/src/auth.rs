//! API keys and what they may touch.
//!
//! A key is a random secret shown once at creation; only its SHA-256 is stored, in the
//! configured store's key table (`mnemo_core::ApiKeyStore`), so every server on one store
//! shares keys. Each key is either an admin key or bound to scope parts
//! (`user_id`, `agent_id`, `run_id`): a request may only name scopes that keep every bound part
//! (a key for user A may use any agent or run of A, never user B). Revocation takes effect on
//! the next request: keys are looked up per request, not cached.

use crate::error::{ApiError, ApiKind, ApiResult};
use chrono::Utc;
use mnemo_core::Scope;
use mnemo_core::{ApiKeyRecord, ApiKeyStore, Store};
use rand::RngCore;
use serde::Serialize;
use sha2::{Digest, Sha256};
use std::sync::Arc;

/// The scope parts a request names (any may be absent).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ScopeParts {
    pub user_id: Option<String>,
    pub agent_id: Option<String>,
    pub run_id: Option<String>,
}

impl ScopeParts {
    pub fn new(user: Option<String>, agent: Option<String>, run: Option<String>) -> Self {
        // An empty string is treated as absent, as Mem0's clients send it.
        let clean = |v: Option<String>| v.filter(|s| !s.is_empty());
        Self {
            user_id: clean(user),
            agent_id: clean(agent),
            run_id: clean(run),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.user_id.is_none() && self.agent_id.is_none() && self.run_id.is_none()
    }
}

/// Who is calling: a key's identity and what it is bound to.
#[derive(Debug, Clone, Serialize)]
pub struct Principal {
    pub key_id: String,
    pub admin: bool,
    pub user_id: Option<String>,
    pub agent_id: Option<String>,
    pub run_id: Option<String>,
}

impl Principal {
    /// The principal of a server started with `--no-auth` (loopback only).
    pub fn anonymous_admin() -> Self {
        Self {
            key_id: "anonymous".into(),
            admin: true,
            user_id: None,
            agent_id: None,
            run_id: None,
        }
    }

    fn bound(&self) -> ScopeParts {
        ScopeParts {
            user_id: self.user_id.clone(),
            agent_id: self.agent_id.clone(),
            run_id: self.run_id.clone(),
        }
    }

    /// The scope a request may use: the parts it names, with the key's bound parts filled in
    /// where it names none. Naming a different value for a bound part is `forbidden`, before any
    /// work is done. `None` when neither the request nor the key names a scope (an admin key
    /// addressing a memory by id alone).
    pub fn resolve(&self, asked: &ScopeParts) -> ApiResult<Option<Scope>> {
        let bound = self.bound();
        let pick = |what: &str, asked: &Option<String>, bound: &Option<String>| match (asked, bound)
        {
            (Some(a), Some(b)) if a.trim() != b => Err(ApiError::forbidden(format!(
                "this API key is bound to {what} {b:?} and may not use {what} {a:?}"
            ))),
            (Some(a), _) => Ok(Some(a.clone())),
            (None, b) => Ok(b.clone()),
        };
        let parts = ScopeParts {
            user_id: pick("user_id", &asked.user_id, &bound.user_id)?,
            agent_id: pick("agent_id", &asked.agent_id, &bound.agent_id)?,
            run_id: pick("run_id", &asked.run_id, &bound.run_id)?,
        };
        if parts.is_empty() {
            return Ok(None);
        }
        Ok(Some(Scope::from_parts(
            parts.user_id.as_deref(),
            parts.agent_id.as_deref(),
            parts.run_id.as_deref(),
        )?))
    }

    /// Like [`resolve`](Self::resolve), but a scope is required (searches, lists, adds).
    pub fn require_scope(&self, asked: &ScopeParts) -> ApiResult<Scope> {
        self.resolve(asked)?.ok_or_else(|| {
            ApiError::invalid("a scope is required: give at least one of user_id, agent_id, run_id")
        })
    }

    /// True when a record owned by `owner` is within what this key may touch.
    pub fn may_see(&self, owner: &Scope) -> bool {
        let ok = |bound: &Option<String>, owned: Option<&str>| {
            bound.as_deref().is_none_or(|b| owned == Some(b))
        };
        self.admin
            || (ok(&self.user_id, owner.user_id().map(|v| v.as_str()))
                && ok(&self.agent_id, owner.agent_id().map(|v| v.as_str()))
                && ok(&self.run_id, owner.run_id().map(|v| v.as_str())))
    }

    /// Store-wide operations (reset, export, import) need an admin key.
    pub fn require_admin(&self, what: &str) -> ApiResult<()> {
        if self.admin {
            Ok(())
        } else {
            Err(ApiError::forbidden(format!(
                "{what} needs an admin API key"
            )))
        }
    }
}

/// A stored key as `mnemo keys list` shows it (never the secret).
#[derive(Debug, Clone, Serialize)]
pub struct KeyInfo {
    pub id: String,
    pub name: Option<String>,
    pub admin: bool,
    pub user_id: Option<String>,
    pub agent_id: Option<String>,
    pub run_id: Option<String>,
    pub created_at: String,
    pub revoked_at: Option<String>,
}

/// A freshly created key: the secret is only ever returned here.
#[derive(Debug, Clone, Serialize)]
pub struct NewKey {
    pub key: String,
    #[serde(flatten)]
    pub info: KeyInfo,
}

/// The API keys of the store the server runs on (`mnemo_core::ApiKeyStore`): every server on
/// one store sees the same keys. Secrets are hashed here; the store only ever sees hashes.
/// Every call is blocking store I/O: async callers run it on the blocking pool.
#[derive(Clone)]
pub struct KeyStore {
    store: Arc<dyn Store>,
}

impl std::fmt::Debug for KeyStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KeyStore").finish_non_exhaustive()
    }
}

fn hash(secret: &str) -> String {
    hex::encode(Sha256::digest(secret.as_bytes()))
}

fn random_hex(bytes: usize) -> String {
    let mut buf = vec![0u8; bytes];
    rand::rng().fill_bytes(&mut buf);
    hex::encode(buf)
}

fn info_of(k: ApiKeyRecord) -> KeyInfo {
    KeyInfo {
        id: k.id,
        name: k.name,
        admin: k.admin,
        user_id: k.user_id,
        agent_id: k.agent_id,
        run_id: k.run_id,
        created_at: k.created_at.to_rfc3339(),
        revoked_at: k.revoked_at.map(|t| t.to_rfc3339()),
    }
}

impl KeyStore {
    /// The keys of `store`; fails (without I/O) when the store keeps none.
    pub fn new(store: Arc<dyn Store>) -> ApiResult<Self> {
        mnemo::key_store(store.as_ref())?;
        Ok(Self { store })
    }

    fn table(&self) -> ApiResult<&dyn ApiKeyStore> {
        Ok(mnemo::key_store(self.store.as_ref())?)
    }

    /// Creates a key. A non-admin key must be bound to at least one valid scope part.
    pub fn create(&self, name: Option<&str>, admin: bool, bind: &ScopeParts) -> ApiResult<NewKey> {
        if admin && !bind.is_empty() {
            return Err(ApiError::invalid(
                "an admin key is not bound to a scope; drop --admin or the scope flags",
            ));
        }
        if !admin {
            // Validates each part (trimmed, no inner whitespace, ≤ 128 characters).
            Scope::from_parts(
                bind.user_id.as_deref(),
                bind.agent_id.as_deref(),
                bind.run_id.as_deref(),
            )
            .map_err(|_| {
                ApiError::invalid(
                    "a key must be --admin or bound to a valid --user-id, --agent-id or --run-id",
                )
            })?;
        }
        let norm = |v: &Option<String>| v.as_ref().map(|s| s.trim().to_string());
        let key = format!("mnemo_{}", random_hex(24));
        let record = ApiKeyRecord {
            id: format!("key_{}", random_hex(6)),
            hash: hash(&key),
            name: name.map(str::to_string),
            admin,
            user_id: norm(&bind.user_id),
            agent_id: norm(&bind.agent_id),
            run_id: norm(&bind.run_id),
            created_at: Utc::now(),
            revoked_at: None,
        };
        self.table()?.insert_key(&record)?;
        Ok(NewKey {
            key,
            info: info_of(record),
        })
    }

    pub fn list(&self) -> ApiResult<Vec<KeyInfo>> {
        Ok(self
            .table()?
            .list_keys()?
            .into_iter()
            .map(info_of)
            .collect())
    }

    /// Revokes a key by id; `not_found` when there is no such active key.
    pub fn revoke(&self, id: &str) -> ApiResult<()> {
        Ok(self.table()?.revoke_key(id, Utc::now())?)
    }

    /// The principal of an active key, or `unauthenticated`. Looked up in the store on every
    /// call, so a revocation made through any server holds from the next request.
    pub fn authenticate(&self, secret: &str) -> ApiResult<Principal> {
        match self.table()?.key_by_hash(&hash(secret.trim()))? {
            Some(k) if k.is_active() => Ok(Principal {
                key_id: k.id,
                admin: k.admin,
                user_id: k.user_id,
                agent_id: k.agent_id,
                run_id: k.run_id,
            }),
            _ => Err(ApiError::new(
                ApiKind::Unauthenticated,
                "the API key is unknown or revoked",
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parts(u: Option<&str>, a: Option<&str>) -> ScopeParts {
        ScopeParts::new(u.map(Into::into), a.map(Into::into), None)
    }

    #[test]
    fn keys_are_stored_hashed_and_revocable() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("mnemo.db");
        let store = mnemo_store_sqlite::SqliteStore::open(&path).unwrap();
        let ks = KeyStore::new(Arc::new(store)).unwrap();
        let k = ks
            .create(Some("app"), false, &parts(Some("alice"), None))
            .unwrap();
        let p = ks.authenticate(&k.key).unwrap();
        assert_eq!(p.user_id.as_deref(), Some("alice"));
        assert!(!p.admin);
        let needle = k.key.as_bytes();
        for file in std::fs::read_dir(dir.path()).unwrap() {
            let raw = std::fs::read(file.unwrap().path()).unwrap();
            assert!(
                !raw.windows(needle.len()).any(|w| w == needle),
                "secret stored in clear"
            );
        }
        ks.revoke(&k.info.id).unwrap();
        assert_eq!(
            ks.authenticate(&k.key).unwrap_err().kind,
            ApiKind::Unauthenticated
        );
        assert!(ks.revoke(&k.info.id).is_err());
        assert!(ks.create(None, false, &ScopeParts::default()).is_err());
        assert!(ks.create(None, true, &parts(Some("a"), None)).is_err());
    }

    #[test]
    fn a_bound_key_fills_and_guards_its_parts() {
        let p = Principal {
            key_id: "k".into(),
            admin: false,
            user_id: Some("alice".into()),
            agent_id: None,
            run_id: None,
        };
        let s = p.resolve(&ScopeParts::default()).unwrap().unwrap();
        assert_eq!(s.user_id().unwrap().as_str(), "alice");
        let s = p.resolve(&parts(None, Some("bot"))).unwrap().unwrap();
        assert_eq!(s.agent_id().unwrap().as_str(), "bot");
        assert_eq!(s.user_id().unwrap().as_str(), "alice");
        let e = p.resolve(&parts(Some("bob"), None)).unwrap_err();
        assert_eq!(e.kind, ApiKind::Forbidden);
        assert!(p.require_admin("reset").is_err());
        assert!(Principal::anonymous_admin()
            .resolve(&ScopeParts::default())
            .unwrap()
            .is_none());
    }
}
