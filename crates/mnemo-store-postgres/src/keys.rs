//! The API key table (`api_keys`, schema v1): the keys every server in front of this database
//! authenticates against. Each call is one statement on a pooled connection, so a key created
//! or revoked through one server is seen by every other on its next lookup.

use crate::{pg_err, PgStore};
use chrono::{DateTime, TimeZone, Utc};
use mnemo_core::{ApiKeyRecord, ApiKeyStore, Error, Result, Timestamp};

const COLS: &str = "id, hash, name, admin, user_id, agent_id, run_id, created_at, revoked_at";

fn from_ms(ms: i64) -> Timestamp {
    Utc.timestamp_millis_opt(ms)
        .single()
        .unwrap_or(DateTime::<Utc>::MIN_UTC)
}

fn key_from_row(r: &postgres::Row) -> ApiKeyRecord {
    ApiKeyRecord {
        id: r.get(0),
        hash: r.get(1),
        name: r.get(2),
        admin: r.get(3),
        user_id: r.get(4),
        agent_id: r.get(5),
        run_id: r.get(6),
        created_at: from_ms(r.get(7)),
        revoked_at: r.get::<_, Option<i64>>(8).map(from_ms),
    }
}

impl ApiKeyStore for PgStore {
    fn insert_key(&self, key: &ApiKeyRecord) -> Result<()> {
        // `ON CONFLICT DO NOTHING` covers both unique columns (id and hash) without an error
        // that would abort the transaction; no row written means the key was taken.
        let n = self.with(|c| {
            c.execute(
                &format!(
                    "INSERT INTO api_keys ({COLS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) \
                     ON CONFLICT DO NOTHING"
                ),
                &[
                    &key.id,
                    &key.hash,
                    &key.name,
                    &key.admin,
                    &key.user_id,
                    &key.agent_id,
                    &key.run_id,
                    &key.created_at.timestamp_millis(),
                    &key.revoked_at.map(|t| t.timestamp_millis()),
                ],
            )
            .map_err(pg_err)
        })?;
        if n == 0 {
            return Err(Error::Conflict {
                reason: format!("an API key with the id or hash of {} exists", key.id),
            });
        }
        Ok(())
    }

    fn key_by_hash(&self, hash: &str) -> Result<Option<ApiKeyRecord>> {
        self.with(|c| {
            let row = c
                .query_opt(
                    &format!("SELECT {COLS} FROM api_keys WHERE hash = $1"),
                    &[&hash],
                )
                .map_err(pg_err)?;
            Ok(row.as_ref().map(key_from_row))
        })
    }

    fn list_keys(&self) -> Result<Vec<ApiKeyRecord>> {
        self.with(|c| {
            let rows = c
                .query(
                    &format!("SELECT {COLS} FROM api_keys ORDER BY created_at, id"),
                    &[],
                )
                .map_err(pg_err)?;
            Ok(rows.iter().map(key_from_row).collect())
        })
    }

    fn revoke_key(&self, id: &str, at: Timestamp) -> Result<()> {
        let n = self.with(|c| {
            c.execute(
                "UPDATE api_keys SET revoked_at = $2 WHERE id = $1 AND revoked_at IS NULL",
                &[&id, &at.timestamp_millis()],
            )
            .map_err(pg_err)
        })?;
        if n == 0 {
            return Err(Error::not_found("api key", id));
        }
        Ok(())
    }
}
