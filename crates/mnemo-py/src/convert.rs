//! Python objects to and from the JSON values the facade speaks, plus the argument forms every
//! method shares (times, scopes, ids). A wrong Python type is a `TypeError` naming the argument;
//! a value of the right type the library refuses is its `invalid_input` error, raised later.

use crate::errors::Failure;
use mnemo_core::{MemoryId, Scope, Timestamp};
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};
use serde_json::{Map, Number, Value};

/// Nesting deeper than this is refused (a self-referencing dict would otherwise never end).
const MAX_DEPTH: usize = 64;

/// A JSON value as plain Python objects (dict, list, str, int, float, bool, None).
pub(crate) fn json_to_py<'py>(py: Python<'py>, v: &Value) -> PyResult<Bound<'py, PyAny>> {
    Ok(match v {
        Value::Null => py.None().into_bound(py),
        Value::Bool(b) => PyBool::new(py, *b).to_owned().into_any(),
        Value::Number(n) => match (n.as_i64(), n.as_u64()) {
            (Some(i), _) => i.into_pyobject(py)?.into_any(),
            (None, Some(u)) => u.into_pyobject(py)?.into_any(),
            _ => n.as_f64().unwrap_or(f64::NAN).into_pyobject(py)?.into_any(),
        },
        Value::String(s) => PyString::new(py, s).into_any(),
        Value::Array(items) => {
            let list = PyList::empty(py);
            for item in items {
                list.append(json_to_py(py, item)?)?;
            }
            list.into_any()
        }
        Value::Object(map) => {
            let dict = PyDict::new(py);
            for (k, item) in map {
                dict.set_item(k, json_to_py(py, item)?)?;
            }
            dict.into_any()
        }
    })
}

/// `mnemo.InvalidInputError` naming `arg`: a value of the right type that cannot be used.
pub(crate) fn bad_value(py: Python<'_>, arg: &str, reason: impl Into<String>) -> PyErr {
    Failure::invalid(arg, reason).to_py(py)
}

/// A Python str as Rust text; a str Rust cannot hold (a lone surrogate such as `"\ud800"`) is
/// `InvalidInputError` naming `arg`, not a `UnicodeEncodeError` naming nothing.
pub(crate) fn text_of(arg: &str, s: &Bound<'_, PyString>) -> PyResult<String> {
    s.to_cow().map(|c| c.into_owned()).map_err(|_| {
        bad_value(
            s.py(),
            arg,
            "holds a lone surrogate, which is not text (not UTF-8 encodable)",
        )
    })
}

/// A str argument: `TypeError` for another type, `InvalidInputError` for unencodable text.
pub(crate) fn str_arg(arg: &str, obj: &Bound<'_, PyAny>) -> PyResult<String> {
    match obj.cast::<PyString>() {
        Ok(s) => text_of(arg, s),
        Err(_) => Err(PyTypeError::new_err(format!(
            "{arg} must be a str, not {}",
            type_name(obj)
        ))),
    }
}

/// A Python value as JSON; `TypeError` naming `arg` for anything JSON cannot hold.
pub(crate) fn py_to_json(arg: &str, obj: &Bound<'_, PyAny>) -> PyResult<Value> {
    to_json(arg, obj, 0)
}

fn to_json(arg: &str, obj: &Bound<'_, PyAny>, depth: usize) -> PyResult<Value> {
    if depth > MAX_DEPTH {
        return Err(bad_value(
            obj.py(),
            arg,
            format!("is nested deeper than {MAX_DEPTH} levels"),
        ));
    }
    if obj.is_none() {
        return Ok(Value::Null);
    }
    if let Ok(b) = obj.cast::<PyBool>() {
        return Ok(Value::Bool(b.is_true()));
    }
    if obj.is_instance_of::<PyInt>() {
        if let Ok(i) = obj.extract::<i64>() {
            return Ok(Value::from(i));
        }
        if let Ok(u) = obj.extract::<u64>() {
            return Ok(Value::from(u));
        }
        return Err(bad_value(obj.py(), arg, "holds an integer beyond 64 bits"));
    }
    if obj.is_instance_of::<PyFloat>() {
        let f: f64 = obj.extract()?;
        return Number::from_f64(f)
            .map(Value::Number)
            .ok_or_else(|| bad_value(obj.py(), arg, format!("holds {f}, which JSON cannot hold")));
    }
    if let Ok(s) = obj.cast::<PyString>() {
        return Ok(Value::String(text_of(arg, s)?));
    }
    if let Ok(d) = obj.cast::<PyDict>() {
        let mut map = Map::new();
        for (k, v) in d.iter() {
            let key = k.cast::<PyString>().map_err(|_| {
                PyTypeError::new_err(format!("{arg} must have str keys, not {}", type_name(&k)))
            })?;
            map.insert(text_of(arg, key)?, to_json(arg, &v, depth + 1)?);
        }
        return Ok(Value::Object(map));
    }
    if obj.is_instance_of::<PyList>() || obj.is_instance_of::<PyTuple>() {
        let mut out = Vec::new();
        for item in obj.try_iter()? {
            out.push(to_json(arg, &item?, depth + 1)?);
        }
        return Ok(Value::Array(out));
    }
    Err(PyTypeError::new_err(format!(
        "{arg} must hold only dict, list, str, int, float, bool or None, not {}",
        type_name(obj)
    )))
}

/// The name of an object's type, for messages.
pub(crate) fn type_name(obj: &Bound<'_, PyAny>) -> String {
    obj.get_type()
        .name()
        .map(|n| n.to_string())
        .unwrap_or_else(|_| "?".into())
}

/// An optional dict argument as a JSON object.
pub(crate) fn dict_arg(arg: &str, obj: Option<&Bound<'_, PyAny>>) -> PyResult<Option<Value>> {
    match obj {
        None => Ok(None),
        Some(o) if o.is_none() => Ok(None),
        Some(o) if o.is_instance_of::<PyDict>() => Ok(Some(py_to_json(arg, o)?)),
        Some(o) => Err(PyTypeError::new_err(format!(
            "{arg} must be a dict, not {}",
            type_name(o)
        ))),
    }
}

/// A time argument: an aware `datetime`, an RFC 3339 string or Unix seconds; `TypeError` naming
/// `arg` for another type, `InvalidInputError` naming it for a naive datetime, an unreadable
/// string or a number that is no time.
pub(crate) fn time_arg(arg: &str, obj: Option<&Bound<'_, PyAny>>) -> PyResult<Option<Timestamp>> {
    let Some(obj) = obj.filter(|o| !o.is_none()) else {
        return Ok(None);
    };
    if (obj.is_instance_of::<PyInt>() || obj.is_instance_of::<PyFloat>())
        && !obj.is_instance_of::<PyBool>()
    {
        // Unix seconds, as Mem0's `timestamp` is given.
        let secs: f64 = obj.extract()?;
        let whole = secs.floor();
        let nanos = ((secs - whole) * 1e9) as u32;
        return chrono::DateTime::from_timestamp(whole as i64, nanos)
            .filter(|_| secs.is_finite())
            .map(Some)
            .ok_or_else(|| bad_value(obj.py(), arg, format!("{secs} is not a time")));
    }
    let text: String = if let Ok(s) = obj.cast::<PyString>() {
        text_of(arg, s)?
    } else if obj.hasattr("isoformat")? && obj.hasattr("tzinfo")? {
        if obj.getattr("tzinfo")?.is_none() {
            return Err(bad_value(
                obj.py(),
                arg,
                "must be an aware datetime (with a timezone)",
            ));
        }
        obj.call_method0("isoformat")?.extract()?
    } else {
        return Err(PyTypeError::new_err(format!(
            "{arg} must be a datetime, an RFC 3339 string or Unix seconds, not {}",
            type_name(obj)
        )));
    };
    chrono::DateTime::parse_from_rfc3339(&text)
        .map(|t| Some(t.with_timezone(&chrono::Utc)))
        .map_err(|e| bad_value(obj.py(), arg, format!("{text:?} is not RFC 3339 ({e})")))
}

/// The three scope parts as given (checked when the work runs, by the library's rules).
#[derive(Debug, Clone, Default)]
pub(crate) struct Parts {
    pub user_id: Option<String>,
    pub agent_id: Option<String>,
    pub run_id: Option<String>,
}

impl Parts {
    pub(crate) fn new(
        user_id: Option<String>,
        agent_id: Option<String>,
        run_id: Option<String>,
    ) -> Self {
        Self {
            user_id,
            agent_id,
            run_id,
        }
    }

    pub(crate) fn given(&self) -> bool {
        self.user_id.is_some() || self.agent_id.is_some() || self.run_id.is_some()
    }

    /// The scope; `invalid_input` when none is given or a part is malformed.
    pub(crate) fn scope(&self) -> Result<Scope, Failure> {
        Ok(Scope::from_parts(
            self.user_id.as_deref(),
            self.agent_id.as_deref(),
            self.run_id.as_deref(),
        )?)
    }
}

/// A memory id; `invalid_input` naming `arg` when it is not one.
pub(crate) fn id_of(arg: &str, raw: &str) -> Result<MemoryId, Failure> {
    MemoryId::parse(raw).map_err(|_| Failure::invalid(arg, format!("{raw:?} is not a memory id")))
}

/// A serialisable answer as a JSON value.
pub(crate) fn to_value(v: &impl serde::Serialize) -> Result<Value, Failure> {
    serde_json::to_value(v)
        .map_err(|e| Failure::internal(format!("an answer did not serialise: {e}")))
}
