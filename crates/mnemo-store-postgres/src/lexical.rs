//! Lexical candidates from maintained BM25 statistics and impact-ordered postings (schema v2,
//! kept by triggers on `memories`: see `schema.rs`), so a query's cost is bounded by the number
//! of query words and [`DEPTH`], not by the size of the store or of the words' posting lists.
//!
//! Score: BM25, `Σ idf · tf·(k1+1) / (tf + k1·(1 − b + b·dl/avgdl))`, `k1 = 1.2`, `b = 0.75`,
//! `idf = ln(1 + (N − df + 0.5)/(df + 0.5))` — the formula and constants of the embedded
//! store's index. `N`, `avgdl` and `df` are summed over the exact owners the query's scope
//! covers (one owner, or a user's agents and runs): every memory that is not deleted counts,
//! superseded and expired ones too, as in the embedded store's index; kinds and filters do not
//! change them.
//!
//! A query reads, for each query lexeme and owner, the [`DEPTH`] postings of highest impact
//! (the term-frequency part of BM25 with the owner's length normalisation at write time),
//! scores them exactly with the current statistics, keeps the best few and only then applies
//! the visibility predicate (scope, state, expiry, kinds, filter) to those. When fewer than the
//! limit pass, the depth and the kept count grow fourfold and the query runs again, until the
//! postings are read whole: a filter never silently shrinks the result.
//!
//! How it differs from the embedded store's BM25:
//! - Words: PostgreSQL's `english` configuration (its parser, the Snowball English stemmer and
//!   its stop-word list) instead of `mnemo_core::text::words` and Porter2. Stop words neither
//!   match nor count toward a document's length; the parser keeps hyphenated words whole beside
//!   their parts, and e-mail addresses, host names and URLs as tokens.
//! - Term frequency is the number of positions the tsvector keeps for the word (at most 256).
//! - Statistics are per owner, not per store: one tenant's vocabulary never weighs another's.
//! - A document that holds several query words, none of them among the top [`DEPTH`] postings
//!   of its word, is not found while the result fills from the others: the ranking is exact
//!   for words with at most [`DEPTH`] postings in the scope, approximate beyond.

use crate::pg_err;
use crate::pool::Conn;
use crate::search::candidate_pred;
use mnemo_core::*;

/// BM25's term-frequency saturation and length normalisation (as the embedded store; the
/// write-time impact in `schema.rs` uses the same values).
const K1: f64 = 1.2;
const B: f64 = 0.75;

/// More distinct query words than this are cut: each one costs a posting-list read.
pub(crate) const MAX_TERMS: usize = 256;

/// Postings read per query lexeme and owner on the first try.
pub(crate) const DEPTH: i64 = 200;

/// Scored memories checked against the visibility predicate on the first try, as a multiple of
/// the limit (at least 64).
pub(crate) const KEEP_FACTOR: i64 = 4;

/// How far the query's postings reach: the largest posting list of one lexeme and owner, and
/// the postings of all its lexemes together (a try that read that deep read them whole).
pub(crate) struct Reach {
    pub(crate) max_df: i64,
    pub(crate) sum_df: i64,
}

/// The best `q.limit` candidates among the `keep` best-scored memories found in the top
/// `depth` postings of each lexeme and owner, and the query's [`Reach`]; one statement, which
/// reads the statistics of the query's lexemes over the owners `q.scope` covers too.
pub(crate) fn ranked(
    c: &mut Conn,
    q: &CandidateQuery<'_>,
    words: &[String],
    depth: i64,
    keep: i64,
) -> Result<(Vec<Candidate>, Reach)> {
    let mut p = candidate_pred(q)?;
    let pred = p.take_sql();
    crate::predicate::scope(&mut p, "s", q.scope);
    let scope = p.take_sql();
    let terms = p.arg(words.to_vec());
    let depth = p.arg(depth);
    let keep = p.arg(keep);
    let limit = p.arg(q.limit as i64);
    // `st`: df per query lexeme summed over the owners; `ql`: each lexeme's idf, with `avgdl`
    // over the same owners. The last row (no key) carries the reach.
    let sql = format!(
        r#"WITH sc AS (
            SELECT s.scope_key, s.docs, s.total_len FROM lexical_scopes s WHERE {scope}
        ), n AS (
            SELECT COALESCE(sum(docs), 0)::float8 AS docs, COALESCE(sum(total_len), 0)::float8 AS len
            FROM sc
        ), words AS (
            SELECT DISTINCT u.lexeme
            FROM unnest(to_tsvector('english', array_to_string({terms}::text[], ' '))) u
        ), st AS (
            SELECT t.lexeme, sum(t.df)::float8 AS df, max(t.df) AS max_df
            FROM lexical_terms t JOIN sc USING (scope_key) JOIN words USING (lexeme)
            GROUP BY t.lexeme
        ), ql AS (
            SELECT st.lexeme, ln(1 + (n.docs - st.df + 0.5) / (st.df + 0.5)) AS idf,
                   greatest(n.len / greatest(n.docs, 1), 1) AS avgdl
            FROM st CROSS JOIN n
        ), hits AS (
            SELECT p.seq, ql.idf * p.tf * {k1p1} / (p.tf + {K1} * ({one_b} + {B} * p.dl / ql.avgdl)) AS w
            FROM sc CROSS JOIN ql CROSS JOIN LATERAL (
                SELECT p.seq, p.tf, p.dl FROM lexical_postings p
                WHERE p.scope_key = sc.scope_key AND p.lexeme = ql.lexeme
                ORDER BY p.impact DESC, p.seq LIMIT {depth}
            ) p
        ), best AS (
            SELECT seq, sum(w) AS score FROM hits GROUP BY seq ORDER BY score DESC, seq LIMIT {keep}
        ), found AS (
            SELECT b.seq, b.score::float8 AS score FROM best b JOIN memories m ON m.seq = b.seq
            WHERE {pred}
            ORDER BY b.score DESC, b.seq
            LIMIT {limit}
        )
        SELECT seq, score, NULL::bigint, NULL::bigint FROM found
        UNION ALL
        SELECT NULL, NULL, COALESCE(max(max_df), 0)::bigint, COALESCE(sum(df), 0)::bigint FROM st"#,
        k1p1 = K1 + 1.0,
        one_b = 1.0 - B,
    );
    let rows = c.query(&sql, &p.params()).map_err(pg_err)?;
    let mut reach = Reach {
        max_df: 0,
        sum_df: 0,
    };
    let mut found = Vec::with_capacity(rows.len());
    for r in &rows {
        match r.get::<_, Option<i64>>(0) {
            Some(key) => found.push(Candidate {
                key,
                score: r.get::<_, f64>(1) as f32,
            }),
            None => {
                reach = Reach {
                    max_df: r.get(2),
                    sum_df: r.get(3),
                }
            }
        }
    }
    Ok((crate::search::ranked(found), reach))
}
