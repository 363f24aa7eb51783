//! The one walk over a [`Filter`] tree that every SQL store runs ([`Filter::to_sql`]): it
//! joins `AND`, `OR` and `NOT`, checks each leaf's operator against its value and keeps a
//! missing metadata key false (never NULL, so `ne`, `nin` and `NOT` include records without the
//! key). A store supplies only the fragments of its dialect through [`FilterDialect`]: how a
//! time column, a type-exact equality, an ordered comparison and `contains` read in its SQL.

use super::{Filter, Op, TimeField};
use crate::error::{Error, Result};
use crate::memory::Timestamp;
use serde_json::{Number, Value};

/// A scalar a range comparison or `contains` takes: only values of the same JSON type compare.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Scalar<'a> {
    Number(&'a Number),
    Text(&'a str),
}

/// The SQL fragments of one store's dialect that [`Filter::to_sql`] joins. Fragments bind
/// their values as they are asked for, in the order they appear in the result.
pub trait FilterDialect {
    /// How the comparisons of one metadata leaf refer to its key (a JSON path, a bound key).
    type Field;
    /// A condition that is never true: an empty `in` list, and what a missing key compares as.
    const FALSE: &'static str;
    /// `column cmp at`, parenthesised, for a time field (`created_at`, `updated_at`).
    fn time(&mut self, column: &'static str, cmp: &'static str, at: Timestamp) -> String;
    /// The field of a metadata key (checked by the walk: no quotes, no backslashes).
    fn field(&mut self, key: &str) -> Self::Field;
    /// Type-exact equality of the field with `value`: `"0012"` never equals `12`, `true` never
    /// equals `1`; NULL when the key is missing (the walk makes that false).
    fn eq(&mut self, field: &Self::Field, value: &Value) -> String;
    /// An ordered comparison (`cmp`) with a number (numbers only) or a string (strings only,
    /// in byte order).
    fn range(&mut self, field: &Self::Field, cmp: &'static str, bound: Scalar<'_>) -> String;
    /// A string field holding `elem` as a substring, or a list field holding it as an element.
    fn contains(&mut self, field: &Self::Field, elem: Scalar<'_>) -> String;
    /// A string field holding `needle` as a substring when ASCII letters are compared without
    /// case (A–Z only, so every store folds alike); NULL or false otherwise.
    fn icontains(&mut self, field: &Self::Field, needle: &str) -> String;
    /// The key is present (with any value, JSON null included); false when it is missing.
    fn exists(&mut self, field: &Self::Field) -> String;
}

impl Op {
    /// The SQL comparison of a scalar operator; a set operator here is a bug in the walk.
    pub fn comparison(self) -> Result<&'static str> {
        Ok(match self {
            Op::Eq => "=",
            Op::Ne => "<>",
            Op::Gt => ">",
            Op::Gte => ">=",
            Op::Lt => "<",
            Op::Lte => "<=",
            Op::In | Op::Nin | Op::Contains | Op::IContains | Op::Exists => {
                return Err(Error::internal("set operator reached a scalar comparison"))
            }
        })
    }
}

impl Filter {
    /// The filter as one condition of `dialect`'s SQL. The filter is checked first
    /// ([`Filter::validate`]), so a filter built in code stays within the parser's bounds, which
    /// every store's limits (expression depth, bound values) hold.
    pub fn to_sql<D: FilterDialect>(&self, dialect: &mut D) -> Result<String> {
        self.validate()?;
        walk(self, dialect)
    }
}

fn walk<D: FilterDialect>(f: &Filter, d: &mut D) -> Result<String> {
    Ok(match f {
        Filter::And(parts) | Filter::Or(parts) => {
            let joiner = if matches!(f, Filter::And(_)) {
                " AND "
            } else {
                " OR "
            };
            let subs = parts
                .iter()
                .map(|s| walk(s, d))
                .collect::<Result<Vec<_>>>()?;
            format!("({})", subs.join(joiner))
        }
        Filter::Not(inner) => format!("(NOT {})", walk(inner, d)?),
        Filter::Time { field, op, at } => {
            let column = match field {
                TimeField::CreatedAt => "created_at",
                TimeField::UpdatedAt => "updated_at",
            };
            d.time(column, op.comparison()?, *at)
        }
        Filter::Meta { key, op, value } => {
            format!("COALESCE({}, {})", meta(d, key, *op, value)?, D::FALSE)
        }
        // Overlap with `[from, to)`; a memory without an event time has NULL ends: false.
        Filter::EventTime(range) => {
            let mut sides = Vec::with_capacity(2);
            if let Some(from) = range.from {
                sides.push(d.time("event_end", ">", from));
            }
            if let Some(to) = range.to {
                sides.push(d.time("event_start", "<", to));
            }
            format!("COALESCE(({}), {})", sides.join(" AND "), D::FALSE)
        }
    })
}

/// Stores write keys into JSON paths or bind them; refusing these characters on every store
/// keeps a filter valid on one store valid on the other.
fn check_key(key: &str) -> Result<()> {
    if key.contains('"') || key.contains('\\') {
        return Err(Error::invalid(
            "filters",
            format!("field {key:?} may not contain quotes or backslashes"),
        ));
    }
    Ok(())
}

/// Equality that is never NULL: a missing key is false.
fn eq<D: FilterDialect>(d: &mut D, field: &D::Field, value: &Value) -> String {
    format!("COALESCE({}, {})", d.eq(field, value), D::FALSE)
}

fn meta<D: FilterDialect>(d: &mut D, key: &str, op: Op, value: &Value) -> Result<String> {
    check_key(key)?;
    let set = |any: String| {
        if op == Op::In {
            any
        } else {
            format!("(NOT {any})")
        }
    };
    // An empty set compares nothing (and binds nothing).
    if matches!(op, Op::In | Op::Nin) && value.as_array().is_some_and(|v| v.is_empty()) {
        return Ok(set(D::FALSE.to_string()));
    }
    let field = d.field(key);
    Ok(match op {
        Op::Eq => eq(d, &field, value),
        Op::Ne => format!("(NOT {})", eq(d, &field, value)),
        Op::In | Op::Nin => {
            let items = value
                .as_array()
                .ok_or_else(|| Error::invalid("filters", format!("{key:?}: in/nin take a list")))?;
            let parts: Vec<String> = items.iter().map(|v| eq(d, &field, v)).collect();
            set(format!("({})", parts.join(" OR ")))
        }
        Op::Gt | Op::Gte | Op::Lt | Op::Lte => {
            let bound = scalar(value).ok_or_else(|| {
                Error::invalid(
                    "filters",
                    format!("{key:?}: range operators take a number or a string"),
                )
            })?;
            d.range(&field, op.comparison()?, bound)
        }
        Op::Contains => {
            let elem = scalar(value).ok_or_else(|| {
                Error::invalid(
                    "filters",
                    format!("{key:?}: contains takes a string or a number"),
                )
            })?;
            d.contains(&field, elem)
        }
        Op::IContains => {
            let needle = value.as_str().ok_or_else(|| {
                Error::invalid("filters", format!("{key:?}: icontains takes a string"))
            })?;
            d.icontains(&field, needle)
        }
        Op::Exists => d.exists(&field),
    })
}

fn scalar(value: &Value) -> Option<Scalar<'_>> {
    match value {
        Value::Number(n) => Some(Scalar::Number(n)),
        Value::String(s) => Some(Scalar::Text(s)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A dialect that writes every fragment as a readable term and numbers its bindings.
    #[derive(Default)]
    struct Plain {
        bound: Vec<String>,
    }

    impl Plain {
        fn bind(&mut self, v: impl ToString) -> String {
            self.bound.push(v.to_string());
            format!("${}", self.bound.len())
        }
    }

    impl FilterDialect for Plain {
        type Field = String;
        const FALSE: &'static str = "F";
        fn time(&mut self, column: &'static str, cmp: &'static str, at: Timestamp) -> String {
            format!("({column} {cmp} {})", self.bind(at.timestamp_millis()))
        }
        fn field(&mut self, key: &str) -> String {
            format!("md[{}]", self.bind(key))
        }
        fn eq(&mut self, field: &String, value: &Value) -> String {
            format!("{field} == {}", self.bind(value))
        }
        fn range(&mut self, field: &String, cmp: &'static str, bound: Scalar<'_>) -> String {
            let v = match bound {
                Scalar::Number(n) => n.to_string(),
                Scalar::Text(s) => s.to_string(),
            };
            format!("{field} {cmp} {}", self.bind(v))
        }
        fn contains(&mut self, field: &String, elem: Scalar<'_>) -> String {
            format!("{field} has {elem:?}")
        }
        fn icontains(&mut self, field: &String, needle: &str) -> String {
            format!("{field} has~ {}", self.bind(needle))
        }
        fn exists(&mut self, field: &String) -> String {
            format!("{field} exists")
        }
    }

    fn sql(f: serde_json::Value) -> Result<(String, Vec<String>)> {
        let f = Filter::from_json(&f)?.expect("a filter");
        let mut d = Plain::default();
        let s = f.to_sql(&mut d)?;
        Ok((s, d.bound))
    }

    #[test]
    fn the_walk_joins_leaves_in_order_and_keeps_missing_keys_false() {
        let (s, bound) = sql(json!({"OR": [{"city": "Oslo"}, {"NOT": {"n": {"gt": 3}}}]})).unwrap();
        assert_eq!(
            s,
            "(COALESCE(COALESCE(md[$1] == $2, F), F) OR (NOT COALESCE(md[$3] > $4, F)))"
        );
        assert_eq!(bound, ["city", "\"Oslo\"", "n", "3"]);
    }

    #[test]
    fn set_operators_take_lists_and_an_empty_set_binds_nothing() {
        let (s, bound) = sql(json!({"tag": {"nin": []}})).unwrap();
        assert_eq!((s.as_str(), bound.len()), ("COALESCE((NOT F), F)", 0));
        let (s, _) = sql(json!({"tag": {"in": ["a", 1]}})).unwrap();
        assert_eq!(
            s,
            "COALESCE((COALESCE(md[$1] == $2, F) OR COALESCE(md[$1] == $3, F)), F)"
        );
        let f = Filter::Meta {
            key: "tag".into(),
            op: Op::In,
            value: json!("a"),
        };
        let e = f.to_sql(&mut Plain::default()).unwrap_err();
        assert!(e.to_string().contains("in/nin take a list"), "{e}");
    }

    #[test]
    fn leaves_refuse_values_their_operator_cannot_compare() {
        let e = sql(json!({"n": {"gt": true}})).unwrap_err();
        assert!(
            e.to_string()
                .contains("range operators take a number or a string"),
            "{e}"
        );
        let e = sql(json!({"n": {"contains": [1]}})).unwrap_err();
        assert!(
            e.to_string()
                .contains("contains takes a string or a number"),
            "{e}"
        );
        let e = sql(json!({"a\"b": 1})).unwrap_err();
        assert!(e.to_string().contains("may not contain quotes"), "{e}");
        assert!(Op::In.comparison().is_err());
    }

    #[test]
    fn the_wildcard_asks_for_the_key_and_icontains_for_a_string() {
        let (s, bound) = sql(json!({"topic": "*", "name": {"icontains": "ADA"}})).unwrap();
        assert_eq!(
            s,
            "(COALESCE(md[$1] exists, F) AND COALESCE(md[$2] has~ $3, F))"
        );
        assert_eq!(bound, ["topic", "name", "ADA"]);
        // The literal string "*" is still reachable through an explicit eq.
        let (s, _) = sql(json!({"topic": {"eq": "*"}})).unwrap();
        assert!(s.contains("=="), "{s}");
        let e = sql(json!({"name": {"icontains": 3}})).unwrap_err();
        assert!(e.to_string().contains("icontains takes a string"), "{e}");
        for t in [
            json!({"created_at": "*"}),
            json!({"updated_at": {"icontains": "x"}}),
        ] {
            let e = sql(t.clone()).unwrap_err();
            assert_eq!(e.kind(), crate::ErrorKind::InvalidInput, "{t}");
        }
    }

    #[test]
    fn event_time_is_an_overlap_that_a_missing_time_fails() {
        let (s, bound) = sql(json!({"event_time": {
            "gte": "2023-05-01T00:00:00Z", "lt": "2023-06-01T00:00:00Z"
        }}))
        .unwrap();
        assert_eq!(s, "COALESCE(((event_end > $1) AND (event_start < $2)), F)");
        assert_eq!(bound, ["1682899200000", "1685577600000"]);
        let (s, _) = sql(json!({"event_time": {"lt": "2023-06-01T00:00:00Z"}})).unwrap();
        assert_eq!(s, "COALESCE(((event_start < $1)), F)");
        for bad in [
            json!({"event_time": {"gte": "2023-06-01T00:00:00Z", "lt": "2023-05-01T00:00:00Z"}}),
            json!({"event_time": {"gt": "2023-06-01T00:00:00Z"}}),
            json!({"event_time": "2023-06-01T00:00:00Z"}),
            json!({"event_time": {}}),
        ] {
            let e = sql(bad.clone()).unwrap_err();
            assert!(e.to_string().contains("event_time"), "{bad}: {e}");
        }
    }

    #[test]
    fn times_compare_as_instants() {
        let (s, bound) = sql(json!({"created_at": {"gte": "2024-01-01T00:00:00Z"}})).unwrap();
        assert_eq!(s, "(created_at >= $1)");
        assert_eq!(bound, ["1704067200000"]);
    }
}
