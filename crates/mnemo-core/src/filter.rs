//! Filter expressions over metadata and time, parsed from JSON and translated by each store.
//!
//! Grammar (JSON): `{"AND": [f, …]}`, `{"OR": [f, …]}`, `{"NOT": f}` (operator names are
//! case-insensitive); `{"field": value}` means equality; `{"field": {"op": value, …}}` applies
//! each operator (ANDed). Operators: `eq ne in nin gt gte lt lte contains`. A field is a metadata
//! key (optionally written `metadata.key`) or one of the time fields `created_at`, `updated_at`,
//! compared as instants (RFC 3339 strings). Several keys in one object are ANDed.

use crate::error::{Error, Result};
use crate::memory::Timestamp;
use serde_json::Value;

#[derive(Debug, Clone, PartialEq)]
pub enum Filter {
    And(Vec<Filter>),
    Or(Vec<Filter>),
    Not(Box<Filter>),
    Meta {
        key: String,
        op: Op,
        value: Value,
    },
    Time {
        field: TimeField,
        op: Op,
        at: Timestamp,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimeField {
    CreatedAt,
    UpdatedAt,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    Eq,
    Ne,
    In,
    Nin,
    Gt,
    Gte,
    Lt,
    Lte,
    Contains,
}

impl Op {
    fn parse(raw: &str) -> Result<Op> {
        Ok(match raw.to_ascii_lowercase().as_str() {
            "eq" => Op::Eq,
            "ne" => Op::Ne,
            "in" => Op::In,
            "nin" => Op::Nin,
            "gt" => Op::Gt,
            "gte" => Op::Gte,
            "lt" => Op::Lt,
            "lte" => Op::Lte,
            "contains" => Op::Contains,
            other => {
                return Err(Error::invalid(
                    "filters",
                    format!(
                        "unknown operator {other:?} (expected eq ne in nin gt gte lt lte contains)"
                    ),
                ))
            }
        })
    }
}

const MAX_DEPTH: usize = 16;

impl Filter {
    /// Parses the JSON form. An empty object is "no filter" and yields `None`.
    pub fn from_json(value: &Value) -> Result<Option<Filter>> {
        match value {
            Value::Null => Ok(None),
            Value::Object(map) if map.is_empty() => Ok(None),
            other => parse(other, 0).map(Some),
        }
    }
}

fn parse(value: &Value, depth: usize) -> Result<Filter> {
    if depth > MAX_DEPTH {
        return Err(Error::invalid("filters", "nested too deeply"));
    }
    let map = value
        .as_object()
        .ok_or_else(|| Error::invalid("filters", "each filter must be a JSON object"))?;
    if map.is_empty() {
        return Err(Error::invalid("filters", "empty filter object"));
    }
    let mut parts = Vec::with_capacity(map.len());
    for (key, val) in map {
        match key.to_ascii_lowercase().as_str() {
            "and" | "or" => {
                let items = val
                    .as_array()
                    .ok_or_else(|| Error::invalid("filters", format!("{key} takes a list")))?;
                if items.is_empty() {
                    return Err(Error::invalid("filters", format!("{key} list is empty")));
                }
                let subs = items
                    .iter()
                    .map(|v| parse(v, depth + 1))
                    .collect::<Result<Vec<_>>>()?;
                parts.push(if key.eq_ignore_ascii_case("and") {
                    Filter::And(subs)
                } else {
                    Filter::Or(subs)
                });
            }
            "not" => {
                let inner = match val {
                    Value::Array(items) => Filter::Or(
                        items
                            .iter()
                            .map(|v| parse(v, depth + 1))
                            .collect::<Result<Vec<_>>>()?,
                    ),
                    v => parse(v, depth + 1)?,
                };
                parts.push(Filter::Not(Box::new(inner)));
            }
            _ => parts.push(parse_field(key, val)?),
        }
    }
    Ok(if parts.len() == 1 {
        parts.pop().expect("one part")
    } else {
        Filter::And(parts)
    })
}

fn parse_field(raw_key: &str, val: &Value) -> Result<Filter> {
    let key = raw_key.strip_prefix("metadata.").unwrap_or(raw_key);
    if key.is_empty() || key.chars().count() > 128 || key.chars().any(char::is_control) {
        return Err(Error::invalid(
            "filters",
            format!("bad field name {raw_key:?}"),
        ));
    }
    let ops: Vec<(Op, &Value)> = match val {
        // An object value is always a set of operators; compare to an object with {"eq": {...}}.
        Value::Object(ops) => {
            if ops.is_empty() {
                return Err(Error::invalid(
                    "filters",
                    format!("{key:?} has an empty operator object"),
                ));
            }
            ops.iter()
                .map(|(k, v)| Ok((Op::parse(k)?, v)))
                .collect::<Result<_>>()?
        }
        v => vec![(Op::Eq, v)],
    };
    let mut out = Vec::with_capacity(ops.len());
    for (op, v) in ops {
        if matches!(op, Op::In | Op::Nin) && !v.is_array() {
            return Err(Error::invalid(
                "filters",
                format!("{key:?}: in/nin take a list"),
            ));
        }
        let time_field = match key {
            "created_at" => Some(TimeField::CreatedAt),
            "updated_at" => Some(TimeField::UpdatedAt),
            _ => None,
        };
        out.push(match time_field {
            Some(field) => {
                if matches!(op, Op::In | Op::Nin | Op::Contains) {
                    return Err(Error::invalid(
                        "filters",
                        format!("{key}: only eq ne gt gte lt lte apply to times"),
                    ));
                }
                Filter::Time {
                    field,
                    op,
                    at: parse_time(key, v)?,
                }
            }
            None => Filter::Meta {
                key: key.to_string(),
                op,
                value: v.clone(),
            },
        });
    }
    Ok(if out.len() == 1 {
        out.pop().expect("one")
    } else {
        Filter::And(out)
    })
}

/// Parses an RFC 3339 instant, as used by filters and expiry parameters.
pub fn parse_time(field: &str, v: &Value) -> Result<Timestamp> {
    let s = v
        .as_str()
        .ok_or_else(|| Error::invalid(field, "expected an RFC 3339 timestamp string"))?;
    parse_rfc3339(field, s)
}

pub fn parse_rfc3339(field: &str, s: &str) -> Result<Timestamp> {
    chrono::DateTime::parse_from_rfc3339(s.trim())
        .map(|t| t.with_timezone(&chrono::Utc))
        .map_err(|e| Error::invalid(field, format!("{s:?} is not an RFC 3339 timestamp: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn shorthand_and_operators() {
        let f = Filter::from_json(&json!({"topic": "food", "n": {"gte": 2, "lt": 5}}))
            .unwrap()
            .unwrap();
        let Filter::And(parts) = f else {
            panic!("expected AND")
        };
        assert_eq!(parts.len(), 2);
        assert_eq!(
            parts[0],
            Filter::Meta {
                key: "topic".into(),
                op: Op::Eq,
                value: json!("food")
            }
        );
        assert!(matches!(&parts[1], Filter::And(inner) if inner.len() == 2));
    }

    #[test]
    fn logic_nodes_and_time_fields() {
        let f = Filter::from_json(
            &json!({"OR": [{"a": 1}, {"NOT": {"created_at": {"gt": "2024-01-01T00:00:00Z"}}}]}),
        )
        .unwrap()
        .unwrap();
        let Filter::Or(parts) = f else {
            panic!("expected OR")
        };
        assert!(
            matches!(&parts[1], Filter::Not(inner) if matches!(**inner, Filter::Time { field: TimeField::CreatedAt, op: Op::Gt, .. }))
        );
    }

    #[test]
    fn bad_filters_are_invalid_input() {
        for bad in [
            json!({"a": {"between": 1}}),
            json!({"a": {"in": 3}}),
            json!({"AND": []}),
            json!({"AND": "x"}),
            json!([1]),
            json!({"created_at": {"gt": "yesterday"}}),
            json!({"": 1}),
        ] {
            let err = Filter::from_json(&bad).unwrap_err();
            assert_eq!(err.kind(), crate::ErrorKind::InvalidInput, "{bad}");
        }
        assert_eq!(Filter::from_json(&json!({})).unwrap(), None);
    }
}
