//! Event time on SQLite: [`Timeline`] over the `event_start`, `event_end` and `event_time`
//! columns of `memories` (schema v10), and those columns' values as every insert path writes
//! them. The range test in SQL is [`EventRange::admits`]: `event_start < to` and
//! `event_end > from`; a row without an event time has NULL ends and never matches.

use crate::codec::*;
use crate::predicate::{self, Pred};
use crate::read::{candidate_pred, query_memories, with_sources};
use crate::SqliteStore;
use mnemo_core::time::EventTime;
use mnemo_core::*;
use rusqlite::types::Value as Sql;

/// A memory's event time as its three columns (the ends for range reads, the whole as JSON),
/// written by the row's own INSERT (`write::insert_memory`): one statement per memory, not an
/// insert and then an update of the same row.
pub(crate) fn event_cols(e: Option<&EventTime>) -> (Option<i64>, Option<i64>, Option<String>) {
    match e {
        Some(e) => (
            Some(e.start.timestamp_millis()),
            Some(e.end.timestamp_millis()),
            Some(event_time_text(e)),
        ),
        None => (None, None, None),
    }
}

fn range_pred(p: &mut Pred, range: &EventRange) {
    p.and("m.event_start IS NOT NULL");
    if let Some(from) = range.from {
        p.push("m.event_end > ?", [Sql::Integer(from.timestamp_millis())]);
    }
    if let Some(to) = range.to {
        p.push("m.event_start < ?", [Sql::Integer(to.timestamp_millis())]);
    }
}

fn keys_of(conn: &rusqlite::Connection, p: &Pred, tail: &str) -> Result<Vec<i64>> {
    let sql = format!(
        "SELECT m.seq FROM memories m WHERE {} {tail}",
        p.where_sql()
    );
    let mut stmt = conn.prepare_cached(&sql).map_err(sql_err)?;
    let rows = stmt
        .query_map(rusqlite::params_from_iter(p.params.iter()), |r| r.get(0))
        .map_err(sql_err)?;
    rows.collect::<rusqlite::Result<Vec<i64>>>()
        .map_err(sql_err)
}

impl Timeline for SqliteStore {
    fn timeline(&self, q: &TimelineQuery) -> Result<Page> {
        q.validate()?;
        let after = q
            .cursor
            .as_deref()
            .map(|c| self.cursors.decode(&q.scope, c))
            .transpose()?;
        self.read(|conn| {
            let mut p = candidate_pred(&q.candidates())?;
            range_pred(&mut p, &q.range);
            if let Some(seq) = after {
                // Keyset paging on (event_start, seq); the cursor's row gives its start.
                p.push(
                    "(m.event_start, m.seq) > \
                     ((SELECT c.event_start FROM memories c WHERE c.seq = ?), ?)",
                    [Sql::Integer(seq), Sql::Integer(seq)],
                );
            }
            let tail = format!("ORDER BY m.event_start, m.seq LIMIT {}", q.limit + 1);
            let rows = with_sources(
                conn,
                query_memories(conn, &p.where_sql(), &tail, &p.params)?,
            )?;
            Ok(q.page(rows, |seq| self.cursors.encode(&q.scope, seq)))
        })
    }

    fn event_candidates(
        &self,
        query: &CandidateQuery<'_>,
        range: &EventRange,
        pooled: &[i64],
    ) -> Result<Vec<Candidate>> {
        self.read(|conn| {
            let mut base = candidate_pred(query)?;
            range_pred(&mut base, range);
            let mut keys = Vec::new();
            for chunk in pooled.chunks(10_000) {
                let mut p = Pred {
                    sql: base.sql.clone(),
                    params: base.params.clone(),
                };
                p.push(
                    &format!("m.seq IN ({})", predicate::marks(chunk.len())),
                    chunk.iter().map(|k| Sql::Integer(*k)),
                );
                keys.extend(keys_of(conn, &p, "")?);
            }
            let order = if range.from.is_none() && range.to.is_some() {
                "m.event_start DESC"
            } else {
                "m.event_start"
            };
            let more = keys_of(
                conn,
                &base,
                &format!("ORDER BY {order}, m.seq LIMIT {}", query.limit),
            )?;
            let mut seen: std::collections::HashSet<i64> = keys.iter().copied().collect();
            keys.extend(more.into_iter().filter(|k| seen.insert(*k)));
            Ok(keys
                .into_iter()
                .map(|key| Candidate { key, score: 1.0 })
                .collect())
        })
    }
}
