//! SQL predicates: scope, state, expiry, kinds and filter expressions.
//!
//! `visibility` is the one place the expiry/state rule is written for SQL reads; every read path
//! (get, list, history, search candidates, fetch) goes through it.

use mnemo_core::filter::{FilterDialect, Scalar};
use mnemo_core::{Filter, MemoryKind, ReadOptions, Result, Scope, Timestamp};
use rusqlite::types::Value as Sql;
use serde_json::Value;

/// A SQL fragment and its positional parameters.
#[derive(Debug, Default)]
pub(crate) struct Pred {
    pub sql: String,
    pub params: Vec<Sql>,
}

impl Pred {
    pub(crate) fn and(&mut self, sql: &str) {
        if !self.sql.is_empty() {
            self.sql.push_str(" AND ");
        }
        self.sql.push_str(sql);
    }

    pub(crate) fn push(&mut self, sql: &str, params: impl IntoIterator<Item = Sql>) {
        self.and(sql);
        self.params.extend(params);
    }

    pub(crate) fn where_sql(&self) -> String {
        if self.sql.is_empty() {
            "1".into()
        } else {
            self.sql.clone()
        }
    }
}

/// `?, ?, …` for an `IN` list of `n` bound values.
pub(crate) fn marks(n: usize) -> String {
    vec!["?"; n].join(",")
}

pub(crate) fn ms(t: chrono::DateTime<chrono::Utc>) -> i64 {
    t.timestamp_millis()
}

/// Scope parts that the query sets must match (`alias` is the table alias).
pub(crate) fn scope(p: &mut Pred, alias: &str, scope: &Scope) {
    scope_with(p, alias, scope, "")
}

/// Like `scope`, but the unary `+` keeps SQLite from driving the query through a scope index:
/// right when rows are fetched by key, where a scope index would scan the whole scope.
pub(crate) fn scope_unindexed(p: &mut Pred, alias: &str, scope: &Scope) {
    scope_with(p, alias, scope, "+")
}

fn scope_with(p: &mut Pred, alias: &str, scope: &Scope, prefix: &str) {
    if let Some(u) = scope.user_id() {
        p.push(
            &format!("{prefix}{alias}.user_id = ?"),
            [Sql::Text(u.as_str().into())],
        );
    }
    if let Some(a) = scope.agent_id() {
        p.push(
            &format!("{prefix}{alias}.agent_id = ?"),
            [Sql::Text(a.as_str().into())],
        );
    }
    if let Some(r) = scope.run_id() {
        p.push(
            &format!("{prefix}{alias}.run_id = ?"),
            [Sql::Text(r.as_str().into())],
        );
    }
}

/// [`ReadOptions::admits`] in SQL: the store's every read path goes through here.
pub(crate) fn visibility(p: &mut Pred, alias: &str, read: &ReadOptions) {
    match read.as_of {
        // Valid at T, whatever the state now (hard-deleted rows are gone).
        Some(t) => p.push(
            &format!(
                "COALESCE({alias}.valid_from, {alias}.created_at) <= ? \
                 AND ({alias}.valid_until IS NULL OR {alias}.valid_until > ?)"
            ),
            [Sql::Integer(ms(t)), Sql::Integer(ms(t))],
        ),
        // Superseded and soft-deleted rows are shown only on request.
        None if !read.include_inactive => p.and(&format!("{alias}.state = 'active'")),
        None => {}
    }
    if !read.include_expired {
        p.push(
            &format!("({alias}.expires_at IS NULL OR {alias}.expires_at > ?)"),
            [Sql::Integer(ms(read.now))],
        );
    }
}

pub(crate) fn kinds(p: &mut Pred, alias: &str, kinds: Option<&[MemoryKind]>) {
    if let Some(kinds) = kinds.filter(|k| !k.is_empty()) {
        let marks = marks(kinds.len());
        p.push(
            &format!("{alias}.kind IN ({marks})"),
            kinds.iter().map(|k| Sql::Text(k.as_str().into())),
        );
    }
}

/// A filter's SQL: the walk is `Filter::to_sql` (core), the fragments are [`Dialect`]'s.
/// Within the parser's bounds (see `mnemo_core::filter`) the expression stays inside SQLite's
/// limits (expression depth 1,000, 32,766 bound values), which tests check at every bound.
pub(crate) fn filter(p: &mut Pred, alias: &str, f: &Filter) -> Result<()> {
    let mut params = Vec::new();
    let sql = f.to_sql(&mut Dialect {
        alias,
        params: &mut params,
    })?;
    p.push(&sql, params);
    Ok(())
}

/// SQLite's filter fragments over the JSON text in `{alias}.metadata`; a field is a JSON path.
struct Dialect<'a> {
    alias: &'a str,
    params: &'a mut Vec<Sql>,
}

impl FilterDialect for Dialect<'_> {
    type Field = String;
    const FALSE: &'static str = "0";

    fn time(&mut self, column: &'static str, cmp: &'static str, at: Timestamp) -> String {
        self.params.push(Sql::Integer(ms(at)));
        format!("({}.{column} {cmp} ?)", self.alias)
    }

    fn field(&mut self, key: &str) -> String {
        format!("$.\"{key}\"")
    }

    /// `json_type` first: "0012" never equals 12, true never equals 1.
    fn eq(&mut self, path: &String, value: &Value) -> String {
        let md = format!("{}.metadata", self.alias);
        let params = &mut *self.params;
        params.push(Sql::Text(path.clone()));
        match value {
            Value::Null => format!("(json_type({md}, ?) = 'null')"),
            Value::Bool(b) => format!(
                "(json_type({md}, ?) = '{}')",
                if *b { "true" } else { "false" }
            ),
            Value::Number(n) => {
                params.push(Sql::Text(path.clone()));
                params.push(number(n));
                format!("(json_type({md}, ?) IN ('integer','real') AND json_extract({md}, ?) = ?)")
            }
            Value::String(s) => {
                params.push(Sql::Text(path.clone()));
                params.push(Sql::Text(s.clone()));
                format!("(json_type({md}, ?) = 'text' AND json_extract({md}, ?) = ?)")
            }
            Value::Array(_) | Value::Object(_) => {
                params.push(Sql::Text(path.clone()));
                params.push(Sql::Text(value.to_string()));
                format!(
                    "(json_type({md}, ?) IN ('array','object') AND json_extract({md}, ?) = json(?))"
                )
            }
        }
    }

    fn range(&mut self, path: &String, cmp: &'static str, bound: Scalar<'_>) -> String {
        let md = format!("{}.metadata", self.alias);
        let (types, bound) = match bound {
            Scalar::Number(n) => ("('integer','real')", number(n)),
            Scalar::Text(s) => ("('text')", Sql::Text(s.to_string())),
        };
        self.params
            .extend([Sql::Text(path.clone()), Sql::Text(path.clone()), bound]);
        format!("(json_type({md}, ?) IN {types} AND json_extract({md}, ?) {cmp} ?)")
    }

    fn contains(&mut self, path: &String, elem: Scalar<'_>) -> String {
        let md = format!("{}.metadata", self.alias);
        let elem = match elem {
            Scalar::Text(s) => Sql::Text(s.to_string()),
            Scalar::Number(n) => number(n),
        };
        let text_part = if let Sql::Text(s) = &elem {
            self.params.extend([
                Sql::Text(path.clone()),
                Sql::Text(path.clone()),
                Sql::Text(s.clone()),
            ]);
            format!("(json_type({md}, ?) = 'text' AND instr(json_extract({md}, ?), ?) > 0)")
        } else {
            "0".into()
        };
        self.params
            .extend([Sql::Text(path.clone()), Sql::Text(path.clone()), elem]);
        format!(
            "({text_part} OR (json_type({md}, ?) = 'array' AND EXISTS (SELECT 1 FROM json_each({md}, ?) AS je WHERE je.type NOT IN ('array','object','true','false','null') AND je.value = ?)))"
        )
    }

    /// SQLite's `lower` folds ASCII letters only (no ICU in the bundled build): the rule the
    /// grammar states.
    fn icontains(&mut self, path: &String, needle: &str) -> String {
        let md = self.md();
        self.params.extend([
            Sql::Text(path.clone()),
            Sql::Text(path.clone()),
            Sql::Text(needle.to_string()),
        ]);
        format!(
            "(json_type({md}, ?) = 'text' AND instr(lower(json_extract({md}, ?)), lower(?)) > 0)"
        )
    }

    /// `json_type` is NULL only for a missing key (a JSON null reads 'null').
    fn exists(&mut self, path: &String) -> String {
        let md = self.md();
        self.params.push(Sql::Text(path.clone()));
        format!("(json_type({md}, ?) IS NOT NULL)")
    }
}

impl Dialect<'_> {
    fn md(&self) -> String {
        format!("{}.metadata", self.alias)
    }
}

fn number(n: &serde_json::Number) -> Sql {
    match n.as_i64() {
        Some(i) => Sql::Integer(i),
        None => Sql::Real(n.as_f64().unwrap_or(f64::NAN)),
    }
}
