//! [`mnemo_core::IdempotencyWriter`] on SQLite: outcomes stored under an add's idempotency key
//! (the `idempotency` table), read back for a retry and written once per new key.

use crate::codec::*;
use crate::write::Writer;
use crate::SqliteStore;
use mnemo_core::*;
use rusqlite::{params, Connection, OptionalExtension};

impl SqliteStore {
    /// The outcome stored under an idempotency key of `scope`: `None` when the key is new,
    /// the outcome (`replayed`) for the same request, a conflict for a different one.
    pub(crate) fn stored_outcome(
        tx: &Connection,
        scope: &Scope,
        idem: &Idempotency,
    ) -> Result<Option<AddOutcome>> {
        let row: Option<(String, String)> = tx
            .query_row_cached(
                "SELECT request_hash, outcome FROM idempotency WHERE scope_key = ?1 AND key = ?2",
                params![scope.key(), idem.key],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .optional()
            .map_err(sql_err)?;
        row.map(|(hash, outcome)| {
            idem.replay(&hash, || {
                serde_json::from_str(&outcome).map_err(Error::storage)
            })
        })
        .transpose()
    }
}

impl IdempotencyWriter for Writer<'_, '_> {
    fn stored_outcome(&mut self, scope: &Scope, idem: &Idempotency) -> Result<Option<AddOutcome>> {
        SqliteStore::stored_outcome(self.tx, scope, idem)
    }

    fn store_outcome(&mut self, r: &IdempotencyRecord) -> Result<()> {
        let outcome = serde_json::to_string(&r.outcome).map_err(Error::internal)?;
        self.tx.execute_cached(
            "INSERT INTO idempotency (scope_key, key, request_hash, outcome, created_at) VALUES (?1, ?2, ?3, ?4, ?5)",
            params![r.scope_key, r.key, r.request_hash, outcome, r.created_at.timestamp_millis()],
        )
        .map_err(sql_err)?;
        Ok(())
    }
}
