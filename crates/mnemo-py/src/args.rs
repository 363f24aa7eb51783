//! Keyword arguments as `Engine`'s methods receive them (`**kw` from the Python wrappers, whose
//! signatures are the documented ones). Each read names its argument: a wrong type is a
//! `TypeError` ("limit must be an int, not str"), an out-of-range number the library's
//! `invalid_input` error; an argument no method reads is a `TypeError` too, so nothing given
//! is silently ignored.

use crate::convert::{bad_value, py_to_json, text_of, time_arg, type_name, Parts};
use mnemo_core::Timestamp;
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};
use serde_json::Value;

pub(crate) struct Kw<'py> {
    dict: Option<Bound<'py, PyDict>>,
    read: Vec<&'static str>,
}

fn wrong(name: &str, want: &str, got: &Bound<'_, PyAny>) -> PyErr {
    PyTypeError::new_err(format!("{name} must be {want}, not {}", type_name(got)))
}

impl<'py> Kw<'py> {
    pub(crate) fn new(dict: Option<&Bound<'py, PyDict>>) -> Self {
        Self {
            dict: dict.cloned(),
            read: Vec::new(),
        }
    }

    /// The argument's value; `None` when absent or `None`.
    fn item(&mut self, name: &'static str) -> PyResult<Option<Bound<'py, PyAny>>> {
        self.read.push(name);
        let Some(d) = &self.dict else { return Ok(None) };
        Ok(d.get_item(name)?.filter(|v| !v.is_none()))
    }

    pub(crate) fn str(&mut self, name: &'static str) -> PyResult<Option<String>> {
        match self.item(name)? {
            None => Ok(None),
            Some(v) => match v.cast::<PyString>() {
                Ok(s) => Ok(Some(text_of(name, s)?)),
                Err(_) => Err(wrong(name, "a str", &v)),
            },
        }
    }

    pub(crate) fn bool(&mut self, name: &'static str) -> PyResult<Option<bool>> {
        match self.item(name)? {
            None => Ok(None),
            Some(v) => match v.cast::<PyBool>() {
                Ok(b) => Ok(Some(b.is_true())),
                Err(_) => Err(wrong(name, "a bool", &v)),
            },
        }
    }

    /// A count: an int (not a bool); negative or too large is `invalid_input`.
    pub(crate) fn count(&mut self, name: &'static str) -> PyResult<Option<usize>> {
        match self.item(name)? {
            None => Ok(None),
            Some(v) if v.is_instance_of::<PyInt>() && !v.is_instance_of::<PyBool>() => {
                let n: Option<i64> = v.extract().ok();
                n.and_then(|n| usize::try_from(n).ok())
                    .map(Some)
                    .ok_or_else(|| bad_value(v.py(), name, "must be a count (0 or more)"))
            }
            Some(v) => Err(wrong(name, "an int", &v)),
        }
    }

    /// A number: an int or a float (not a bool).
    pub(crate) fn number(&mut self, name: &'static str) -> PyResult<Option<f64>> {
        match self.item(name)? {
            None => Ok(None),
            Some(v)
                if (v.is_instance_of::<PyInt>() || v.is_instance_of::<PyFloat>())
                    && !v.is_instance_of::<PyBool>() =>
            {
                // An int too large for a float overflows; NaN and infinities are no amount.
                match v.extract::<f64>() {
                    Ok(f) if f.is_finite() => Ok(Some(f)),
                    _ => Err(bad_value(v.py(), name, "must be a finite number")),
                }
            }
            Some(v) => Err(wrong(name, "a number", &v)),
        }
    }

    /// A list (or tuple) of str; a lone str is refused, not split into characters.
    pub(crate) fn strs(&mut self, name: &'static str) -> PyResult<Option<Vec<String>>> {
        match self.item(name)? {
            None => Ok(None),
            Some(v) if v.is_instance_of::<PyList>() || v.is_instance_of::<PyTuple>() => {
                let mut out = Vec::new();
                for item in v.try_iter()? {
                    let item = item?;
                    match item.cast::<PyString>() {
                        Ok(s) => out.push(text_of(name, s)?),
                        Err(_) => return Err(wrong(name, "a list of str", &item)),
                    }
                }
                Ok(Some(out))
            }
            Some(v) => Err(wrong(name, "a list of str", &v)),
        }
    }

    pub(crate) fn dict(&mut self, name: &'static str) -> PyResult<Option<Value>> {
        match self.item(name)? {
            None => Ok(None),
            Some(v) if v.is_instance_of::<PyDict>() => Ok(Some(py_to_json(name, &v)?)),
            Some(v) => Err(wrong(name, "a dict", &v)),
        }
    }

    pub(crate) fn time(&mut self, name: &'static str) -> PyResult<Option<Timestamp>> {
        let v = self.item(name)?;
        time_arg(name, v.as_ref())
    }

    /// `user_id`, `agent_id`, `run_id`.
    pub(crate) fn parts(&mut self) -> PyResult<Parts> {
        Ok(Parts::new(
            self.str("user_id")?,
            self.str("agent_id")?,
            self.str("run_id")?,
        ))
    }

    /// Refuses any argument no read asked for.
    pub(crate) fn finish(self) -> PyResult<()> {
        let Some(d) = &self.dict else { return Ok(()) };
        for k in d.keys() {
            let key: String = k.extract().unwrap_or_else(|_| format!("{k}"));
            if !self.read.contains(&key.as_str()) {
                return Err(PyTypeError::new_err(format!(
                    "unexpected keyword argument {key:?}"
                )));
            }
        }
        Ok(())
    }
}
