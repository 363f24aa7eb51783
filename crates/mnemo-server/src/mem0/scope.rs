//! Reading Mem0's loose request shapes: scope ids inside `filters`, `messages` as a list, a
//! message or a string, dates as `YYYY-MM-DD`, and the Python dict repr some clients send.

use super::*;

/// Splits Mem0 `filters` into the scope ids it names and the remaining filter expression.
/// Ids may sit at the top level or inside a top-level `AND`; an id under `OR` or `NOT` cannot
/// define a scope and is refused.
pub(super) fn split_filters(
    filters: Option<Value>,
    parts: &mut ScopeParts,
) -> ApiResult<Option<Value>> {
    let Some(f) = filters else { return Ok(None) };
    let Value::Object(obj) = f else {
        return Err(ApiError::invalid("filters must be a JSON object"));
    };
    let mut rest = Map::new();
    let take = |k: &str, v: &Value, parts: &mut ScopeParts| -> ApiResult<bool> {
        let slot = match k {
            "user_id" => &mut parts.user_id,
            "agent_id" => &mut parts.agent_id,
            "run_id" => &mut parts.run_id,
            "app_id" => {
                return Err(ApiError::invalid(
                    "app_id scopes are not supported; use user_id, agent_id or run_id",
                ))
            }
            _ => return Ok(false),
        };
        let Some(s) = v.as_str() else {
            return Err(ApiError::invalid(format!("filters.{k} must be a string")));
        };
        if s == "*" {
            return Err(ApiError::invalid(format!(
                "filters.{k} = \"*\" (any) is not supported; name the {k}"
            )));
        }
        if slot.as_deref().is_some_and(|old| old != s) {
            return Err(ApiError::invalid(format!(
                "{k} is given twice with different values"
            )));
        }
        *slot = Some(s.to_string());
        Ok(true)
    };
    for (k, v) in obj {
        if k.eq_ignore_ascii_case("and") {
            let Value::Array(items) = v else {
                return Err(ApiError::invalid("filters.AND must be a list"));
            };
            let mut kept = Vec::new();
            for item in items {
                let mut item_rest = Map::new();
                if let Value::Object(io) = &item {
                    for (ik, iv) in io {
                        if !take(ik, iv, parts)? {
                            item_rest.insert(ik.clone(), iv.clone());
                        }
                    }
                    if !item_rest.is_empty() {
                        kept.push(Value::Object(item_rest));
                    }
                } else {
                    kept.push(item);
                }
            }
            if !kept.is_empty() {
                rest.insert(k, Value::Array(kept));
            }
        } else if take(&k, &v, parts)? {
            continue;
        } else {
            if contains_scope_key(&v) {
                return Err(ApiError::invalid(
                    "user_id, agent_id and run_id may only appear at the top of filters or in its top-level AND",
                ));
            }
            rest.insert(k, v);
        }
    }
    Ok((!rest.is_empty()).then_some(Value::Object(rest)))
}

pub(super) fn contains_scope_key(v: &Value) -> bool {
    match v {
        Value::Object(o) => o.iter().any(|(k, v)| {
            matches!(k.as_str(), "user_id" | "agent_id" | "run_id") || contains_scope_key(v)
        }),
        Value::Array(a) => a.iter().any(contains_scope_key),
        _ => false,
    }
}

/// Mem0's `messages`: a list of messages, one message object or a plain string.
pub(super) fn messages_of(v: Value) -> ApiResult<Vec<MessageIn>> {
    match v {
        Value::String(s) => Ok(vec![MessageIn {
            role: "user".into(),
            content: Value::String(s),
            name: None,
        }]),
        Value::Object(_) => {
            Ok(vec![serde_json::from_value(v).map_err(|e| {
                ApiError::invalid(format!("messages: {e}"))
            })?])
        }
        Value::Array(_) => {
            serde_json::from_value(v).map_err(|e| ApiError::invalid(format!("messages: {e}")))
        }
        _ => Err(ApiError::invalid(
            "messages must be a list of {role, content}, a message or a string",
        )),
    }
}

pub(super) fn date_of(field: &str, v: &Value) -> ApiResult<Option<DateTime<Utc>>> {
    match v {
        Value::Null => Ok(None),
        Value::String(s) => {
            if let Ok(t) = DateTime::parse_from_rfc3339(s) {
                return Ok(Some(t.with_timezone(&Utc)));
            }
            let d = NaiveDate::parse_from_str(s, "%Y-%m-%d").map_err(|_| {
                ApiError::invalid(format!(
                    "{field}: {s:?} is not a date (YYYY-MM-DD) or RFC 3339 time"
                ))
            })?;
            Ok(d.and_hms_opt(0, 0, 0).map(|t| t.and_utc()))
        }
        _ => Err(ApiError::invalid(format!("{field} must be a date string"))),
    }
}

/// `base AND each of extra` as one filter expression.
pub(super) fn and_filters(base: Option<Value>, extra: Vec<Value>) -> Option<Value> {
    let mut all: Vec<Value> = base.into_iter().chain(extra).collect();
    match all.len() {
        0 => None,
        1 => all.pop(),
        _ => Some(serde_json::json!({ "AND": all })),
    }
}

/// Mem0's categories are labels its platform assigns; mnemo has none, so a category filter
/// would match nothing or everything. Refused unless empty.
pub(super) fn refuse_categories(v: &Option<Value>) -> ApiResult<()> {
    match v {
        None | Some(Value::Null) => Ok(()),
        Some(Value::Array(a)) if a.is_empty() => Ok(()),
        Some(_) => Err(ApiError::invalid(
            "categories are not supported: mnemo does not categorise memories; filter on \
             metadata instead",
        )),
    }
}

/// `start_date`/`end_date` of a list as `created_at` bounds. A bare end date includes its day.
pub(super) fn date_range(start: &Option<Value>, end: &Option<Value>) -> ApiResult<Vec<Value>> {
    let mut out = Vec::new();
    if let Some(t) = start
        .as_ref()
        .map(|v| date_of("start_date", v))
        .transpose()?
        .flatten()
    {
        out.push(serde_json::json!({ "created_at": { "gte": t.to_rfc3339() } }));
    }
    if let Some(v) = end {
        if let Some(t) = date_of("end_date", v)? {
            let day_only = v.as_str().is_some_and(|s| s.len() == 10);
            let bound = if day_only {
                serde_json::json!({ "lt": (t + chrono::Duration::days(1)).to_rfc3339() })
            } else {
                serde_json::json!({ "lte": t.to_rfc3339() })
            };
            out.push(serde_json::json!({ "created_at": bound }));
        }
    }
    Ok(out)
}

/// Reads `{'user_id': 'alice'}` (a flat Python dict of strings) or JSON.
/// Refuses a body field the route does not know: anything in `rest` (the fields a body struct
/// did not name) that is not among the route's `ignored` Mem0 options.
pub(super) fn refuse_unknown(rest: &Map<String, Value>, ignored: &[&str]) -> ApiResult<()> {
    match rest.keys().find(|k| !ignored.contains(&k.as_str())) {
        Some(k) => Err(ApiError::invalid(format!(
            "the body does not fit this route: unknown field `{k}`"
        ))),
        None => Ok(()),
    }
}

pub(super) fn loose_dict(raw: &str) -> ApiResult<Value> {
    if let Ok(v) = serde_json::from_str::<Value>(raw) {
        return Ok(v);
    }
    let inner = raw
        .trim()
        .strip_prefix('{')
        .and_then(|r| r.strip_suffix('}'))
        .ok_or_else(|| ApiError::invalid("filters is not a JSON object"))?;
    let mut map = Map::new();
    for pair in inner.split(',').filter(|p| !p.trim().is_empty()) {
        let (k, v) = pair
            .split_once(':')
            .ok_or_else(|| ApiError::invalid("filters is not a JSON object"))?;
        let unquote = |s: &str| s.trim().trim_matches('\'').trim_matches('"').to_string();
        map.insert(unquote(k), Value::String(unquote(v)));
    }
    Ok(Value::Object(map))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn filters_give_up_their_scope_ids() {
        let mut parts = ScopeParts::default();
        let rest = split_filters(
            Some(json!({"AND": [{"user_id": "alice"}, {"agent_id": "bot"}, {"topic": "food"}]})),
            &mut parts,
        )
        .unwrap();
        assert_eq!(parts.user_id.as_deref(), Some("alice"));
        assert_eq!(parts.agent_id.as_deref(), Some("bot"));
        assert_eq!(rest, Some(json!({"AND": [{"topic": "food"}]})));
        let mut parts = ScopeParts::default();
        assert!(split_filters(
            Some(json!({"OR": [{"user_id": "a"}, {"user_id": "b"}]})),
            &mut parts
        )
        .is_err());
        let mut parts = ScopeParts::new(Some("a".into()), None, None);
        assert!(split_filters(Some(json!({"user_id": "b"})), &mut parts).is_err());
    }

    #[test]
    fn python_dict_filters_parse() {
        assert_eq!(
            loose_dict("{'user_id': 'alice'}").unwrap(),
            json!({"user_id": "alice"})
        );
        assert_eq!(
            loose_dict("{\"run_id\": \"r\"}").unwrap(),
            json!({"run_id": "r"})
        );
        assert!(loose_dict("user_id=alice").is_err());
    }

    #[test]
    fn expiration_dates_read_as_midnight_utc() {
        let t = date_of("expiration_date", &json!("2030-01-02"))
            .unwrap()
            .unwrap();
        assert_eq!(t.to_rfc3339(), "2030-01-02T00:00:00+00:00");
        assert!(date_of("expiration_date", &json!("soon")).is_err());
        assert_eq!(date_of("expiration_date", &Value::Null).unwrap(), None);
    }
}
