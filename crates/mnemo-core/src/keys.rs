//! API keys kept in the store, so every server in front of one store sees the same keys and
//! the same revocations.
//!
//! The store keeps records only: a key's secret never reaches it. Whoever issues keys (the
//! server) hashes the secret and stores the hash; a request is authenticated by looking its
//! hash up, per request, so a revocation written through one server is refused by every other
//! on its next request. Backends expose their key table through [`crate::SideTables::api_keys`].

use crate::memory::Timestamp;
use crate::Result;
use serde::{Deserialize, Serialize};

/// One stored API key: its identity, what it is bound to, and when it was made and revoked.
/// `hash` is the hex SHA-256 of the secret (see the server's `auth` module).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ApiKeyRecord {
    pub id: String,
    pub hash: String,
    pub name: Option<String>,
    /// An admin key may touch every scope and the store-wide operations.
    pub admin: bool,
    /// The scope parts a non-admin key is bound to (at least one is set).
    pub user_id: Option<String>,
    pub agent_id: Option<String>,
    pub run_id: Option<String>,
    pub created_at: Timestamp,
    pub revoked_at: Option<Timestamp>,
}

impl ApiKeyRecord {
    pub fn is_active(&self) -> bool {
        self.revoked_at.is_none()
    }
}

/// The key table of a store. Every method is one statement (or one transaction) against the
/// backend, never cached: callers rely on seeing other processes' changes at once.
pub trait ApiKeyStore: Send + Sync {
    /// Stores a new key. A key whose id or hash is already stored is a `conflict` and changes
    /// nothing (importing the same keys twice is therefore harmless for the caller that skips
    /// conflicts).
    fn insert_key(&self, key: &ApiKeyRecord) -> Result<()>;
    /// The key with this hash, active or revoked; `None` when there is none.
    fn key_by_hash(&self, hash: &str) -> Result<Option<ApiKeyRecord>>;
    /// Every key, oldest first (ties by id).
    fn list_keys(&self) -> Result<Vec<ApiKeyRecord>>;
    /// Marks an active key revoked at `at`; `not_found` when no active key has this id.
    fn revoke_key(&self, id: &str, at: Timestamp) -> Result<()>;
}
