//! Tolerant parsing of the JSON that chat models write.
//!
//! Models asked for JSON often wrap it in a markdown fence, talk before and after it, leave a
//! trailing comma, quote with `'` the way Python prints a dict, or write `True`/`None`.
//! [`parse_model_json`] accepts all of those and nothing worse:
//!
//! 1. fast path: the trimmed input as plain JSON;
//! 2. the body of the first markdown fence (three backticks opening a line), if there is one,
//!    and the whole input again when that body holds no JSON (the closing backticks may have
//!    been inside a string);
//! 3. the first `{` or `[` and its balanced closer, found by a scan that skips over strings of
//!    either quote kind;
//! 4. a rewrite of that span that only touches what lies outside strings (trailing commas,
//!    Python literals) and turns every string into a correctly escaped double-quoted one;
//! 5. `serde_json` on the result.
//!
//! Output cut off before its closing bracket is an error: a half-parsed value would look like a
//! complete but shorter answer, which is worse than a retry.

use serde_json::Value;

/// Why a model's output could not be read as JSON.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("model output is not usable JSON: {reason}")]
pub struct JsonRepairError {
    pub reason: String,
}

impl JsonRepairError {
    fn new(reason: impl Into<String>) -> Self {
        JsonRepairError {
            reason: reason.into(),
        }
    }
}

/// Parses the JSON object or array in a model's reply, repairing the usual slips.
///
/// A value that parses as plain JSON is returned unchanged. Otherwise candidate spans are tried
/// from left to right; a candidate that fails lets the search continue only after its end, so
/// a value nested inside a broken one is never returned in its place.
pub fn parse_model_json(raw: &str) -> Result<Value, JsonRepairError> {
    let trimmed = raw.trim();
    if let Ok(value) = serde_json::from_str::<Value>(trimmed) {
        return Ok(value);
    }
    let fenced = strip_fence(trimmed);
    match scan(fenced) {
        Ok(value) => Ok(value),
        // Three backticks inside a JSON string (a fact about markdown) are not a fence: then the
        // whole answer is read. The fence's error is the one reported.
        Err(e) if fenced.len() != trimmed.len() => scan(trimmed).map_err(|_| e),
        Err(e) => Err(e),
    }
}

/// Steps 3 to 5 over `text`: the first candidate span that repairs into JSON.
fn scan(text: &str) -> Result<Value, JsonRepairError> {
    let body: Vec<char> = text.chars().collect();
    let mut from = 0;
    let mut first_error: Option<JsonRepairError> = None;
    while let Some(start) = (from..body.len()).find(|&i| matches!(body[i], '{' | '[')) {
        let end = match balanced_end(&body, start) {
            Ok(end) => end,
            // Nothing after an unclosed opener can be trusted to be whole.
            Err(e) => return Err(first_error.unwrap_or(e)),
        };
        let repaired = rewrite(&body[start..=end]);
        match serde_json::from_str::<Value>(&repaired) {
            Ok(value) => return Ok(value),
            Err(e) => {
                first_error.get_or_insert_with(|| {
                    JsonRepairError::new(format!("invalid JSON after repair: {e}"))
                });
                from = end + 1;
            }
        }
    }
    Err(first_error.unwrap_or_else(|| JsonRepairError::new("no JSON object or array found")))
}

/// The text inside the first ``` fence (language tag dropped), or the whole input if there is
/// no fence. An unclosed fence runs to the end of the input.
fn strip_fence(text: &str) -> &str {
    let Some(open) = fence_start(text) else {
        return text;
    };
    let after = &text[open + 3..];
    // The language tag is the rest of the opening line (`json`, `JSON`, `javascript`, ...).
    let tag_len = after
        .find(|c: char| !c.is_ascii_alphanumeric() && c != '_' && c != '-')
        .unwrap_or(after.len());
    let inner = &after[tag_len..];
    match inner.find("```") {
        Some(close) => &inner[..close],
        None => inner,
    }
}

/// Where the first opening fence is: three backticks that begin a line (after spaces or tabs,
/// as markdown allows). Backticks elsewhere may sit inside a JSON string, and an answer whose
/// fence opens mid-line is still read whole.
fn fence_start(text: &str) -> Option<usize> {
    let mut at = 0;
    for line in text.split_inclusive('\n') {
        let indent = line.len() - line.trim_start_matches([' ', '\t']).len();
        if line[indent..].starts_with("```") {
            return Some(at + indent);
        }
        at += line.len();
    }
    None
}

/// Where the string opened by the quote at `open` closes, or `None` if it never does.
///
/// A quote of the opening kind closes the string only when what follows it (after spaces) could
/// follow a JSON string: `,` `:` `}` `]` or the end. That is exactly JSON's rule for valid
/// input, and it lets `'Alice's cat'` or `"he said "hi""` keep their inner quotes.
fn string_end(chars: &[char], open: usize) -> Option<usize> {
    let quote = chars[open];
    let mut i = open + 1;
    while i < chars.len() {
        match chars[i] {
            '\\' => i += 2,
            c if c == quote && closes_string(chars, i + 1) => return Some(i),
            _ => i += 1,
        }
    }
    None
}

/// Whether the quote at `i` can open a string: only where JSON allows a key or a value, so an
/// apostrophe in prose (`[it's]`) is not mistaken for the start of a string.
fn opens_string(chars: &[char], i: usize) -> bool {
    match chars[..i].iter().rev().find(|c| !c.is_whitespace()) {
        None => true,
        Some(c) => matches!(c, '{' | '[' | ',' | ':'),
    }
}

fn closes_string(chars: &[char], from: usize) -> bool {
    match chars[from..].iter().find(|c| !c.is_whitespace()) {
        None => true,
        Some(c) => matches!(c, ',' | ':' | '}' | ']'),
    }
}

/// Index of the bracket that closes the one at `start`, skipping strings.
fn balanced_end(chars: &[char], start: usize) -> Result<usize, JsonRepairError> {
    let mut expected: Vec<char> = Vec::new();
    let mut i = start;
    while i < chars.len() {
        match chars[i] {
            '"' | '\'' if opens_string(chars, i) => match string_end(chars, i) {
                Some(end) => i = end,
                None => break,
            },
            '{' => expected.push('}'),
            '[' => expected.push(']'),
            c @ ('}' | ']') => {
                if expected.pop() != Some(c) {
                    return Err(JsonRepairError::new(format!(
                        "mismatched brackets: unexpected '{c}'"
                    )));
                }
                if expected.is_empty() {
                    return Ok(i);
                }
            }
            _ => {}
        }
        i += 1;
    }
    Err(JsonRepairError::new(
        "unbalanced brackets: output looks truncated",
    ))
}

/// Rewrites a balanced span into strict JSON syntax, touching only what lies outside strings.
fn rewrite(span: &[char]) -> String {
    let mut out = String::with_capacity(span.len() + 8);
    let mut i = 0;
    while i < span.len() {
        let c = span[i];
        match c {
            '"' | '\'' if opens_string(span, i) => {
                let end = string_end(span, i).unwrap_or(span.len());
                push_string(&mut out, &span[i + 1..end.min(span.len())]);
                i = end + 1;
            }
            ',' if matches!(
                span[i + 1..].iter().find(|c| !c.is_whitespace()),
                Some('}' | ']')
            ) =>
            {
                i += 1;
            }
            c if c.is_alphabetic() || c == '_' => {
                let len = span[i..]
                    .iter()
                    .take_while(|c| c.is_alphanumeric() || **c == '_')
                    .count();
                let word: String = span[i..i + len].iter().collect();
                out.push_str(match word.as_str() {
                    "True" => "true",
                    "False" => "false",
                    "None" => "null",
                    other => other,
                });
                i += len;
            }
            _ => {
                out.push(c);
                i += 1;
            }
        }
    }
    out
}

/// Writes the body of a string of either quote kind as a double-quoted JSON string.
fn push_string(out: &mut String, body: &[char]) {
    out.push('"');
    let mut i = 0;
    while i < body.len() {
        let c = body[i];
        match c {
            '\\' => match body.get(i + 1) {
                Some('\'') => {
                    out.push('\'');
                    i += 1;
                }
                Some(&n @ ('"' | '\\' | '/' | 'b' | 'f' | 'n' | 'r' | 't' | 'u')) => {
                    out.push('\\');
                    out.push(n);
                    i += 1;
                }
                // An escape JSON does not know is read as a literal backslash.
                _ => out.push_str("\\\\"),
            },
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c.is_control() => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
        i += 1;
    }
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ok(raw: &str) -> Value {
        parse_model_json(raw).unwrap_or_else(|e| panic!("{raw:?} failed: {e}"))
    }

    #[test]
    fn plain_json_takes_the_fast_path() {
        assert_eq!(
            ok(r#" {"facts": ["a", "b"]} "#),
            json!({"facts": ["a", "b"]})
        );
    }

    #[test]
    fn fenced_json_with_and_without_language_tag() {
        let tagged = "```json\n{\"facts\": [\"likes tea\"]}\n```";
        assert_eq!(ok(tagged), json!({"facts": ["likes tea"]}));
        let bare = "```\n[1, 2]\n```";
        assert_eq!(ok(bare), json!([1, 2]));
        let upper = "Result:\n```JSON\n{\"a\": 1}\n``` done";
        assert_eq!(ok(upper), json!({"a": 1}));
    }

    #[test]
    fn prose_around_the_json_is_ignored() {
        let raw = "Sure! Here is the result: {\"facts\": [\"x\"]} Hope this helps";
        assert_eq!(ok(raw), json!({"facts": ["x"]}));
    }

    #[test]
    fn trailing_commas_are_dropped() {
        let raw = "{\"a\": [1, 2, 3,], \"b\": {\"c\": true,},}";
        assert_eq!(ok(raw), json!({"a": [1, 2, 3], "b": {"c": true}}));
    }

    #[test]
    fn single_quotes_become_double_quotes_and_apostrophes_survive() {
        let raw = r#"{'text': 'Alice\'s cat', 'note': 'say "hi"', "own": "Bob's dog"}"#;
        assert_eq!(
            ok(raw),
            json!({"text": "Alice's cat", "note": "say \"hi\"", "own": "Bob's dog"})
        );
        // Python repr style: an unescaped apostrophe inside a single-quoted string.
        assert_eq!(
            ok("{'text': 'Alice's cat'}"),
            json!({"text": "Alice's cat"})
        );
    }

    #[test]
    fn python_literals_map_outside_strings_only() {
        let raw = "{'ok': True, 'bad': False, 'none': None, 's': 'True None'}";
        assert_eq!(
            ok(raw),
            json!({"ok": true, "bad": false, "none": null, "s": "True None"})
        );
    }

    #[test]
    fn top_level_array_with_prose() {
        let raw = "Here you go: [{\"fact\": \"a\"}, {\"fact\": \"b\"},] Thanks";
        assert_eq!(ok(raw), json!([{"fact": "a"}, {"fact": "b"}]));
    }

    #[test]
    fn nested_objects_and_escaped_quotes() {
        let raw = r#"Output: {"a": {"b": {"c": [1, {"d": "he said \"no\""}]}}}"#;
        assert_eq!(
            ok(raw),
            json!({"a": {"b": {"c": [1, {"d": "he said \"no\""}]}}})
        );
    }

    #[test]
    fn brackets_inside_strings_do_not_count() {
        let raw = "note: {\"text\": \"use } and ] freely {\", 'x': '[unclosed'} bye";
        assert_eq!(
            ok(raw),
            json!({"text": "use } and ] freely {", "x": "[unclosed"})
        );
    }

    #[test]
    fn apostrophes_in_prose_before_the_json_are_not_strings() {
        let raw = "Notes [it's done] and the data: {'a': 1}";
        assert_eq!(ok(raw), json!({"a": 1}));
    }

    #[test]
    fn empty_fact_list() {
        assert_eq!(ok("```json\n{\"facts\": []}\n```"), json!({"facts": []}));
    }

    #[test]
    fn newlines_inside_strings_are_escaped() {
        assert_eq!(
            ok("{'a': 'line one\nline two',}"),
            json!({"a": "line one\nline two"})
        );
    }

    #[test]
    fn a_broken_outer_value_does_not_yield_an_inner_one() {
        let err = parse_model_json("{\"facts\": [{\"a\": 1}] oops}").unwrap_err();
        assert!(err.reason.starts_with("invalid JSON after repair"), "{err}");
    }

    #[test]
    fn garbage_is_an_error() {
        let err = parse_model_json("I cannot help with that.").unwrap_err();
        assert_eq!(err.reason, "no JSON object or array found");
        assert!(parse_model_json("").is_err());
    }

    #[test]
    fn truncated_output_is_an_error() {
        let err = parse_model_json("```json\n{\"facts\": [\"Alice likes tea\", \"Bo").unwrap_err();
        assert_eq!(err.reason, "unbalanced brackets: output looks truncated");
        let err = parse_model_json("{\"facts\": [\"a\", \"b\"]").unwrap_err();
        assert_eq!(err.reason, "unbalanced brackets: output looks truncated");
    }

    #[test]
    fn backticks_inside_a_string_are_not_a_fence() {
        // Found by `fuzz_model_json_wrapped`: the "fence" began inside the key.
        assert_eq!(ok("[[{\"```\": null}]]0"), json!([[{"```": null}]]));
        let raw = "Facts: {\"facts\": [\"Bob wraps code in ```rust fences\"]} done";
        assert_eq!(
            ok(raw),
            json!({"facts": ["Bob wraps code in ```rust fences"]})
        );
        // ...nor may they cut out a wrong value from the middle of the real one.
        assert_eq!(
            ok("{\"\": {\"```\": null}, \"b\": []}."),
            json!({"": {"```": null}, "b": []})
        );
        // A real fence whose closer sits inside a string still yields the whole value.
        let raw = "Here:\n```json\n{\"a\": \"use ``` here\", \"b\": [1]}\n``` ok";
        assert_eq!(ok(raw), json!({"a": "use ``` here", "b": [1]}));
    }

    #[test]
    fn mismatched_brackets_are_an_error() {
        let err = parse_model_json("{\"a\": [1, 2}").unwrap_err();
        assert!(err.reason.starts_with("mismatched brackets"), "{err}");
    }
}
