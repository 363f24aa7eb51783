//! SQL predicates: scope, state, expiry, kinds and filter expressions.
//!
//! `visibility` is the one place the expiry/state rule is written for SQL reads; every read path
//! (get, list, history, search candidates, fetch) goes through it.

use mnemo_core::filter::{Op, TimeField};
use mnemo_core::{Error, Filter, MemoryKind, ReadOptions, Result, Scope};
use rusqlite::types::Value as Sql;
use serde_json::Value;

/// A SQL fragment and its positional parameters.
#[derive(Debug, Default)]
pub(crate) struct Pred {
    pub sql: String,
    pub params: Vec<Sql>,
}

impl Pred {
    pub fn and(&mut self, sql: &str) {
        if !self.sql.is_empty() {
            self.sql.push_str(" AND ");
        }
        self.sql.push_str(sql);
    }

    pub fn push(&mut self, sql: &str, params: impl IntoIterator<Item = Sql>) {
        self.and(sql);
        self.params.extend(params);
    }

    pub fn where_sql(&self) -> String {
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
    if let Some(u) = &scope.user_id {
        p.push(
            &format!("{prefix}{alias}.user_id = ?"),
            [Sql::Text(u.as_str().into())],
        );
    }
    if let Some(a) = &scope.agent_id {
        p.push(
            &format!("{prefix}{alias}.agent_id = ?"),
            [Sql::Text(a.as_str().into())],
        );
    }
    if let Some(r) = &scope.run_id {
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

/// A filter's SQL. Filters built in code are checked first: within the parser's bounds (see
/// `mnemo_core::filter`) the expression stays inside SQLite's limits (expression depth 1,000,
/// 32,766 bound values), which tests check at every bound.
pub(crate) fn filter(p: &mut Pred, alias: &str, f: &Filter) -> Result<()> {
    f.validate()?;
    let mut params = Vec::new();
    let sql = filter_sql(alias, f, &mut params)?;
    p.push(&sql, params);
    Ok(())
}

fn filter_sql(alias: &str, f: &Filter, params: &mut Vec<Sql>) -> Result<String> {
    Ok(match f {
        Filter::And(parts) | Filter::Or(parts) => {
            let joiner = if matches!(f, Filter::And(_)) {
                " AND "
            } else {
                " OR "
            };
            let subs = parts
                .iter()
                .map(|s| filter_sql(alias, s, params))
                .collect::<Result<Vec<_>>>()?;
            format!("({})", subs.join(joiner))
        }
        Filter::Not(inner) => format!("(NOT {})", filter_sql(alias, inner, params)?),
        Filter::Time { field, op, at } => {
            let col = match field {
                TimeField::CreatedAt => "created_at",
                TimeField::UpdatedAt => "updated_at",
            };
            params.push(Sql::Integer(ms(*at)));
            format!("({alias}.{col} {} ?)", cmp(*op)?)
        }
        Filter::Meta { key, op, value } => meta_sql(alias, key, *op, value, params)?,
    })
}

fn cmp(op: Op) -> Result<&'static str> {
    Ok(match op {
        Op::Eq => "=",
        Op::Ne => "<>",
        Op::Gt => ">",
        Op::Gte => ">=",
        Op::Lt => "<",
        Op::Lte => "<=",
        Op::In | Op::Nin | Op::Contains => {
            return Err(Error::internal("set operator reached a scalar comparison"))
        }
    })
}

fn json_path(key: &str) -> Result<String> {
    if key.contains('"') || key.contains('\\') {
        return Err(Error::invalid(
            "filters",
            format!("field {key:?} may not contain quotes or backslashes"),
        ));
    }
    Ok(format!("$.\"{key}\""))
}

/// Equality that respects JSON types: "0012" never equals 12, true never equals 1. A missing key
/// is false (never SQL NULL), so `ne` and `NOT` include records without the key.
fn eq_sql(alias: &str, path: &str, value: &Value, params: &mut Vec<Sql>) -> String {
    format!("COALESCE({}, 0)", eq_sql_raw(alias, path, value, params))
}

fn eq_sql_raw(alias: &str, path: &str, value: &Value, params: &mut Vec<Sql>) -> String {
    let md = format!("{alias}.metadata");
    params.push(Sql::Text(path.into()));
    match value {
        Value::Null => format!("(json_type({md}, ?) = 'null')"),
        Value::Bool(b) => format!(
            "(json_type({md}, ?) = '{}')",
            if *b { "true" } else { "false" }
        ),
        Value::Number(n) => {
            params.push(Sql::Text(path.into()));
            params.push(number(n));
            format!("(json_type({md}, ?) IN ('integer','real') AND json_extract({md}, ?) = ?)")
        }
        Value::String(s) => {
            params.push(Sql::Text(path.into()));
            params.push(Sql::Text(s.clone()));
            format!("(json_type({md}, ?) = 'text' AND json_extract({md}, ?) = ?)")
        }
        Value::Array(_) | Value::Object(_) => {
            params.push(Sql::Text(path.into()));
            params.push(Sql::Text(value.to_string()));
            format!(
                "(json_type({md}, ?) IN ('array','object') AND json_extract({md}, ?) = json(?))"
            )
        }
    }
}

fn number(n: &serde_json::Number) -> Sql {
    match n.as_i64() {
        Some(i) => Sql::Integer(i),
        None => Sql::Real(n.as_f64().unwrap_or(f64::NAN)),
    }
}

fn meta_sql(
    alias: &str,
    key: &str,
    op: Op,
    value: &Value,
    params: &mut Vec<Sql>,
) -> Result<String> {
    meta_sql_raw(alias, key, op, value, params).map(|s| format!("COALESCE({s}, 0)"))
}

fn meta_sql_raw(
    alias: &str,
    key: &str,
    op: Op,
    value: &Value,
    params: &mut Vec<Sql>,
) -> Result<String> {
    let path = json_path(key)?;
    let md = format!("{alias}.metadata");
    Ok(match op {
        Op::Eq => eq_sql(alias, &path, value, params),
        Op::Ne => format!("(NOT {})", eq_sql(alias, &path, value, params)),
        Op::In | Op::Nin => {
            let items = value
                .as_array()
                .ok_or_else(|| Error::invalid("filters", format!("{key:?}: in/nin take a list")))?;
            let any = if items.is_empty() {
                "0".to_string()
            } else {
                let parts: Vec<String> = items
                    .iter()
                    .map(|v| eq_sql(alias, &path, v, params))
                    .collect();
                format!("({})", parts.join(" OR "))
            };
            if op == Op::In {
                any
            } else {
                format!("(NOT {any})")
            }
        }
        Op::Gt | Op::Gte | Op::Lt | Op::Lte => {
            let (types, bound) = match value {
                Value::Number(n) => ("('integer','real')", number(n)),
                Value::String(s) => ("('text')", Sql::Text(s.clone())),
                _ => {
                    return Err(Error::invalid(
                        "filters",
                        format!("{key:?}: range operators take a number or a string"),
                    ))
                }
            };
            params.extend([Sql::Text(path.clone()), Sql::Text(path), bound]);
            format!(
                "(json_type({md}, ?) IN {types} AND json_extract({md}, ?) {} ?)",
                cmp(op)?
            )
        }
        Op::Contains => {
            let elem = match value {
                Value::String(s) => Sql::Text(s.clone()),
                Value::Number(n) => number(n),
                _ => {
                    return Err(Error::invalid(
                        "filters",
                        format!("{key:?}: contains takes a string or a number"),
                    ))
                }
            };
            let text_part = if let Sql::Text(s) = &elem {
                params.extend([
                    Sql::Text(path.clone()),
                    Sql::Text(path.clone()),
                    Sql::Text(s.clone()),
                ]);
                format!("(json_type({md}, ?) = 'text' AND instr(json_extract({md}, ?), ?) > 0)")
            } else {
                "0".into()
            };
            params.extend([Sql::Text(path.clone()), Sql::Text(path), elem]);
            format!(
                "({text_part} OR (json_type({md}, ?) = 'array' AND EXISTS (SELECT 1 FROM json_each({md}, ?) AS je WHERE je.type NOT IN ('array','object','true','false','null') AND je.value = ?)))"
            )
        }
    })
}
