//! The read half of the store: get, list, history, candidates for search, export and checks.
//! Every query builds its WHERE clause from `predicate`, so scope and visibility are uniform.

use crate::codec::*;
use crate::predicate::{self, Pred};
use crate::SqliteStore;
use mnemo_core::*;
use rusqlite::types::Value as Sql;
use rusqlite::{params_from_iter, Connection, OptionalExtension};
use std::collections::{HashMap, HashSet};

pub(crate) fn sources_of(
    conn: &Connection,
    ids: &[MemoryId],
) -> Result<HashMap<MemoryId, Vec<MessageId>>> {
    let mut out: HashMap<MemoryId, Vec<MessageId>> = HashMap::new();
    if ids.is_empty() {
        return Ok(out);
    }
    let marks = predicate::marks(ids.len());
    let sql = format!(
        "SELECT s.memory_id, s.message_id FROM memory_sources s LEFT JOIN messages g ON g.id = s.message_id \
         WHERE s.memory_id IN ({marks}) ORDER BY s.memory_id, g.seq"
    );
    let mut stmt = conn.prepare_cached(&sql).map_err(sql_err)?;
    let mut rows = stmt
        .query(params_from_iter(ids.iter().map(|i| i.to_string())))
        .map_err(sql_err)?;
    while let Some(r) = rows.next().map_err(sql_err)? {
        let m: String = r.get(0).map_err(sql_err)?;
        let g: String = r.get(1).map_err(sql_err)?;
        out.entry(MemoryId::parse(&m)?)
            .or_default()
            .push(MessageId::parse(&g)?);
    }
    Ok(out)
}

pub(crate) fn with_sources(
    conn: &Connection,
    mut rows: Vec<(i64, Memory)>,
) -> Result<Vec<(i64, Memory)>> {
    let ids: Vec<MemoryId> = rows.iter().map(|(_, m)| m.id).collect();
    let mut sources = sources_of(conn, &ids)?;
    for (_, m) in &mut rows {
        m.sources = sources.remove(&m.id).unwrap_or_default();
    }
    Ok(rows)
}

pub(crate) fn query_memories(
    conn: &Connection,
    where_sql: &str,
    tail: &str,
    params: &[Sql],
) -> Result<Vec<(i64, Memory)>> {
    let sql = format!("SELECT {MEMORY_COLS} FROM memories m WHERE {where_sql} {tail}");
    let mut stmt = conn.prepare_cached(&sql).map_err(sql_err)?;
    let rows = stmt
        .query_map(params_from_iter(params.iter()), memory_from_row)
        .map_err(sql_err)?;
    rows.collect::<rusqlite::Result<Vec<_>>>().map_err(sql_err)
}

/// Scope, visibility, kinds and filter for a candidate query.
pub(crate) fn candidate_pred(q: &CandidateQuery<'_>) -> Result<Pred> {
    candidate_pred_with(q, false)
}

/// `by_key`: the rows are reached through another table's index (keys, entity links), so the
/// scope test must not tempt SQLite into scanning the whole scope instead.
pub(crate) fn candidate_pred_with(q: &CandidateQuery<'_>, by_key: bool) -> Result<Pred> {
    let mut p = Pred::default();
    if by_key {
        predicate::scope_unindexed(&mut p, "m", q.scope);
    } else {
        predicate::scope(&mut p, "m", q.scope);
    }
    predicate::visibility(&mut p, "m", &q.read);
    predicate::kinds(&mut p, "m", q.kinds);
    if let Some(f) = q.filter {
        predicate::filter(&mut p, "m", f)?;
    }
    Ok(p)
}

/// How the derived indexes apply a candidate query's predicate.
pub(crate) enum Prefilter<F> {
    Nothing,
    All,
    Keep(F),
}

/// The list cursor codec ([`mnemo_core::CursorCodec`]) with this store's key: random per store,
/// kept in `meta` so cursors survive restarts.
pub(crate) use mnemo_core::CursorCodec as Cursors;

/// The store's cursor codec, its key made on first use.
pub(crate) fn load_cursors(conn: &Connection) -> Result<Cursors> {
    let fresh = {
        use rand::RngCore;
        let mut b = [0u8; 32];
        rand::rng().fill_bytes(&mut b);
        hex::encode(b)
    };
    // Read-only handles (a second process) find the key already there.
    let _ = conn.execute(
        "INSERT OR IGNORE INTO meta (key, value) VALUES ('cursor_key', ?1)",
        [&fresh],
    );
    let stored: Option<String> = conn
        .query_row("SELECT value FROM meta WHERE key = 'cursor_key'", [], |r| {
            r.get(0)
        })
        .optional()
        .map_err(sql_err)?;
    Cursors::from_hex(&stored.unwrap_or(fresh))
}

/// FTS5 query: each term quoted (so no term is read as syntax), any term may match.
fn fts_query(terms: &[String]) -> String {
    terms
        .iter()
        .map(|t| format!("\"{}\"", t.replace('"', "\"\"")))
        .collect::<Vec<_>>()
        .join(" OR ")
}

impl SqliteStore {
    /// Every key the candidate predicate admits (scope, visibility, kinds, filter), in SQL.
    pub(crate) fn allowed_keys(conn: &Connection, q: &CandidateQuery<'_>) -> Result<Vec<i64>> {
        let p = candidate_pred(q)?;
        let sql = format!("SELECT m.seq FROM memories m WHERE {}", p.where_sql());
        let mut stmt = conn.prepare_cached(&sql).map_err(sql_err)?;
        let rows = stmt
            .query_map(params_from_iter(p.params.iter()), |r| r.get(0))
            .map_err(sql_err)?;
        rows.collect::<rusqlite::Result<Vec<i64>>>()
            .map_err(sql_err)
    }

    /// Decides how the derived indexes apply the candidate predicate: not at all when the
    /// query sees every indexed entry, nothing when the scope names a part never indexed, else a
    /// closure over index keys. `allowed` is the key set a metadata filter resolved to in SQL.
    pub(crate) fn prefilter<'b, 'q: 'b>(
        ann: &'b crate::ann::Ann,
        q: &CandidateQuery<'q>,
        allowed: Option<HashSet<i64>>,
    ) -> Prefilter<impl Fn(u64) -> bool + 'b> {
        let Some(ids) = ann.scope_ids(q.scope) else {
            return Prefilter::Nothing;
        };
        let kinds = q.kinds.filter(|k| !k.is_empty());
        if allowed.is_none() && kinds.is_none() && ann.covers_all(ids) {
            // `fetch` re-checks every hit in SQL anyway.
            return Prefilter::All;
        }
        let read = q.read;
        // An as-of read needs validity times the index does not keep: its admitted keys come
        // from SQL (`allowed`), which applies the whole rule.
        let by_rule = read.as_of.is_none();
        Prefilter::Keep(move |key: u64| -> bool {
            let Some(info) = ann.info(key) else {
                return false;
            };
            info.in_scope(ids)
                && (!by_rule || read.admits(&info.validity()))
                && kinds.is_none_or(|k| k.contains(&info.kind))
                && allowed.as_ref().is_none_or(|s| s.contains(&(key as i64)))
        })
    }

    /// BM25 straight from FTS5 (before any embedder is bound, the derived index does not exist).
    pub(crate) fn lexical_fts(
        conn: &Connection,
        q: &CandidateQuery<'_>,
        terms: &[String],
    ) -> Result<Vec<Candidate>> {
        let mut p = Pred::default();
        p.push("memories_fts MATCH ?", [Sql::Text(fts_query(terms))]);
        let rest = candidate_pred(q)?;
        p.push(&rest.where_sql(), rest.params);
        let sql = format!(
            "SELECT m.seq, -bm25(memories_fts) FROM memories_fts JOIN memories m ON m.seq = memories_fts.rowid \
             WHERE {} ORDER BY bm25(memories_fts) LIMIT {}",
            p.where_sql(),
            q.limit
        );
        let mut stmt = conn.prepare_cached(&sql).map_err(sql_err)?;
        let rows = stmt
            .query_map(params_from_iter(p.params.iter()), |r| {
                Ok(Candidate {
                    key: r.get(0)?,
                    score: r.get::<_, f64>(1)? as f32,
                })
            })
            .map_err(sql_err)?;
        rows.collect::<rusqlite::Result<Vec<_>>>().map_err(sql_err)
    }
}

pub(crate) fn message_from_row_offset(r: &rusqlite::Row<'_>) -> rusqlite::Result<Message> {
    // Rows here start with `seq`; read the message columns after it.
    let role: String = r.get(6)?;
    Ok(Message {
        id: MessageId(uuid::Uuid::parse_str(&r.get::<_, String>(1)?).map_err(|e| {
            rusqlite::Error::FromSqlConversionFailure(1, rusqlite::types::Type::Text, Box::new(e))
        })?),
        user_id: r.get(2)?,
        agent_id: r.get(3)?,
        run_id: r.get(4)?,
        session_id: r.get(5)?,
        role: role.parse().map_err(|e: Error| {
            rusqlite::Error::FromSqlConversionFailure(6, rusqlite::types::Type::Text, Box::new(e))
        })?,
        name: r.get(7)?,
        content: r.get(8)?,
        created_at: from_ms(r.get(9)?),
    })
}
