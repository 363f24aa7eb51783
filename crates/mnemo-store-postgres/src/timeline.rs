//! Event time on PostgreSQL: [`Timeline`] over the `event_start`, `event_end` and `event_time`
//! columns of `memories` (schema v6), written by `encode::insert_memory` with the row. The
//! range test in SQL is [`EventRange::admits`]: `event_start < to` and `event_end > from`; a
//! row without an event time has NULL ends and never matches.

use crate::predicate::{self, Pred};
use crate::read::query_memories;
use crate::{pg_err, PgStore};
use mnemo_core::*;
use postgres::GenericClient;

fn range_pred(p: &mut Pred, range: &EventRange) {
    p.and("m.event_start IS NOT NULL");
    if let Some(from) = range.from {
        let a = p.arg(from.timestamp_millis());
        p.and(&format!("m.event_end > {a}"));
    }
    if let Some(to) = range.to {
        let a = p.arg(to.timestamp_millis());
        p.and(&format!("m.event_start < {a}"));
    }
}

fn keys_of(c: &mut impl GenericClient, p: &Pred, tail: &str) -> Result<Vec<i64>> {
    let sql = format!(
        "SELECT m.seq FROM memories m WHERE {} {tail}",
        p.where_sql()
    );
    let rows = c.query(&sql, &p.params()).map_err(pg_err)?;
    Ok(rows.iter().map(|r| r.get(0)).collect())
}

impl Timeline for PgStore {
    fn timeline(&self, q: &TimelineQuery) -> Result<Page> {
        q.validate()?;
        let cursors = self.cursors()?;
        let after = q
            .cursor
            .as_deref()
            .map(|c| cursors.decode(&q.scope, c))
            .transpose()?;
        self.with(|c| {
            let mut p = predicate::candidate(&q.candidates())?;
            range_pred(&mut p, &q.range);
            if let Some(seq) = after {
                // Keyset paging on (event_start, seq); the cursor's row gives its start.
                let a = p.arg(seq);
                p.and(&format!(
                    "(m.event_start, m.seq) > \
                     ((SELECT x.event_start FROM memories x WHERE x.seq = {a}), {a})"
                ));
            }
            let tail = format!("ORDER BY m.event_start, m.seq LIMIT {}", q.limit + 1);
            let rows = query_memories(c, &p, &tail)?;
            Ok(q.page(rows, |seq| cursors.encode(&q.scope, seq)))
        })
    }

    fn event_candidates(
        &self,
        query: &CandidateQuery<'_>,
        range: &EventRange,
        pooled: &[i64],
    ) -> Result<Vec<Candidate>> {
        self.with(|c| {
            let mut keys = Vec::new();
            if !pooled.is_empty() {
                let mut p = predicate::candidate(query)?;
                range_pred(&mut p, range);
                let a = p.arg(pooled.to_vec());
                p.and(&format!("m.seq = ANY({a}::bigint[])"));
                keys = keys_of(c, &p, "")?;
            }
            let mut p = predicate::candidate(query)?;
            range_pred(&mut p, range);
            let order = if range.from.is_none() && range.to.is_some() {
                "m.event_start DESC"
            } else {
                "m.event_start"
            };
            let more = keys_of(
                c,
                &p,
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
