//! The API key table (`api_keys`, schema v6) and the reader of the `keys.db` file that held
//! keys before they moved into the store.
//!
//! Writes go through the writer connection, lookups through a pooled reader: a reader sees
//! every transaction committed before it starts, so a key created or revoked by another
//! process on the same file is seen by the next lookup.

use crate::codec::{from_ms, sql_err};
use crate::SqliteStore;
use mnemo_core::{ApiKeyRecord, ApiKeyStore, Error, Result, Timestamp};
use rusqlite::{params, OpenFlags, OptionalExtension, Row};
use std::path::Path;

const COLS: &str = "id, hash, name, admin, user_id, agent_id, run_id, created_at, revoked_at";

fn key_from_row(r: &Row<'_>) -> rusqlite::Result<ApiKeyRecord> {
    Ok(ApiKeyRecord {
        id: r.get(0)?,
        hash: r.get(1)?,
        name: r.get(2)?,
        admin: r.get(3)?,
        user_id: r.get(4)?,
        agent_id: r.get(5)?,
        run_id: r.get(6)?,
        created_at: from_ms(r.get(7)?),
        revoked_at: r.get::<_, Option<i64>>(8)?.map(from_ms),
    })
}

impl ApiKeyStore for SqliteStore {
    fn insert_key(&self, key: &ApiKeyRecord) -> Result<()> {
        let conn = self.writer.lock();
        let taken: Option<String> = conn
            .query_row(
                "SELECT id FROM api_keys WHERE id = ?1 OR hash = ?2",
                params![key.id, key.hash],
                |r| r.get(0),
            )
            .optional()
            .map_err(sql_err)?;
        if let Some(id) = taken {
            return Err(Error::Conflict {
                reason: format!("an API key with the id or hash of {} exists ({id})", key.id),
            });
        }
        conn.execute(
            &format!("INSERT INTO api_keys ({COLS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)"),
            params![
                key.id,
                key.hash,
                key.name,
                key.admin,
                key.user_id,
                key.agent_id,
                key.run_id,
                key.created_at.timestamp_millis(),
                key.revoked_at.map(|t| t.timestamp_millis()),
            ],
        )
        .map_err(sql_err)?;
        Ok(())
    }

    fn key_by_hash(&self, hash: &str) -> Result<Option<ApiKeyRecord>> {
        self.read(|c| {
            c.prepare_cached(&format!("SELECT {COLS} FROM api_keys WHERE hash = ?1"))
                .map_err(sql_err)?
                .query_row([hash], key_from_row)
                .optional()
                .map_err(sql_err)
        })
    }

    fn list_keys(&self) -> Result<Vec<ApiKeyRecord>> {
        self.read(|c| {
            let mut stmt = c
                .prepare(&format!(
                    "SELECT {COLS} FROM api_keys ORDER BY created_at, id"
                ))
                .map_err(sql_err)?;
            let rows = stmt.query_map([], key_from_row).map_err(sql_err)?;
            rows.collect::<rusqlite::Result<_>>().map_err(sql_err)
        })
    }

    fn revoke_key(&self, id: &str, at: Timestamp) -> Result<()> {
        let n = self
            .writer
            .lock()
            .execute(
                "UPDATE api_keys SET revoked_at = ?2 WHERE id = ?1 AND revoked_at IS NULL",
                params![id, at.timestamp_millis()],
            )
            .map_err(sql_err)?;
        if n == 0 {
            return Err(Error::not_found("api key", id));
        }
        Ok(())
    }
}

/// The keys of a `keys.db` file written by mnemo before keys lived in the store (times there
/// are RFC 3339 text). Opened read-only; the file is never changed.
pub fn legacy_keys(path: &Path) -> Result<Vec<ApiKeyRecord>> {
    let conn = rusqlite::Connection::open_with_flags(path, OpenFlags::SQLITE_OPEN_READ_ONLY)
        .map_err(sql_err)?;
    let time = |raw: Option<String>| -> rusqlite::Result<Option<Timestamp>> {
        raw.map(|s| {
            chrono::DateTime::parse_from_rfc3339(&s)
                .map(|t| t.with_timezone(&chrono::Utc))
                .map_err(|e| {
                    rusqlite::Error::FromSqlConversionFailure(
                        7,
                        rusqlite::types::Type::Text,
                        Box::new(e),
                    )
                })
        })
        .transpose()
    };
    let mut stmt = conn
        .prepare(&format!(
            "SELECT {COLS} FROM api_keys ORDER BY created_at, id"
        ))
        .map_err(sql_err)?;
    let rows = stmt
        .query_map([], |r| {
            Ok(ApiKeyRecord {
                id: r.get(0)?,
                hash: r.get(1)?,
                name: r.get(2)?,
                admin: r.get(3)?,
                user_id: r.get(4)?,
                agent_id: r.get(5)?,
                run_id: r.get(6)?,
                created_at: time(r.get(7)?)?.unwrap_or_default(),
                revoked_at: time(r.get(8)?)?,
            })
        })
        .map_err(sql_err)?;
    rows.collect::<rusqlite::Result<_>>().map_err(sql_err)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(id: &str, hash: &str) -> ApiKeyRecord {
        ApiKeyRecord {
            id: id.into(),
            hash: hash.into(),
            name: Some("app".into()),
            admin: false,
            user_id: Some("alice".into()),
            agent_id: None,
            run_id: None,
            created_at: from_ms(1_700_000_000_123),
            revoked_at: None,
        }
    }

    #[test]
    fn keys_round_trip_conflict_and_revoke() {
        let dir = tempfile::tempdir().unwrap();
        let store = SqliteStore::open(dir.path().join("mnemo.db")).unwrap();
        let k = key("key_1", "h1");
        store.insert_key(&k).unwrap();
        assert_eq!(store.key_by_hash("h1").unwrap(), Some(k.clone()));
        assert_eq!(store.key_by_hash("h2").unwrap(), None);
        let dup = store.insert_key(&key("key_2", "h1")).unwrap_err();
        assert_eq!(dup.kind(), mnemo_core::ErrorKind::Conflict);
        let at = from_ms(1_700_000_100_000);
        store.revoke_key("key_1", at).unwrap();
        assert_eq!(
            store.key_by_hash("h1").unwrap().unwrap().revoked_at,
            Some(at)
        );
        let again = store.revoke_key("key_1", at).unwrap_err();
        assert_eq!(again.kind(), mnemo_core::ErrorKind::NotFound);
        assert_eq!(store.list_keys().unwrap().len(), 1);
        // Keys are the server's, not the memories': a reset keeps them.
        mnemo_core::Admin::reset(&store).unwrap();
        assert_eq!(store.list_keys().unwrap().len(), 1);
    }

    #[test]
    fn a_legacy_keys_file_is_read_with_its_times() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("keys.db");
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.execute_batch(
            "CREATE TABLE api_keys (id TEXT PRIMARY KEY, hash TEXT NOT NULL UNIQUE, name TEXT,
                 admin INTEGER NOT NULL, user_id TEXT, agent_id TEXT, run_id TEXT,
                 created_at TEXT NOT NULL, revoked_at TEXT);
             INSERT INTO api_keys VALUES ('key_a', 'ha', NULL, 1, NULL, NULL, NULL,
                 '2026-01-02T03:04:05.678+00:00', NULL);
             INSERT INTO api_keys VALUES ('key_b', 'hb', 'x', 0, 'bob', NULL, NULL,
                 '2026-01-03T00:00:00+00:00', '2026-01-04T00:00:00+00:00');",
        )
        .unwrap();
        drop(conn);
        let keys = legacy_keys(&path).unwrap();
        assert_eq!(keys.len(), 2);
        assert!(keys[0].admin && keys[0].is_active());
        assert_eq!(keys[0].created_at.timestamp_millis() % 1000, 678);
        assert_eq!(keys[1].user_id.as_deref(), Some("bob"));
        assert!(!keys[1].is_active());
    }
}
