//! Where the list cursor key lives: random per store and kept in `mnemo_meta` (`cursor_key`), so
//! cursors survive restarts and are shared by every server on the database. The codec itself
//! (a masked `memories.seq` sealed with a tag) is [`mnemo_core::CursorCodec`].

use crate::pg_err;
use mnemo_core::{CursorCodec, Result};

/// The store's cursor codec, its key made on first use. Two servers starting together agree on
/// it: the first insert wins and both read the winner back.
pub(crate) fn load(c: &mut postgres::Client) -> Result<CursorCodec> {
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
    let row = c
        .query_one("SELECT value FROM mnemo_meta WHERE key = 'cursor_key'", &[])
        .map_err(pg_err)?;
    let stored: String = crate::codec::col(&row, "value")?;
    CursorCodec::from_hex(&stored)
}
