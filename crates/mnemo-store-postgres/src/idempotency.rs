//! [`mnemo_core::IdempotencyWriter`] on PostgreSQL: outcomes stored under an add's idempotency
//! key (the `idempotency` table), read back for a retry and written once per new key.

use crate::codec::ms;
use crate::pg_err;
use crate::write::Writer;
use mnemo_core::*;
use postgres::GenericClient;

/// The outcome stored under an idempotency key of `scope`: `None` when the key is new, the
/// outcome (`replayed`) for the same request, a conflict for a different one.
pub(crate) fn stored_outcome_in(
    c: &mut impl GenericClient,
    scope: &Scope,
    idem: &Idempotency,
) -> Result<Option<AddOutcome>> {
    let row = c
        .query_opt(
            "SELECT request_hash, outcome FROM idempotency WHERE scope_key = $1 AND key = $2",
            &[&scope.key(), &idem.key],
        )
        .map_err(pg_err)?;
    row.map(|r| {
        idem.replay(&r.get::<_, String>(0), || {
            serde_json::from_value(r.get::<_, serde_json::Value>(1)).map_err(Error::storage)
        })
    })
    .transpose()
}

impl IdempotencyWriter for Writer<'_, '_> {
    fn stored_outcome(&mut self, scope: &Scope, idem: &Idempotency) -> Result<Option<AddOutcome>> {
        stored_outcome_in(self.tx, scope, idem)
    }

    fn store_outcome(&mut self, r: &IdempotencyRecord) -> Result<()> {
        self.tx
            .execute(
                "INSERT INTO idempotency (scope_key, key, request_hash, outcome, created_at) \
                 VALUES ($1, $2, $3, $4, $5)",
                &[
                    &r.scope_key,
                    &r.key,
                    &r.request_hash,
                    &r.outcome,
                    &ms(r.created_at),
                ],
            )
            .map_err(pg_err)?;
        Ok(())
    }
}
