//! Mem0's message forms read into an add's input: a string (one user message), a dict, or a
//! list of dicts with `role`, `content` (a str or OpenAI-style parts) and an optional `name`.

use crate::convert::{py_to_json, text_of, type_name};
use crate::errors::Failure;
use mnemo::AddInput;
use mnemo_core::{Content, ContentMessage};
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyString, PyTuple};

/// Mem0's message forms: a string (one user message), a dict, or a list of dicts with `role`
/// and `content` (and an optional `name`, the speaker; other keys are ignored, as Mem0 does).
pub(super) fn messages_of(obj: &Bound<'_, PyAny>) -> PyResult<AddInput> {
    if let Ok(s) = obj.cast::<PyString>() {
        return Ok(AddInput::Text(text_of("messages", s)?));
    }
    if obj.is_instance_of::<PyDict>() {
        return Ok(AddInput::from_content(vec![message_of(0, obj)?]));
    }
    if obj.is_instance_of::<PyList>() || obj.is_instance_of::<PyTuple>() {
        let mut out = Vec::new();
        for (i, item) in obj.try_iter()?.enumerate() {
            out.push(message_of(i, &item?)?);
        }
        return Ok(AddInput::from_content(out));
    }
    Err(PyTypeError::new_err(format!(
        "messages must be a str, a dict or a list of dicts, not {}",
        type_name(obj)
    )))
}

fn message_of(i: usize, obj: &Bound<'_, PyAny>) -> PyResult<ContentMessage> {
    let d = obj.cast::<PyDict>().map_err(|_| {
        PyTypeError::new_err(format!(
            "messages[{i}] must be a dict, not {}",
            type_name(obj)
        ))
    })?;
    let text = |key: &str, required: bool| -> PyResult<Option<String>> {
        match d.get_item(key)?.filter(|v| required || !v.is_none()) {
            None if required => Err(PyTypeError::new_err(format!(
                "messages[{i}] needs a {key:?} (str)"
            ))),
            None => Ok(None),
            Some(v) => match v.cast::<PyString>() {
                Ok(s) => Ok(Some(text_of(&format!("messages[{i}].{key}"), s)?)),
                Err(_) => Err(PyTypeError::new_err(format!(
                    "messages[{i}][{key:?}] must be a str, not {}",
                    type_name(&v)
                ))),
            },
        }
    };
    let role = text("role", true)?.unwrap_or_default();
    let role = role.parse().map_err(|e: mnemo::Error| {
        Failure::invalid(&format!("messages[{i}].role"), e.to_string()).to_py(obj.py())
    })?;
    Ok(ContentMessage {
        role,
        content: content_of(i, d)?,
        name: text("name", false)?,
    })
}

/// A message's `content`: a str, or a list of OpenAI-style parts (dicts), read by the rules
/// every surface shares (`mnemo_core::content`).
fn content_of(i: usize, d: &Bound<'_, PyDict>) -> PyResult<Content> {
    let field = format!("messages[{i}].content");
    let Some(v) = d.get_item("content")?.filter(|v| !v.is_none()) else {
        return Err(PyTypeError::new_err(format!(
            "messages[{i}] needs a \"content\" (str or list of parts)"
        )));
    };
    if let Ok(s) = v.cast::<PyString>() {
        return Ok(Content::Text(text_of(&field, s)?));
    }
    if !(v.is_instance_of::<PyList>() || v.is_instance_of::<PyTuple>()) {
        return Err(PyTypeError::new_err(format!(
            "{field} must be a str or a list of parts, not {}",
            type_name(&v)
        )));
    }
    let json = py_to_json(&field, &v)?;
    Content::from_json(&field, &json).map_err(|e| Failure::from(e).to_py(v.py()))
}
