//! Filter expressions over metadata and time, parsed from JSON and walked into each store's SQL
//! by [`Filter::to_sql`] (the walk is `walk.rs`; a store supplies its dialect's fragments).
//!
//! Grammar (JSON): `{"AND": [f, …]}`, `{"OR": [f, …]}`, `{"NOT": f}` (operator names are
//! case-insensitive); `{"field": value}` means equality; `{"field": {"op": value, …}}` applies
//! each operator (ANDed). Operators: `eq ne in nin gt gte lt lte contains icontains`. A field is a
//! metadata key (optionally written `metadata.key`) or one of the time fields `created_at`,
//! `updated_at`, compared as instants (RFC 3339 strings). Several keys in one object are ANDed.
//!
//! Two forms Mem0 2.x callers use: the wildcard `{"field": "*"}` matches every record that has
//! the key, whatever its value (compare with the string `"*"` itself through `{"eq": "*"}`);
//! `icontains` is `contains` on a string field with ASCII letters compared case-insensitively
//! (only A–Z fold, on every store alike, so a filter means the same on SQLite and PostgreSQL).
//!
//! `event_time` takes a range, `{"event_time": {"gte": from, "lt": to}}` (either bound may be
//! left out, not both): it keeps memories whose event time overlaps `[from, to)`
//! ([`crate::EventRange::admits`]); a memory without an event time never matches, and an
//! inverted range is invalid input.
//!
//! The scope ids `user_id`, `agent_id` and `run_id` are never fields: scope is set by explicit
//! parameters only, and a filter naming one, at any depth, is refused.
//!
//! A filter's size is bounded so that every store can run it (SQLite, for one, refuses
//! expressions deeper than 1,000 terms): at most [`MAX_FILTER_DEPTH`] levels of nesting,
//! [`MAX_FILTER_KEYS`] keys in one object, [`MAX_FILTER_IN_LIST`] values in an `in`/`nin` list
//! and [`MAX_FILTER_CONDITIONS`] comparisons in all, each value of an `in`/`nin` list counting
//! as one.

use crate::error::{Error, Result};
use crate::memory::Timestamp;
use serde_json::Value;

mod walk;

pub use walk::{FilterDialect, Scalar};

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
    /// Event time overlapping a range (see the module docs).
    EventTime(crate::store::EventRange),
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
    /// Case-insensitive (ASCII) substring of a string field.
    IContains,
    /// The key is present, whatever its value (the wildcard `"*"`); the value is ignored.
    Exists,
}

/// The wildcard value: `{"field": "*"}` matches records that have the key.
pub const WILDCARD: &str = "*";

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
            "icontains" => Op::IContains,
            other => {
                return Err(Error::invalid(
                    "filters",
                    format!(
                        "unknown operator {other:?} (expected eq ne in nin gt gte lt lte contains icontains)"
                    ),
                ))
            }
        })
    }
}

impl Op {
    /// Whether a time field (`created_at`, `updated_at`) takes the operator: the scalar
    /// comparisons only.
    fn applies_to_times(self) -> bool {
        match self {
            Op::Eq | Op::Ne | Op::Gt | Op::Gte | Op::Lt | Op::Lte => true,
            Op::In | Op::Nin | Op::Contains | Op::IContains | Op::Exists => false,
        }
    }
}

/// The deepest nesting of filter objects below the top one.
pub const MAX_FILTER_DEPTH: usize = 16;
/// The most comparisons one filter may make; each value of an `in`/`nin` list is one.
pub const MAX_FILTER_CONDITIONS: usize = 256;
/// The most values in one `in`/`nin` list.
pub const MAX_FILTER_IN_LIST: usize = 256;
/// The most keys in one filter object.
pub const MAX_FILTER_KEYS: usize = 64;

/// Keys that name the scope; never metadata fields (see `memory::IDENTITY_KEYS`).
const SCOPE_KEYS: [&str; 3] = ["user_id", "agent_id", "run_id"];

impl Filter {
    /// Parses the JSON form. An empty object is "no filter" and yields `None`.
    pub fn from_json(value: &Value) -> Result<Option<Filter>> {
        crate::limits::check_json_no_nul("filters", value)?;
        match value {
            Value::Null => Ok(None),
            Value::Object(map) if map.is_empty() => Ok(None),
            other => parse(other, 0, &mut 0).map(Some),
        }
    }

    /// Checks a filter built in code against the rules and bounds the parser enforces, so a
    /// store can trust any filter it is given: no scope id as a field, set operators on lists
    /// only and never on times, no empty AND/OR, at most [`MAX_FILTER_CONDITIONS`] comparisons,
    /// and no deeper than a parsed filter can be.
    pub fn validate(&self) -> Result<()> {
        self.check(0, &mut 0)
    }

    fn check(&self, depth: usize, conditions: &mut usize) -> Result<()> {
        // One JSON level parses into at most three tree levels (several keys: an AND; NOT over
        // a list: a NOT of an OR), the last level included.
        if depth > 3 * (MAX_FILTER_DEPTH + 1) {
            return Err(Error::invalid(
                "filters",
                format!("nested too deeply (more than {MAX_FILTER_DEPTH} levels)"),
            ));
        }
        match self {
            Filter::And(parts) | Filter::Or(parts) => {
                if parts.is_empty() {
                    return Err(Error::invalid("filters", "an AND or OR list is empty"));
                }
                parts
                    .iter()
                    .try_for_each(|p| p.check(depth + 1, conditions))
            }
            Filter::Not(inner) => inner.check(depth + 1, conditions),
            Filter::Meta { key, op, value } => {
                check_key(key, key)?;
                spend(conditions, cost(key, *op, value)?)
            }
            Filter::Time { op, .. } => {
                if !op.applies_to_times() {
                    return Err(Error::invalid(
                        "filters",
                        "only eq ne gt gte lt lte apply to times",
                    ));
                }
                spend(conditions, 1)
            }
            Filter::EventTime(range) => {
                if range.from.is_none() && range.to.is_none() {
                    return Err(Error::invalid("event_time", "give gte, lt or both"));
                }
                crate::store::EventRange::new("event_time", range.from, range.to)?;
                spend(conditions, 1)
            }
        }
    }
}

/// A field name: not empty, at most 128 characters, no control characters, not a scope id.
fn check_key(raw_key: &str, key: &str) -> Result<()> {
    if key.is_empty() || key.chars().count() > 128 || key.chars().any(char::is_control) {
        return Err(Error::invalid(
            "filters",
            format!("bad field name {raw_key:?}"),
        ));
    }
    if SCOPE_KEYS.contains(&key) {
        return Err(Error::invalid(
            "filters",
            format!(
                "{key} names the scope, not a metadata field, and cannot appear in a filter (under OR or NOT it cannot define one); give it as the request's {key}"
            ),
        ));
    }
    Ok(())
}

/// How many comparisons `op` on `value` makes: one, or one per value of an in/nin list (an
/// empty list still counts one).
fn cost(key: &str, op: Op, value: &Value) -> Result<usize> {
    if !matches!(op, Op::In | Op::Nin) {
        return Ok(1);
    }
    let items = value
        .as_array()
        .ok_or_else(|| Error::invalid("filters", format!("{key:?}: in/nin take a list")))?;
    if items.len() > MAX_FILTER_IN_LIST {
        return Err(Error::invalid(
            "filters",
            format!(
                "{key:?}: an in/nin list has {} values; the limit is {MAX_FILTER_IN_LIST}",
                items.len()
            ),
        ));
    }
    Ok(items.len().max(1))
}

/// Counts `n` more comparisons against [`MAX_FILTER_CONDITIONS`].
fn spend(conditions: &mut usize, n: usize) -> Result<()> {
    *conditions += n;
    if *conditions > MAX_FILTER_CONDITIONS {
        return Err(Error::invalid(
            "filters",
            format!(
                "more than {MAX_FILTER_CONDITIONS} conditions \
                 (each value of an in/nin list counts as one)"
            ),
        ));
    }
    Ok(())
}

fn parse(value: &Value, depth: usize, conditions: &mut usize) -> Result<Filter> {
    if depth > MAX_FILTER_DEPTH {
        return Err(Error::invalid(
            "filters",
            format!("nested too deeply (more than {MAX_FILTER_DEPTH} levels)"),
        ));
    }
    let map = value
        .as_object()
        .ok_or_else(|| Error::invalid("filters", "each filter must be a JSON object"))?;
    if map.is_empty() {
        return Err(Error::invalid("filters", "empty filter object"));
    }
    if map.len() > MAX_FILTER_KEYS {
        return Err(Error::invalid(
            "filters",
            format!(
                "an object has {} keys; the limit is {MAX_FILTER_KEYS}",
                map.len()
            ),
        ));
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
                    .map(|v| parse(v, depth + 1, conditions))
                    .collect::<Result<Vec<_>>>()?;
                parts.push(if key.eq_ignore_ascii_case("and") {
                    Filter::And(subs)
                } else {
                    Filter::Or(subs)
                });
            }
            "not" => {
                let inner = match val {
                    // `NOT []` would be an empty OR, which no store can translate.
                    Value::Array(items) if items.is_empty() => {
                        return Err(Error::invalid("filters", format!("{key} list is empty")))
                    }
                    Value::Array(items) => Filter::Or(
                        items
                            .iter()
                            .map(|v| parse(v, depth + 1, conditions))
                            .collect::<Result<Vec<_>>>()?,
                    ),
                    v => parse(v, depth + 1, conditions)?,
                };
                parts.push(Filter::Not(Box::new(inner)));
            }
            _ => parts.push(parse_field(key, val, conditions)?),
        }
    }
    Ok(and_of(parts))
}

fn parse_field(raw_key: &str, val: &Value, conditions: &mut usize) -> Result<Filter> {
    if raw_key == "event_time" {
        spend(conditions, 1)?;
        return parse_event_time(val);
    }
    let key = raw_key.strip_prefix("metadata.").unwrap_or(raw_key);
    check_key(raw_key, key)?;
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
        Value::String(w) if w == WILDCARD => vec![(Op::Exists, val)],
        v => vec![(Op::Eq, v)],
    };
    let mut out = Vec::with_capacity(ops.len());
    for (op, v) in ops {
        spend(conditions, cost(key, op, v)?)?;
        let time_field = match key {
            "created_at" => Some(TimeField::CreatedAt),
            "updated_at" => Some(TimeField::UpdatedAt),
            _ => None,
        };
        out.push(match time_field {
            Some(field) => {
                if !op.applies_to_times() {
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
    Ok(and_of(out))
}

/// `{"gte": from, "lt": to}` on `event_time`: a range, checked (not inverted, not empty).
fn parse_event_time(val: &Value) -> Result<Filter> {
    let ops = val
        .as_object()
        .filter(|o| !o.is_empty())
        .ok_or_else(|| Error::invalid("event_time", "takes {\"gte\": from, \"lt\": to}"))?;
    let (mut from, mut to) = (None, None);
    for (op, v) in ops {
        match op.to_ascii_lowercase().as_str() {
            "gte" => from = Some(parse_time("event_time", v)?),
            "lt" => to = Some(parse_time("event_time", v)?),
            other => {
                return Err(Error::invalid(
                    "event_time",
                    format!("only gte and lt apply to event time, not {other:?}"),
                ))
            }
        }
    }
    Ok(Filter::EventTime(crate::store::EventRange::new(
        "event_time",
        from,
        to,
    )?))
}

/// The conjunction of `parts`: a single part stands alone rather than as an AND of one.
fn and_of(mut parts: Vec<Filter>) -> Filter {
    match parts.len() {
        1 => parts.pop().unwrap_or(Filter::And(Vec::new())),
        _ => Filter::And(parts),
    }
}

/// Parses an RFC 3339 instant, as used by filters and expiry parameters.
pub fn parse_time(field: &str, v: &Value) -> Result<Timestamp> {
    let s = v
        .as_str()
        .ok_or_else(|| Error::invalid(field, "expected an RFC 3339 timestamp string"))?;
    parse_rfc3339(field, s)
}

/// Parses an RFC 3339 instant whose year falls in [`crate::limits::TIMESTAMP_YEARS`].
pub fn parse_rfc3339(field: &str, s: &str) -> Result<Timestamp> {
    let t = chrono::DateTime::parse_from_rfc3339(s.trim())
        .map(|t| t.with_timezone(&chrono::Utc))
        .map_err(|e| Error::invalid(field, format!("{s:?} is not an RFC 3339 timestamp: {e}")))?;
    crate::limits::check_timestamp(field, t)
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
            json!({"NOT": []}),
        ] {
            let err = Filter::from_json(&bad).unwrap_err();
            assert_eq!(err.kind(), crate::ErrorKind::InvalidInput, "{bad}");
        }
        assert_eq!(Filter::from_json(&json!({})).unwrap(), None);
    }

    fn refusal(f: &Value) -> String {
        let err = Filter::from_json(f).unwrap_err();
        assert_eq!(err.kind(), crate::ErrorKind::InvalidInput, "{f}");
        err.to_string()
    }

    /// `{"OR": [{"k0": 0}, {"k1": 1}, …]}` with `n` terms.
    fn or_of(n: usize) -> Value {
        json!({"OR": (0..n).map(|i| json!({format!("k{i}"): i})).collect::<Vec<_>>()})
    }

    fn nested(levels: usize) -> Value {
        (0..levels).fold(json!({"a": 1}), |f, _| json!({"NOT": f}))
    }

    #[test]
    fn wide_filters_are_refused_naming_the_limit() {
        // The probe's shapes: an `in` list of 994 strings, an OR of 1,001 terms, 5,000 keys.
        let list: Vec<String> = (0..994).map(|i| format!("v{i}")).collect();
        assert!(refusal(&json!({"tag": {"in": list}})).contains("limit is 256"));
        assert!(refusal(&or_of(1001)).contains("more than 256 conditions"));
        let keys: serde_json::Map<String, Value> =
            (0..5000).map(|i| (format!("k{i}"), json!(i))).collect();
        assert!(refusal(&Value::Object(keys)).contains("limit is 64"));
        assert!(refusal(&nested(MAX_FILTER_DEPTH + 1)).contains("more than 16 levels"));
        // In-list values count towards the conditions: two full lists are one too many.
        let full: Vec<usize> = (0..MAX_FILTER_IN_LIST).collect();
        assert!(refusal(&json!({"a": {"in": full}, "b": {"nin": [1]}})).contains("conditions"));
    }

    #[test]
    fn filters_at_every_limit_parse() {
        let full: Vec<usize> = (0..MAX_FILTER_IN_LIST).collect();
        let keys: serde_json::Map<String, Value> = (0..MAX_FILTER_KEYS)
            .map(|i| (format!("k{i}"), json!(i)))
            .collect();
        for f in [
            json!({"tag": {"in": full}}),
            or_of(MAX_FILTER_CONDITIONS),
            Value::Object(keys),
            nested(MAX_FILTER_DEPTH),
        ] {
            assert!(Filter::from_json(&f).unwrap().is_some(), "{f}");
        }
    }

    #[test]
    fn scope_ids_are_refused_at_any_depth() {
        for f in [
            json!({"user_id": "alice"}),
            json!({"metadata.agent_id": "bot"}),
            json!({"OR": [{"user_id": "a"}, {"user_id": "b"}]}),
            // The probe's shape: OR inside a top-level AND was read as a metadata key.
            json!({"AND": [{"topic": "x"}, {"OR": [{"run_id": "r1"}, {"topic": "y"}]}]}),
            json!({"NOT": {"AND": [{"user_id": {"ne": "a"}}]}}),
        ] {
            assert!(refusal(&f).contains("names the scope"), "{f}");
        }
        // Other identity-looking names stay ordinary fields.
        assert!(Filter::from_json(&json!({"user": "a", "actor_id": "b"})).is_ok());
    }

    #[test]
    fn filters_built_in_code_are_checked_like_parsed_ones() {
        let leaf = |i: usize| Filter::Meta {
            key: format!("k{i}"),
            op: Op::Eq,
            value: json!(i),
        };
        let parsed = [
            or_of(MAX_FILTER_CONDITIONS),
            nested(MAX_FILTER_DEPTH),
            json!({"AND": [{"a": 1, "b": {"gt": 1, "lt": 3}}, {"NOT": [{"c": 1}, {"d": {"in": [1, 2]}}]}]}),
        ];
        // The deepest tree a parse gives: every level an AND of a field and a NOT over a list.
        let leaf_level = json!({"a": {"gt": 1, "lt": 2}, "b": 1});
        let worst = (0..MAX_FILTER_DEPTH).fold(leaf_level, |f, _| json!({"x": 1, "NOT": [f]}));
        for f in parsed.into_iter().chain([worst]) {
            Filter::from_json(&f).unwrap().unwrap().validate().unwrap();
        }
        let wide = Filter::Or((0..=MAX_FILTER_CONDITIONS).map(leaf).collect());
        let deep = (0..1000).fold(leaf(0), |f, _| Filter::Not(Box::new(f)));
        let bad = [
            wide,
            deep,
            Filter::Or(Vec::new()),
            Filter::Meta {
                key: "n".into(),
                op: Op::In,
                value: json!(3),
            },
            Filter::Meta {
                key: "n".into(),
                op: Op::Nin,
                value: json!((0..=MAX_FILTER_IN_LIST).collect::<Vec<_>>()),
            },
            Filter::Meta {
                key: "user_id".into(),
                op: Op::Eq,
                value: json!("a"),
            },
            Filter::Time {
                field: TimeField::CreatedAt,
                op: Op::Contains,
                at: chrono::Utc::now(),
            },
        ];
        for f in bad {
            let err = f.validate().unwrap_err();
            assert_eq!(err.kind(), crate::ErrorKind::InvalidInput, "{f:?}");
        }
    }

    #[test]
    fn time_filters_stay_in_four_digit_years() {
        let f = json!({"created_at": {"gt": "0000-06-01T00:00:00Z"}});
        assert!(refusal(&f).contains("out of range"));
        assert!(Filter::from_json(&json!({"created_at": {"gt": "0001-01-01T00:00:00Z"}})).is_ok());
    }
}
