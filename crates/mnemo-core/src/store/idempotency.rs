//! Idempotency of an add: the key a retry repeats ([`Idempotency`]), the rule that answers the
//! retry ([`Idempotency::replay`]) and the backend's side of it in a batch's transaction
//! ([`IdempotencyWriter`]).

use super::*;

/// Idempotency for a write: a retry with the same key and request returns the stored outcome.
#[derive(Debug, Clone)]
pub struct Idempotency {
    pub key: String,
    /// Hash of the request; the same key with a different request is a conflict.
    pub request_hash: String,
}

impl Idempotency {
    /// The answer to a retry under this key, given the request hash stored with it: the same
    /// request gets the stored outcome (`decode`d, marked `replayed`), another one is a
    /// conflict.
    pub fn replay(
        &self,
        stored_hash: &str,
        decode: impl FnOnce() -> Result<AddOutcome>,
    ) -> Result<AddOutcome> {
        if stored_hash != self.request_hash {
            return Err(crate::Error::Conflict {
                reason: format!(
                    "idempotency key {:?} was already used for a different request",
                    self.key
                ),
            });
        }
        let mut outcome = decode()?;
        outcome.replayed = true;
        Ok(outcome)
    }
}

/// The backend's side of an add's idempotency, inside the batch's transaction: the outcome a
/// key stored and the storing of a new one. [`write_batch`] asks for the first before anything
/// is written and calls the second last; both are required because only the backend knows
/// where outcomes are kept.
pub trait IdempotencyWriter {
    /// The outcome stored under `idem`'s key for `scope`, replayed through
    /// [`Idempotency::replay`]; `None` when the key is new.
    fn stored_outcome(&mut self, scope: &Scope, idem: &Idempotency) -> Result<Option<AddOutcome>>;
    /// Stores a batch's outcome under its idempotency key (a new key: the batch's scope is
    /// locked or its transactions run one at a time).
    fn store_outcome(&mut self, record: &IdempotencyRecord) -> Result<()>;
}
