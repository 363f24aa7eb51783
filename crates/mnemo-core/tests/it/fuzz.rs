//! Property tests of core's parsers over arbitrary and mutated input: the filter language, model
//! JSON repair, export records (import lines) and entity extraction. None may panic, every
//! refusal is a typed error, and what is accepted is what every later stage accepts.
//!
//! `MNEMO_FUZZ_CASES` sets the cases per property (default 1000); `scripts/fuzz.sh` runs these
//! with many more in release mode.

use mnemo_core::filter::{Op, TimeField, MAX_FILTER_IN_LIST};
use mnemo_core::*;
use proptest::prelude::*;
use serde_json::{json, Value};

fn config() -> ProptestConfig {
    ProptestConfig {
        cases: std::env::var("MNEMO_FUZZ_CASES")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(1000),
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

/// Object keys of the filter language, good and bad, and a few arbitrary ones.
fn filter_key() -> impl Strategy<Value = String> {
    prop_oneof![
        proptest::sample::select(vec![
            "AND",
            "and",
            "Or",
            "OR",
            "NOT",
            "not",
            "eq",
            "ne",
            "in",
            "nin",
            "gt",
            "gte",
            "lt",
            "lte",
            "contains",
            "between",
            "created_at",
            "updated_at",
            "metadata.topic",
            "metadata.",
            "topic",
            "n",
            "user_id",
            "agent_id",
            "metadata.run_id",
            "",
            "\u{0}",
            "a\"b",
            "a\\b",
        ])
        .prop_map(str::to_string),
        ".{0,10}",
    ]
}

fn leaf() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        any::<f64>().prop_map(|f| json!(f)),
        proptest::sample::select(vec![
            "2024-01-01T00:00:00Z",
            "0000-06-01T00:00:00Z",
            "9999-12-31T23:59:59+14:00",
            "yesterday",
            "",
            "food",
        ])
        .prop_map(|s| Value::String(s.to_string())),
        ".{0,16}".prop_map(Value::String),
    ]
}

/// A list of `n` small values, up to well past the in-list bound.
fn huge_list() -> impl Strategy<Value = Value> {
    (0usize..4 * MAX_FILTER_IN_LIST).prop_map(|n| Value::Array((0..n).map(Value::from).collect()))
}

/// Arbitrary JSON whose objects mostly use the filter language's keys, nested up to 24 deep.
fn filter_json() -> impl Strategy<Value = Value> {
    prop_oneof![4 => leaf(), 1 => huge_list()].prop_recursive(24, 256, 8, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            proptest::collection::vec((filter_key(), inner), 0..6)
                .prop_map(|kv| Value::Object(kv.into_iter().collect())),
        ]
    })
}

fn op() -> impl Strategy<Value = Op> {
    proptest::sample::select(vec![
        Op::Eq,
        Op::Ne,
        Op::In,
        Op::Nin,
        Op::Gt,
        Op::Gte,
        Op::Lt,
        Op::Lte,
        Op::Contains,
        Op::IContains,
        Op::Exists,
    ])
}

/// Filters built in code, as a library caller may: any shape, any operator on any value.
fn built_filter() -> impl Strategy<Value = Filter> {
    let leaf = prop_oneof![
        (filter_key(), op(), prop_oneof![leaf(), huge_list()])
            .prop_map(|(key, op, value)| Filter::Meta { key, op, value }),
        (any::<bool>(), op(), -62_135_596_800i64..253_402_300_799i64).prop_map(
            |(created, op, secs)| Filter::Time {
                field: if created {
                    TimeField::CreatedAt
                } else {
                    TimeField::UpdatedAt
                },
                op,
                at: chrono::DateTime::from_timestamp(secs, 0).unwrap_or_default(),
            }
        ),
    ];
    leaf.prop_recursive(64, 512, 6, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..6).prop_map(Filter::And),
            proptest::collection::vec(inner.clone(), 0..6).prop_map(Filter::Or),
            inner.prop_map(|f| Filter::Not(Box::new(f))),
        ]
    })
}

/// Text shaped like model answers: JSON punctuation, both quotes, escapes, fences, Python
/// literals, whitespace and arbitrary characters.
fn model_text() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        proptest::sample::select(vec![
            "{",
            "}",
            "[",
            "]",
            "\"",
            "'",
            "\\",
            ",",
            ":",
            " ",
            "\n",
            "\t",
            "```",
            "```json\n",
            "True",
            "None",
            "False",
            "null",
            "1e5",
            "-0",
            "\\u00",
            "\\'",
            "\u{0}",
            "é",
            "facts",
        ])
        .prop_map(str::to_string),
        ".{0,6}",
    ];
    proptest::collection::vec(piece, 0..60).prop_map(|p| p.concat())
}

fn json_value() -> impl Strategy<Value = Value> {
    leaf().prop_recursive(6, 64, 6, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
            proptest::collection::vec((".{0,8}", inner), 0..5)
                .prop_map(|kv| Value::Object(kv.into_iter().collect())),
        ]
    })
}

/// A JSON object or array, as models are asked for.
fn json_container() -> impl Strategy<Value = Value> {
    prop_oneof![
        proptest::collection::vec(json_value(), 0..5).prop_map(Value::Array),
        proptest::collection::vec((".{0,8}", json_value()), 0..5)
            .prop_map(|kv| Value::Object(kv.into_iter().collect())),
    ]
}

/// Prose around a model's JSON: words without brackets or quotes.
fn prose() -> impl Strategy<Value = String> {
    "[a-zA-Z0-9 .!?\n]{0,40}"
}

/// One edit of a text: delete, insert or replace a character, or cut the rest off.
#[derive(Debug, Clone)]
enum Edit {
    Delete(usize),
    Insert(usize, char),
    Replace(usize, char),
    Truncate(usize),
}

fn edits() -> impl Strategy<Value = Vec<Edit>> {
    let ch = prop_oneof![
        proptest::sample::select(vec![
            '{', '}', '[', ']', '"', '\'', '\\', ',', ':', ' ', 'T'
        ]),
        any::<char>(),
    ];
    let edit = prop_oneof![
        any::<usize>().prop_map(Edit::Delete),
        (any::<usize>(), ch.clone()).prop_map(|(i, c)| Edit::Insert(i, c)),
        (any::<usize>(), ch).prop_map(|(i, c)| Edit::Replace(i, c)),
        any::<usize>().prop_map(Edit::Truncate),
    ];
    proptest::collection::vec(edit, 1..6)
}

fn apply(text: &str, edits: &[Edit]) -> String {
    let mut chars: Vec<char> = text.chars().collect();
    for e in edits {
        let n = chars.len();
        match *e {
            Edit::Delete(i) if n > 0 => {
                chars.remove(i % n);
            }
            Edit::Insert(i, c) => chars.insert(i % (n + 1), c),
            Edit::Replace(i, c) if n > 0 => chars[i % n] = c,
            Edit::Truncate(i) => chars.truncate(i % (n + 1)),
            _ => {}
        }
    }
    chars.into_iter().collect()
}

/// Scope parts as import files may carry them: valid, padded, empty, spaced, invisible, long,
/// absent or of the wrong type.
fn scope_part() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        proptest::sample::select(vec![
            "alice",
            " alice ",
            "",
            "   ",
            "a b",
            "a\tb",
            "ali\u{200B}ce",
            "\u{FEFF}x",
            "é-ü.x@y",
        ])
        .prop_map(|s| Value::String(s.to_string())),
        (1usize..200).prop_map(|n| Value::String("x".repeat(n))),
        ".{0,8}".prop_map(Value::String),
        any::<i64>().prop_map(Value::from),
    ]
}

fn memory_line(user: Value, agent: Value, run: Value) -> Value {
    json!({"type": "memory", "id": "01a2308d-d164-7305-b45e-a01819e97608", "memory": "tea",
           "kind": "fact", "state": "active", "user_id": user, "agent_id": agent, "run_id": run,
           "metadata": {"k": 1}, "hash": "", "created_at": "2020-01-01T00:00:00Z",
           "updated_at": "2020-01-01T00:00:00Z", "expires_at": null, "valid_from": null,
           "valid_until": null, "actor": null, "role": "user", "sources": [],
           "access_count": 0, "last_accessed_at": null})
}

fn message_line(user: Value, agent: Value, run: Value) -> Value {
    json!({"type": "message", "id": "01a2308d-d164-7305-b45e-a01819e97608", "user_id": user,
           "agent_id": agent, "run_id": run, "session_id": null, "role": "user", "name": null,
           "content": "hi", "created_at": "2020-01-01T00:00:00Z"})
}

/// A record with arbitrary scope parts and some fields replaced.
fn record_line() -> impl Strategy<Value = String> {
    (
        any::<bool>(),
        scope_part(),
        scope_part(),
        scope_part(),
        proptest::collection::vec((filter_key(), leaf()), 0..3),
    )
        .prop_map(|(memory, u, a, r, changes)| {
            let mut rec = if memory {
                memory_line(u, a, r)
            } else {
                message_line(u, a, r)
            };
            for (k, v) in changes {
                rec[k] = v;
            }
            rec.to_string()
        })
}

/// An export line: a record, mutated text of one, or arbitrary text.
fn export_line() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => record_line(),
        1 => (record_line(), edits()).prop_map(|(t, e)| apply(&t, &e)),
        1 => ".{0,60}",
    ]
}

/// The scope a record carries, as its three columns.
fn columns(user: &Option<String>, agent: &Option<String>, run: &Option<String>) -> [String; 3] {
    [user, agent, run].map(|p| p.clone().unwrap_or_default())
}

proptest! {
    #![proptest_config(config())]

    /// Any JSON: no filter, a filter the checks for code-built filters accept too, or an
    /// invalid-input refusal.
    #[test]
    fn fuzz_filter_from_json(v in filter_json()) {
        match Filter::from_json(&v) {
            Ok(Some(f)) => prop_assert!(f.validate().is_ok(), "parsed but invalid: {v}"),
            Ok(None) => {}
            Err(e) => prop_assert_eq!(e.kind(), ErrorKind::InvalidInput, "{}", e),
        }
    }

    /// A filter built in code is accepted or refused as invalid input, whatever its shape.
    #[test]
    fn fuzz_filter_validate(f in built_filter()) {
        if let Err(e) = f.validate() {
            prop_assert_eq!(e.kind(), ErrorKind::InvalidInput, "{}", e);
        }
    }

    /// Arbitrary model text: a value or a reasoned refusal.
    #[test]
    fn fuzz_model_json_arbitrary(raw in model_text()) {
        if let Err(e) = parse_model_json(&raw) {
            prop_assert!(!e.reason.is_empty());
        }
    }

    /// Valid JSON with a few characters deleted, inserted or replaced, in prose or a fence.
    #[test]
    fn fuzz_model_json_mutated(
        v in json_container(),
        before in prose(),
        fenced in any::<bool>(),
        e in edits(),
    ) {
        let body = if fenced { format!("```json\n{v}\n```") } else { v.to_string() };
        let raw = apply(&format!("{before}{body}"), &e);
        if let Err(e) = parse_model_json(&raw) {
            prop_assert!(!e.reason.is_empty());
        }
    }

    /// Valid JSON in prose or a fence reads back as the strict parser reads it alone.
    #[test]
    fn fuzz_model_json_wrapped(
        v in json_container(),
        before in prose(),
        after in prose(),
        fenced in any::<bool>(),
        pretty in any::<bool>(),
    ) {
        let text = if pretty {
            serde_json::to_string_pretty(&v).unwrap_or_default()
        } else {
            v.to_string()
        };
        let raw = if fenced {
            format!("{before}```json\n{text}\n```{after}")
        } else {
            format!("{before}{text}{after}")
        };
        // Compared with what the strict parser reads (serde_json rounds some long floats).
        let strict: Option<Value> = serde_json::from_str(&text).ok();
        prop_assert!(strict.is_some());
        prop_assert_eq!(parse_model_json(&raw).ok(), strict, "{}", raw);
    }

    /// Import lines: a record is read only with a valid scope, stored in normalised form; any
    /// other line is a refusal (which the import surfaces report as invalid input).
    #[test]
    fn fuzz_export_record_lines(line in export_line()) {
        if let Ok(rec) = serde_json::from_str::<ExportRecord>(&line) {
            let (scope, cols) = match &rec {
                ExportRecord::Memory(m) => (m.scope(), columns(&m.user_id, &m.agent_id, &m.run_id)),
                ExportRecord::Message(m) => (m.scope(), columns(&m.user_id, &m.agent_id, &m.run_id)),
                // A link has no scope of its own; the store checks both ends when importing.
                ExportRecord::Link(_) => return Ok(()),
                // Owner columns of history and entity records, and the index texts, pages,
                // segments and idempotency results, are checked by the store on import.
                _ => return Ok(()),
            };
            let scope = scope.map_err(|e| TestCaseError::fail(format!("{line}: {e}")))?;
            let want = [
                scope.user_id().map(|v| v.to_string()).unwrap_or_default(),
                scope.agent_id().map(|v| v.to_string()).unwrap_or_default(),
                scope.run_id().map(|v| v.to_string()).unwrap_or_default(),
            ];
            prop_assert_eq!(cols, want);
        }
    }

    /// Entity extraction (run on every added text and query) takes any text.
    #[test]
    fn fuzz_entity_extraction(text in prop_oneof![model_text(), ".{0,200}"]) {
        let found = extract_entities(&text);
        prop_assert!(found.iter().all(|m| !m.normalized.is_empty()));
    }
}

#[test]
fn code_built_filters_with_a_scalar_in_list_are_refused() {
    for op in [Op::In, Op::Nin] {
        let f = Filter::Meta {
            key: "tag".into(),
            op,
            value: json!("a"),
        };
        let err = f.validate().unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidInput);
        assert!(err.to_string().contains("take a list"), "{err}");
    }
}
