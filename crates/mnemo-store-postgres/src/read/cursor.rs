//! List cursors that reveal nothing about the store. A position is a `memories.seq`, which
//! counts every insert of the database, so it is masked with a keyed hash of the scope and sealed
//! with a tag: a cursor is only good for the scope that got it, and a changed or foreign one is
//! invalid input. The key is random per store and kept in `mnemo_meta` (`cursor_key`), so
//! cursors survive restarts and are shared by every server on the database.

use crate::pg_err;
use mnemo_core::{Error, Result, Scope};
use sha2::{Digest, Sha256};

pub(crate) struct Cursors {
    key: [u8; 32],
}

impl Cursors {
    /// The store's key, made on first use. Two servers starting together agree on it: the
    /// first insert wins and both read the winner back.
    pub(crate) fn load(c: &mut postgres::Client) -> Result<Self> {
        let fresh = {
            use rand::RngCore;
            let mut b = [0u8; 32];
            rand::rng().fill_bytes(&mut b);
            hex::encode(b)
        };
        c.execute(
            "INSERT INTO mnemo_meta (key, value) VALUES ('cursor_key', $1) ON CONFLICT (key) DO NOTHING",
            &[&fresh],
        )
        .map_err(pg_err)?;
        let stored: String = c
            .query_one("SELECT value FROM mnemo_meta WHERE key = 'cursor_key'", &[])
            .map_err(pg_err)?
            .get(0);
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

    pub(crate) fn encode(&self, scope: &Scope, seq: i64) -> String {
        let masked = (seq as u64) ^ self.mask(scope);
        format!("c2.{masked:016x}{}", self.tag(scope, seq))
    }

    pub(crate) fn decode(&self, scope: &Scope, raw: &str) -> Result<i64> {
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
