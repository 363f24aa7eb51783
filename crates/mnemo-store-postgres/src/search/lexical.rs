//! Lexical candidates from PostgreSQL's own full-text search: the generated `lexical` column
//! (`to_tsvector('english', COALESCE(index_text, text))`, NULL for a deleted memory) and its GIN
//! index find the memories matching any query word, and BM25 is computed in SQL from the
//! matches' tsvectors: `Σ idf · tf·(k1+1) / (tf + k1·(1 − b + b·dl/avgdl))`, `k1 = 1.2`,
//! `b = 0.75`, `idf = ln(1 + (N − df + 0.5)/(df + 0.5))` — the formula and constants of the
//! embedded store's index (and of FTS5's `bm25()`). Scores are positive, larger is better.
//!
//! How it differs from the embedded store's BM25:
//! - Words: PostgreSQL's `english` configuration (its parser, the Snowball English stemmer and
//!   its stop-word list) instead of `mnemo_core::text::words` and Porter2. Stop words ("the",
//!   "in") neither match nor count toward a document's length; the parser keeps hyphenated
//!   words whole beside their parts, and e-mail addresses, host names and URLs as tokens.
//! - Term frequency is the number of positions the tsvector keeps for the word: PostgreSQL keeps
//!   at most 256 per word and a tsvector holds at most 1 MB, where the embedded store counts
//!   every occurrence among a document's first `MAX_INDEXED_TOKENS` words.
//! - `N` and `df` are counted over the query's own candidates (scope, visibility, kinds and
//!   filter), not over the whole store: one tenant's vocabulary does not weigh another's words,
//!   and the same memory may score differently under different filters.
//! - `avgdl` is the mean length of the matching documents, not of every document: reading every
//!   length would scan the scope on each query.
//!
//! Cost: one GIN lookup for the matches, one pass over their tsvectors, and one count of the
//! candidate set (`N`), which is linear in the scope's size.

use super::candidate_pred;
use crate::{pg_err, PgStore};
use mnemo_core::*;

/// BM25's term-frequency saturation and length normalisation (as the embedded store).
const K1: f64 = 1.2;
const B: f64 = 0.75;

/// More distinct query words than this are cut: each one costs a posting-list read.
const MAX_TERMS: usize = 256;

impl PgStore {
    pub(crate) fn lexical(
        &self,
        q: &CandidateQuery<'_>,
        terms: &[String],
    ) -> Result<Vec<Candidate>> {
        q.scope.validate()?;
        let mut words: Vec<&str> = terms.iter().map(String::as_str).collect();
        words.sort_unstable();
        words.dedup();
        words.truncate(MAX_TERMS);
        if words.is_empty() || q.limit == 0 {
            return Ok(Vec::new());
        }
        let mut p = candidate_pred(q)?;
        let pred = p.where_sql().to_string();
        let terms = p.arg(words.iter().map(|w| w.to_string()).collect::<Vec<_>>());
        let limit = p.arg(q.limit as i64);
        // The query's lexemes are quoted into a tsquery literal (doubling quotes and
        // backslashes), so no word is read as tsquery syntax and none is stemmed twice.
        let sql = format!(
            r#"WITH ql AS (
                SELECT array_agg(DISTINCT u.lexeme) AS lx
                FROM unnest(to_tsvector('english', array_to_string({terms}::text[], ' '))) u
            ), tq AS (
                SELECT string_agg('''' || replace(replace(l, '\', '\\'), '''', '''''') || '''', ' | ')::tsquery AS q
                FROM ql, unnest(ql.lx) l
            ), hits AS MATERIALIZED (
                SELECT m.seq, m.lexical FROM memories m
                WHERE m.lexical @@ (SELECT q FROM tq) AND {pred}
            ), tf AS (
                SELECT h.seq, u.lexeme, GREATEST(cardinality(u.positions), 1)::float8 AS tf
                FROM hits h CROSS JOIN ql, unnest(h.lexical) u
                WHERE u.lexeme = ANY(ql.lx)
            ), dl AS (
                SELECT h.seq, (SELECT sum(GREATEST(cardinality(u.positions), 1))
                               FROM unnest(h.lexical) u)::float8 AS dl
                FROM hits h
            ), df AS (
                SELECT lexeme, count(*)::float8 AS df FROM tf GROUP BY lexeme
            ), stats AS (
                SELECT (SELECT count(*) FROM memories m
                        WHERE m.lexical IS NOT NULL AND {pred})::float8 AS n,
                       (SELECT GREATEST(avg(dl), 1) FROM dl) AS avgdl
            )
            SELECT tf.seq,
                   sum(ln(1 + (s.n - df.df + 0.5) / (df.df + 0.5)) * tf.tf * {k1p1}
                       / (tf.tf + {K1} * (1 - {B} + {B} * dl.dl / s.avgdl)))::float8 AS score
            FROM tf JOIN df USING (lexeme) JOIN dl USING (seq) CROSS JOIN stats s
            GROUP BY tf.seq
            ORDER BY score DESC, tf.seq
            LIMIT {limit}"#,
            k1p1 = K1 + 1.0,
        );
        self.with(|c| {
            let rows = c.query(&sql, &p.params()).map_err(pg_err)?;
            Ok(rows
                .iter()
                .map(|r| Candidate {
                    key: r.get(0),
                    score: r.get::<_, f64>(1) as f32,
                })
                .collect())
        })
    }
}
