//! List cursors that reveal nothing about the store. A position is a store's row sequence
//! number, which counts every insert, so it is masked with a keyed hash of the scope and sealed
//! with a tag: a cursor is only good for the scope that got it, and a changed or foreign one is
//! invalid input. The codec is the same for every backend; each store only keeps its random
//! 32-byte key somewhere durable so cursors survive restarts.

use crate::error::{Error, Result};
use crate::scope::Scope;
use sha2::{Digest, Sha256};

/// Encodes and checks list cursors with one store's secret key.
#[derive(Clone)]
pub struct CursorCodec {
    key: [u8; 32],
}

impl std::fmt::Debug for CursorCodec {
    // The key is a secret: never printed.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("CursorCodec { .. }")
    }
}

impl CursorCodec {
    pub fn new(key: [u8; 32]) -> Self {
        Self { key }
    }

    /// The codec for a key stored as 64 hex digits; anything else is a storage error (the
    /// store's own record is damaged, not the caller's input).
    pub fn from_hex(stored: &str) -> Result<Self> {
        let raw = hex::decode(stored).map_err(|e| Error::storage(format!("cursor key: {e}")))?;
        let key: [u8; 32] = raw
            .try_into()
            .map_err(|_| Error::storage("cursor key: not 32 bytes"))?;
        Ok(Self { key })
    }

    fn digest(&self, scope: &Scope, what: &[u8]) -> [u8; 32] {
        let mut h = Sha256::new();
        h.update(self.key);
        h.update(scope.key().as_bytes());
        h.update(what);
        h.finalize().into()
    }

    fn mask(&self, scope: &Scope) -> u64 {
        let d = self.digest(scope, b"mask");
        u64::from_le_bytes([d[0], d[1], d[2], d[3], d[4], d[5], d[6], d[7]])
    }

    fn tag(&self, scope: &Scope, seq: i64) -> String {
        hex::encode(&self.digest(scope, &seq.to_le_bytes())[..6])
    }

    /// The cursor for position `seq` of `scope`.
    pub fn encode(&self, scope: &Scope, seq: i64) -> String {
        let masked = (seq as u64) ^ self.mask(scope);
        format!("c2.{masked:016x}{}", self.tag(scope, seq))
    }

    /// The position a cursor from [`Self::encode`] holds; invalid input when it was changed,
    /// made with another key or for another scope.
    pub fn decode(&self, scope: &Scope, raw: &str) -> Result<i64> {
        let bad = || Error::invalid("cursor", "not a cursor returned by list for this scope");
        let body = raw.strip_prefix("c2.").ok_or_else(bad)?;
        if body.len() != 28 || !body.is_ascii() {
            return Err(bad());
        }
        let masked = u64::from_str_radix(&body[..16], 16).map_err(|_| bad())?;
        let seq = (masked ^ self.mask(scope)) as i64;
        if body[16..] != self.tag(scope, seq) {
            return Err(bad());
        }
        Ok(seq)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scope(u: &str) -> Scope {
        Scope::user(u).unwrap()
    }

    #[test]
    fn a_cursor_round_trips_only_in_its_scope_and_key() {
        let c = CursorCodec::new([7; 32]);
        let raw = c.encode(&scope("a"), 42);
        assert_eq!(c.decode(&scope("a"), &raw).unwrap(), 42);
        assert!(c.decode(&scope("b"), &raw).is_err());
        assert!(CursorCodec::new([8; 32]).decode(&scope("a"), &raw).is_err());
        let mut tampered = raw.clone();
        tampered.replace_range(3..4, if &raw[3..4] == "0" { "1" } else { "0" });
        assert!(c.decode(&scope("a"), &tampered).is_err());
        assert!(c.decode(&scope("a"), "c2.é").is_err());
    }

    #[test]
    fn a_stored_key_must_be_32_bytes_of_hex() {
        assert!(CursorCodec::from_hex(&"ab".repeat(32)).is_ok());
        assert!(CursorCodec::from_hex("abcd").is_err());
        assert!(CursorCodec::from_hex("zz").is_err());
    }
}
