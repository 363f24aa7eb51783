//! WHERE clauses with numbered parameters: scope, the visibility rule, kinds and metadata
//! filters.
//!
//! [`visibility`] is the one place [`ReadOptions::admits`] is written in SQL for this store;
//! every read path (get, list, locate, history, candidates, fetch, linked) goes through it.
//! Filters are walked by `Filter::to_sql` (core) and mean here what they mean in the embedded
//! store; the fragments below keep that meaning: JSON types are respected (`"0012"`
//! never equals `12`, `true` never equals `1`), a missing key makes a comparison false (never
//! NULL, so `ne`, `nin` and `NOT` include records without the key), range operators compare
//! numbers with numbers and strings with strings (byte order, as SQLite does), `contains` finds
//! a substring of a string or an element of a list.

use mnemo_core::filter::{FilterDialect, Scalar};
use mnemo_core::{CandidateQuery, Filter, MemoryKind, ReadOptions, Result, Scope, Timestamp};
use postgres::types::ToSql;
use serde_json::Value;

/// A bound parameter.
pub(crate) type Param = Box<dyn ToSql + Sync + Send>;

/// A SQL condition and its parameters, numbered `$1…` in the order they were bound. A query
/// that binds more parameters of its own binds them through [`Pred::arg`] too, so the numbers
/// stay in step.
#[derive(Debug, Default)]
pub(crate) struct Pred {
    sql: String,
    params: Vec<Param>,
}

impl Pred {
    /// Binds `v` and returns its placeholder (`$n`).
    pub(crate) fn arg<T: ToSql + Sync + Send + 'static>(&mut self, v: T) -> String {
        self.params.push(Box::new(v));
        format!("${}", self.params.len())
    }

    /// Adds a condition (its placeholders bound already with [`Pred::arg`]).
    pub(crate) fn and(&mut self, sql: &str) {
        if !self.sql.is_empty() {
            self.sql.push_str(" AND ");
        }
        self.sql.push_str(sql);
    }

    /// The conditions so far, joined (`TRUE` when there is none), and a fresh start for the
    /// next ones; the parameters stay bound, so one query can use several predicates.
    pub(crate) fn take_sql(&mut self) -> String {
        let sql = self.where_sql().to_string();
        self.sql.clear();
        sql
    }

    /// The conditions joined, `TRUE` when there is none.
    pub(crate) fn where_sql(&self) -> &str {
        if self.sql.is_empty() {
            "TRUE"
        } else {
            &self.sql
        }
    }

    /// The parameters as `query` takes them.
    pub(crate) fn params(&self) -> Vec<&(dyn ToSql + Sync)> {
        self.params
            .iter()
            .map(|p| p.as_ref() as &(dyn ToSql + Sync))
            .collect()
    }
}

/// The scope parts the query sets must match (`alias` is the table alias): a scope naming only
/// a user covers that user's agent and run records too, as in the embedded store.
pub(crate) fn scope(p: &mut Pred, alias: &str, scope: &Scope) {
    let parts = [
        ("user_id", scope.user_id().map(|v| v.as_str())),
        ("agent_id", scope.agent_id().map(|v| v.as_str())),
        ("run_id", scope.run_id().map(|v| v.as_str())),
    ];
    for (column, value) in parts {
        if let Some(v) = value {
            let a = p.arg(v.to_string());
            p.and(&format!("{alias}.{column} = {a}"));
        }
    }
    // A scope naming every part covers one owner: naming its distribution key as well lets
    // Citus send the statement to that owner's shard alone (docs/postgres.md).
    if parts.iter().all(|(_, v)| v.is_some()) {
        exact_scope(p, alias, scope);
    }
}

/// The rows whose `scope_key` alone names an owner `scope` covers (tables without scope
/// columns: `scope_locks`), read from the key's parts: ids hold no control character
/// (`Scope`'s validation), so the key's separator splits them exactly.
pub(crate) fn covered_key(p: &mut Pred, alias: &str, scope: &Scope) {
    if scope.user_id().is_some() && scope.agent_id().is_some() && scope.run_id().is_some() {
        return exact_scope(p, alias, scope);
    }
    let parts = [
        ("u", scope.user_id().map(|v| v.as_str())),
        ("a", scope.agent_id().map(|v| v.as_str())),
        ("r", scope.run_id().map(|v| v.as_str())),
    ];
    for (n, (tag, value)) in parts.into_iter().enumerate() {
        if let Some(v) = value {
            let a = p.arg(format!("{tag}={v}"));
            p.and(&format!(
                "split_part({alias}.scope_key, chr(31), {}) = {a}",
                n + 1
            ));
        }
    }
}

/// Exactly `scope`: every part, unset ones as NULL (where a write puts its rows).
pub(crate) fn exact_scope(p: &mut Pred, alias: &str, scope: &Scope) {
    let a = p.arg(scope.key());
    p.and(&format!("{alias}.scope_key = {a}"));
}

/// [`ReadOptions::admits`] in SQL.
pub(crate) fn visibility(p: &mut Pred, alias: &str, read: &ReadOptions) {
    match read.as_of {
        // Valid at T, whatever the state now (hard-deleted rows are gone).
        Some(t) => {
            let at = p.arg(t.timestamp_millis());
            p.and(&format!(
                "COALESCE({alias}.valid_from, {alias}.created_at) <= {at} \
                 AND ({alias}.valid_until IS NULL OR {alias}.valid_until > {at})"
            ));
        }
        // Superseded and soft-deleted rows are shown only on request.
        None if !read.include_inactive => p.and(&format!("{alias}.state = 'active'")),
        None => {}
    }
    if !read.include_expired {
        let now = p.arg(read.now.timestamp_millis());
        p.and(&format!(
            "({alias}.expires_at IS NULL OR {alias}.expires_at > {now})"
        ));
    }
}

pub(crate) fn kinds(p: &mut Pred, alias: &str, kinds: Option<&[MemoryKind]>) {
    if let Some(kinds) = kinds.filter(|k| !k.is_empty()) {
        let names: Vec<String> = kinds.iter().map(|k| k.as_str().to_string()).collect();
        let a = p.arg(names);
        p.and(&format!("{alias}.kind = ANY({a}::text[])"));
    }
}

/// A filter's SQL: the walk is `Filter::to_sql` (core), the fragments are [`Dialect`]'s.
/// Within the parser's bounds (see `mnemo_core::filter`) a filter binds at most a few hundred
/// parameters and nests a few dozen levels, far inside PostgreSQL's limits (65,535 parameters,
/// the stack depth).
pub(crate) fn filter(p: &mut Pred, alias: &str, f: &Filter) -> Result<()> {
    let sql = f.to_sql(&mut Dialect { p, alias })?;
    p.and(&sql);
    Ok(())
}

/// PostgreSQL's filter fragments over the JSONB `{alias}.metadata`; a field is the pair of
/// expressions (`->` and `->>`) over its key, bound once.
struct Dialect<'a> {
    p: &'a mut Pred,
    alias: &'a str,
}

/// A metadata key's value as JSONB and as text.
struct Field {
    json: String,
    text: String,
}

impl FilterDialect for Dialect<'_> {
    type Field = Field;
    const FALSE: &'static str = "FALSE";

    fn time(&mut self, column: &'static str, cmp: &'static str, at: Timestamp) -> String {
        let a = self.p.arg(at.timestamp_millis());
        format!("({}.{column} {cmp} {a})", self.alias)
    }

    fn field(&mut self, key: &str) -> Field {
        let k = self.p.arg(key.to_string());
        Field {
            json: format!("({}.metadata -> {k}::text)", self.alias),
            text: format!("({}.metadata ->> {k}::text)", self.alias),
        }
    }

    /// JSONB equality is type-exact (a string never equals a number; `12` equals `12.0`, as in
    /// SQLite), and a missing key gives NULL.
    fn eq(&mut self, field: &Field, value: &Value) -> String {
        let v = self.p.arg(value.clone());
        format!("{} = {v}::jsonb", field.json)
    }

    fn range(&mut self, field: &Field, cmp: &'static str, bound: Scalar<'_>) -> String {
        let f = &field.json;
        match bound {
            // JSONB orders numbers as numerics.
            Scalar::Number(n) => {
                let v = self.p.arg(Value::Number(n.clone()));
                format!("(jsonb_typeof({f}) = 'number' AND {f} {cmp} {v}::jsonb)")
            }
            // Byte order (the C collation), as SQLite compares text.
            Scalar::Text(s) => {
                let v = self.p.arg(s.to_string());
                format!(
                    "(jsonb_typeof({f}) = 'string' AND {} COLLATE \"C\" {cmp} {v}::text COLLATE \"C\")",
                    field.text
                )
            }
        }
    }

    fn contains(&mut self, field: &Field, elem: Scalar<'_>) -> String {
        let f = &field.json;
        let (substring, value) = match elem {
            Scalar::Text(s) => {
                let v = self.p.arg(s.to_string());
                (
                    format!(
                        "(jsonb_typeof({f}) = 'string' AND strpos({}, {v}::text) > 0)",
                        field.text
                    ),
                    Value::String(s.to_string()),
                )
            }
            Scalar::Number(n) => ("FALSE".to_string(), Value::Number(n.clone())),
        };
        let v = self.p.arg(value);
        // The CASE keeps jsonb_array_elements from ever seeing a non-array (an error), since
        // PostgreSQL does not promise to test the type first.
        format!(
            "({substring} OR EXISTS (SELECT 1 FROM jsonb_array_elements(\
             CASE WHEN jsonb_typeof({f}) = 'array' THEN {f} ELSE '[]'::jsonb END) AS je(v) \
             WHERE jsonb_typeof(je.v) IN ('string', 'number') AND je.v = {v}::jsonb))"
        )
    }

    /// `lower` under the C collation folds ASCII letters only, as SQLite's does.
    fn icontains(&mut self, field: &Field, needle: &str) -> String {
        let v = self.p.arg(needle.to_string());
        format!(
            "(jsonb_typeof({}) = 'string' AND strpos(lower({} COLLATE \"C\"), lower({v}::text COLLATE \"C\")) > 0)",
            field.json, field.text
        )
    }

    /// `->` gives SQL NULL only for a missing key (a JSON null is `'null'::jsonb`).
    fn exists(&mut self, field: &Field) -> String {
        format!("({} IS NOT NULL)", field.json)
    }
}

/// Scope, visibility, kinds and filter of a candidate query, on `memories` aliased `m`.
pub(crate) fn candidate(q: &CandidateQuery<'_>) -> Result<Pred> {
    let mut p = Pred::default();
    scope(&mut p, "m", q.scope);
    visibility(&mut p, "m", &q.read);
    kinds(&mut p, "m", q.kinds);
    if let Some(f) = q.filter {
        filter(&mut p, "m", f)?;
    }
    Ok(p)
}
