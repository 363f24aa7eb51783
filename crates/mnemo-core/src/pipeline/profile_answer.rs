//! Reading the profile analysis's answer: the model's JSON → dimensions, removals and knowledge
//! statements whose message and knowledge numbers are checked against what the prompt showed.
//! A number that was not shown is dropped with a warning (the statement or dimension stays);
//! an answer of the wrong shape is a `ModelOutput` error, so nothing is written.

use super::shape_error;
use crate::chat::ChatModel;
use crate::error::Result;
use serde_json::{Map, Value};

const STEP: &str = "profile";

/// A dimension as the model gave it; `messages` are 0-based positions in the shown messages.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct DimensionAnswer {
    pub name: String,
    pub value: String,
    pub messages: Vec<usize>,
}

/// A knowledge statement as the model gave it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Statement {
    pub text: String,
    /// 0-based positions in the shown messages.
    pub messages: Vec<usize>,
    /// 0-based position in the shown KNOWN knowledge.
    pub replaces: Option<usize>,
    pub reason: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Answer {
    pub dimensions: Vec<DimensionAnswer>,
    pub removed: Vec<String>,
    pub reason: Option<String>,
    pub user: Vec<Statement>,
    pub assistant: Vec<Statement>,
}

/// A number as models write it: `3`, `"3"`, `"[3]"`, `"K3"`, `"#3"`.
fn number(v: &Value) -> Option<u64> {
    match v {
        Value::Number(n) => n.as_u64(),
        Value::String(s) => s
            .trim()
            .trim_start_matches(['K', 'k', '#', '['])
            .trim_end_matches(']')
            .trim()
            .parse()
            .ok(),
        _ => None,
    }
}

fn text_of(v: Option<&Value>) -> Option<String> {
    let t = match v? {
        Value::String(s) => s.trim().to_string(),
        Value::Number(n) => n.to_string(),
        Value::Bool(b) => b.to_string(),
        // A list value ("hiking", "chess") reads as one phrase.
        Value::Array(items) => items
            .iter()
            .filter_map(|i| text_of(Some(i)))
            .collect::<Vec<_>>()
            .join(", "),
        _ => return None,
    };
    (!t.is_empty()).then_some(t)
}

/// The cited message numbers of `o` (under `messages`, `message_ids` or `sources`) mapped to
/// positions; numbers outside `1..=shown` are reported in `warnings` under `what`.
fn cited(
    o: &Map<String, Value>,
    shown: usize,
    what: &str,
    warnings: &mut Vec<String>,
) -> Vec<usize> {
    let raw = ["messages", "message_ids", "sources"]
        .iter()
        .find_map(|k| o.get(*k))
        .cloned()
        .unwrap_or(Value::Null);
    let items = match raw {
        Value::Array(a) => a,
        Value::Null => Vec::new(),
        single => vec![single],
    };
    let mut out = Vec::new();
    for item in items {
        match number(&item) {
            Some(n) if n >= 1 && n as usize <= shown => {
                if !out.contains(&(n as usize - 1)) {
                    out.push(n as usize - 1);
                }
            }
            _ => {
                warnings.push(format!(
                    "{what} cites message {item}, which was not shown; that citation is dropped"
                ));
                tracing::warn!("profile analysis cited a message number it was not shown");
            }
        }
    }
    out
}

fn list<'a>(chat: &dyn ChatModel, o: &'a Map<String, Value>, key: &str) -> Result<&'a [Value]> {
    match o.get(key) {
        None | Some(Value::Null) => Ok(&[]),
        Some(Value::Array(a)) => Ok(a),
        Some(_) => Err(shape_error(chat, STEP, format!("\"{key}\" must be a list"))),
    }
}

fn statements(
    chat: &dyn ChatModel,
    items: &[Value],
    (shown, known): (usize, usize),
    label: &str,
    warnings: &mut Vec<String>,
) -> Result<Vec<Statement>> {
    let mut out = Vec::new();
    for item in items {
        let (text, o) = match item {
            Value::String(s) => (Some(s.trim().to_string()), None),
            Value::Object(o) => (
                text_of(o.get("text").or_else(|| o.get("statement"))),
                Some(o),
            ),
            _ => {
                return Err(shape_error(
                    chat,
                    STEP,
                    format!("a {label} statement is neither text nor an object"),
                ))
            }
        };
        let Some(text) = text.filter(|t| !t.is_empty()) else {
            return Err(shape_error(
                chat,
                STEP,
                format!("a {label} statement has no \"text\""),
            ));
        };
        let Some(o) = o else {
            out.push(Statement {
                text,
                messages: Vec::new(),
                replaces: None,
                reason: None,
            });
            continue;
        };
        let messages = cited(o, shown, &format!("{label} statement {text:?}"), warnings);
        let replaces = match o.get("replaces").or_else(|| o.get("updates")) {
            None | Some(Value::Null) => None,
            Some(v) => match number(v) {
                Some(n) if n >= 1 && n as usize <= known => Some(n as usize - 1),
                _ => {
                    warnings.push(format!(
                        "{label} statement {text:?} replaces known statement {v}, which was not shown; it is added as new"
                    ));
                    None
                }
            },
        };
        let reason = text_of(o.get("reason"));
        out.push(Statement {
            text,
            messages,
            replaces,
            reason,
        });
    }
    Ok(out)
}

/// Reads an answer given `shown` numbered messages and `known` numbered knowledge statements.
pub(crate) fn parse(
    chat: &dyn ChatModel,
    value: &Value,
    shown: usize,
    known: usize,
    warnings: &mut Vec<String>,
) -> Result<Answer> {
    let Value::Object(o) = value else {
        return Err(shape_error(chat, STEP, "expected a JSON object"));
    };
    let mut answer = Answer::default();
    match o.get("profile") {
        None | Some(Value::Null) => {}
        Some(Value::Object(p)) => {
            for d in list(chat, p, "dimensions")? {
                let Value::Object(d) = d else {
                    return Err(shape_error(chat, STEP, "a dimension is not an object"));
                };
                let name = text_of(d.get("name"))
                    .ok_or_else(|| shape_error(chat, STEP, "a dimension has no \"name\""))?;
                let value = text_of(d.get("value")).ok_or_else(|| {
                    shape_error(chat, STEP, format!("dimension {name:?} has no \"value\""))
                })?;
                let messages = cited(d, shown, &format!("dimension {name:?}"), warnings);
                answer.dimensions.push(DimensionAnswer {
                    name,
                    value,
                    messages,
                });
            }
            for r in list(chat, p, "removed")? {
                match text_of(Some(r)) {
                    Some(name) => answer.removed.push(name),
                    None => return Err(shape_error(chat, STEP, "\"removed\" must list names")),
                }
            }
            answer.reason = text_of(p.get("reason"));
        }
        Some(_) => return Err(shape_error(chat, STEP, "\"profile\" must be an object")),
    }
    let sizes = (shown, known);
    answer.user = statements(
        chat,
        list(chat, o, "user_knowledge")?,
        sizes,
        "user knowledge",
        warnings,
    )?;
    answer.assistant = statements(
        chat,
        list(chat, o, "assistant_knowledge")?,
        sizes,
        "assistant knowledge",
        warnings,
    )?;
    Ok(answer)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chat::{ChatRequest, ChatResponse};
    use crate::ErrorKind;
    use serde_json::json;

    struct Named;
    impl ChatModel for Named {
        fn model_id(&self) -> &str {
            "test:model"
        }
        fn complete(&self, _: &ChatRequest) -> Result<ChatResponse> {
            unreachable!("parsing never calls the model")
        }
    }

    #[test]
    fn numbers_map_to_positions_and_unshown_ones_are_dropped_with_a_warning() {
        let v = json!({
            "profile": {"dimensions": [
                {"name": "hobbies", "value": ["hiking", "chess"], "messages": [1, "3", 9]}
            ], "removed": ["diet"], "reason": "new hobby"},
            "user_knowledge": ["Ann has a dog", {"text": "Ann moved to Porto", "messages": ["[2]"], "replaces": "K2", "reason": "moved"}],
            "assistant_knowledge": [{"text": "The assistant suggested a trail", "messages": [0], "replaces": "K7"}]
        });
        let mut w = Vec::new();
        let a = parse(&Named, &v, 3, 2, &mut w).unwrap();
        assert_eq!(a.dimensions[0].value, "hiking, chess");
        assert_eq!(a.dimensions[0].messages, vec![0, 2]);
        assert_eq!(a.removed, vec!["diet"]);
        assert_eq!(a.reason.as_deref(), Some("new hobby"));
        assert_eq!(a.user[0].messages, Vec::<usize>::new());
        assert_eq!(a.user[1].messages, vec![1]);
        assert_eq!(a.user[1].replaces, Some(1));
        assert_eq!(a.assistant[0].messages, Vec::<usize>::new());
        assert_eq!(a.assistant[0].replaces, None);
        assert_eq!(w.len(), 3, "{w:?}");
        assert!(w[0].contains("message 9"), "{w:?}");
        assert!(w.iter().any(|x| x.contains("K7")), "{w:?}");
    }

    #[test]
    fn an_answer_of_the_wrong_shape_is_a_model_output_error() {
        for bad in [
            json!([1, 2]),
            json!({"profile": "hiking"}),
            json!({"profile": {"dimensions": [{"value": "x"}]}}),
            json!({"profile": {"dimensions": [{"name": "x"}]}}),
            json!({"user_knowledge": "Ann has a dog"}),
            json!({"assistant_knowledge": [{"messages": [1]}]}),
            json!({"assistant_knowledge": [7]}),
        ] {
            let err = parse(&Named, &bad, 2, 0, &mut Vec::new()).unwrap_err();
            assert_eq!(err.kind(), ErrorKind::ModelOutput, "{bad}");
            assert!(err.to_string().contains("test:model"), "{err}");
        }
        let empty = parse(&Named, &json!({}), 2, 0, &mut Vec::new()).unwrap();
        assert_eq!(empty, Answer::default());
    }
}
