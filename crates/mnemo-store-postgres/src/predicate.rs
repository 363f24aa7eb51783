//! WHERE clauses with numbered parameters: scope, the visibility rule, kinds and metadata
//! filters.
//!
//! [`visibility`] is the one place [`ReadOptions::admits`] is written in SQL for this store;
//! every read path (get, list, locate, history, candidates, fetch, linked) goes through it.
//! Filters mean here what they mean in the embedded store: JSON types are respected (`"0012"`
//! never equals `12`, `true` never equals `1`), a missing key makes a comparison false (never
//! NULL, so `ne`, `nin` and `NOT` include records without the key), range operators compare
//! numbers with numbers and strings with strings (byte order, as SQLite does), `contains` finds
//! a substring of a string or an element of a list.

use mnemo_core::filter::{Op, TimeField};
use mnemo_core::{CandidateQuery, Error, Filter, MemoryKind, ReadOptions, Result, Scope};
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
    pub fn arg<T: ToSql + Sync + Send + 'static>(&mut self, v: T) -> String {
        self.params.push(Box::new(v));
        format!("${}", self.params.len())
    }

    /// Adds a condition (its placeholders bound already with [`Pred::arg`]).
    pub fn and(&mut self, sql: &str) {
        if !self.sql.is_empty() {
            self.sql.push_str(" AND ");
        }
        self.sql.push_str(sql);
    }

    /// The conditions so far, joined (`TRUE` when there is none), and a fresh start for the
    /// next ones; the parameters stay bound, so one query can use several predicates.
    pub fn take_sql(&mut self) -> String {
        let sql = self.where_sql().to_string();
        self.sql.clear();
        sql
    }

    /// The conditions joined, `TRUE` when there is none.
    pub fn where_sql(&self) -> &str {
        if self.sql.is_empty() {
            "TRUE"
        } else {
            &self.sql
        }
    }

    /// The parameters as `query` takes them.
    pub fn params(&self) -> Vec<&(dyn ToSql + Sync)> {
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
        ("user_id", scope.user_id.as_ref().map(|v| v.as_str())),
        ("agent_id", scope.agent_id.as_ref().map(|v| v.as_str())),
        ("run_id", scope.run_id.as_ref().map(|v| v.as_str())),
    ];
    for (column, value) in parts {
        if let Some(v) = value {
            let a = p.arg(v.to_string());
            p.and(&format!("{alias}.{column} = {a}"));
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

/// A filter's SQL. Filters built in code are checked against the parser's bounds first (see
/// `mnemo_core::filter`): within them a filter binds at most a few hundred parameters and nests
/// a few dozen levels, far inside PostgreSQL's limits (65,535 parameters, the stack depth).
pub(crate) fn filter(p: &mut Pred, alias: &str, f: &Filter) -> Result<()> {
    f.validate()?;
    let sql = filter_sql(p, alias, f)?;
    p.and(&sql);
    Ok(())
}

fn filter_sql(p: &mut Pred, alias: &str, f: &Filter) -> Result<String> {
    Ok(match f {
        Filter::And(parts) | Filter::Or(parts) => {
            let joiner = if matches!(f, Filter::And(_)) {
                " AND "
            } else {
                " OR "
            };
            let subs = parts
                .iter()
                .map(|s| filter_sql(p, alias, s))
                .collect::<Result<Vec<_>>>()?;
            format!("({})", subs.join(joiner))
        }
        Filter::Not(inner) => format!("(NOT {})", filter_sql(p, alias, inner)?),
        Filter::Time { field, op, at } => {
            let column = match field {
                TimeField::CreatedAt => "created_at",
                TimeField::UpdatedAt => "updated_at",
            };
            let a = p.arg(at.timestamp_millis());
            format!("({alias}.{column} {} {a})", cmp(*op)?)
        }
        // Never NULL: a missing key is false, so NOT of it is true.
        Filter::Meta { key, op, value } => {
            format!("COALESCE({}, FALSE)", meta_sql(p, alias, key, *op, value)?)
        }
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

/// The embedded store writes keys into JSON paths and refuses these characters; refusing them
/// here too keeps a filter valid on one store valid on the other.
fn check_key(key: &str) -> Result<()> {
    if key.contains('"') || key.contains('\\') {
        return Err(Error::invalid(
            "filters",
            format!("field {key:?} may not contain quotes or backslashes"),
        ));
    }
    Ok(())
}

/// JSONB equality is type-exact (a string never equals a number; `12` equals `12.0`, as in
/// SQLite), and a missing key gives NULL, which the caller's COALESCE makes false.
fn eq_sql(p: &mut Pred, field: &str, value: &Value) -> String {
    let v = p.arg(value.clone());
    format!("COALESCE({field} = {v}::jsonb, FALSE)")
}

fn meta_sql(p: &mut Pred, alias: &str, key: &str, op: Op, value: &Value) -> Result<String> {
    check_key(key)?;
    // An empty set binds no key: PostgreSQL refuses a parameter no expression types.
    if matches!(op, Op::In | Op::Nin) && value.as_array().is_some_and(|v| v.is_empty()) {
        return Ok(if op == Op::In { "FALSE" } else { "TRUE" }.into());
    }
    let k = p.arg(key.to_string());
    let field = format!("({alias}.metadata -> {k}::text)");
    let text = format!("({alias}.metadata ->> {k}::text)");
    Ok(match op {
        Op::Eq => eq_sql(p, &field, value),
        Op::Ne => format!("(NOT {})", eq_sql(p, &field, value)),
        Op::In | Op::Nin => {
            let items = value
                .as_array()
                .ok_or_else(|| Error::invalid("filters", format!("{key:?}: in/nin take a list")))?;
            let parts: Vec<String> = items.iter().map(|v| eq_sql(p, &field, v)).collect();
            let any = format!("({})", parts.join(" OR "));
            if op == Op::In {
                any
            } else {
                format!("(NOT {any})")
            }
        }
        Op::Gt | Op::Gte | Op::Lt | Op::Lte => match value {
            // JSONB orders numbers as numerics.
            Value::Number(_) => {
                let v = p.arg(value.clone());
                format!(
                    "(jsonb_typeof({field}) = 'number' AND {field} {} {v}::jsonb)",
                    cmp(op)?
                )
            }
            // Byte order (the C collation), as SQLite compares text.
            Value::String(s) => {
                let v = p.arg(s.clone());
                format!(
                    "(jsonb_typeof({field}) = 'string' AND {text} COLLATE \"C\" {} {v}::text COLLATE \"C\")",
                    cmp(op)?
                )
            }
            _ => {
                return Err(Error::invalid(
                    "filters",
                    format!("{key:?}: range operators take a number or a string"),
                ))
            }
        },
        Op::Contains => {
            let substring = match value {
                Value::String(s) => {
                    let v = p.arg(s.clone());
                    format!("(jsonb_typeof({field}) = 'string' AND strpos({text}, {v}::text) > 0)")
                }
                Value::Number(_) => "FALSE".to_string(),
                _ => {
                    return Err(Error::invalid(
                        "filters",
                        format!("{key:?}: contains takes a string or a number"),
                    ))
                }
            };
            let v = p.arg(value.clone());
            // The CASE keeps jsonb_array_elements from ever seeing a non-array (an error), since
            // PostgreSQL does not promise to test the type first.
            format!(
                "({substring} OR EXISTS (SELECT 1 FROM jsonb_array_elements(\
                 CASE WHEN jsonb_typeof({field}) = 'array' THEN {field} ELSE '[]'::jsonb END) AS je(v) \
                 WHERE jsonb_typeof(je.v) IN ('string', 'number') AND je.v = {v}::jsonb))"
            )
        }
    })
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
