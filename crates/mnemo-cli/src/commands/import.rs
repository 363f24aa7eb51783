//! `mnemo import`: JSON lines, each an export record (`{"type": "memory" | "message", …}`, as
//! `mnemo export` writes them) or a message / memory to add raw (`{"content": …}` or
//! `{"memory": …}`, with optional scope, role, name, metadata and times). Every refusal is an
//! invalid-input error naming the line; nothing of a refused line reaches the store.

use crate::args::ScopeArgs;
use crate::io::outln;
use crate::io::print_json;
use anyhow::Context;
use mnemo::{AddInput, AddRequest, Memory};
use mnemo_core::*;
use std::io::{BufRead, Write};

/// What one non-blank line asks for.
#[derive(Debug)]
pub(super) enum ImportLine {
    /// An export record, restored as it was (its scope checked while it was read).
    Record(ExportRecord),
    /// A message or memory to add raw.
    Add(Box<AddRequest>),
}

/// The refusal of line `n`, keeping the cause's reason.
fn at_line(n: usize, reason: impl std::fmt::Display) -> Error {
    Error::invalid(format!("line {n}"), reason.to_string())
}

/// Reads line `n` of an import file (1-based). `scope` fills the parts a line leaves out.
pub(super) fn parse_line(raw: &str, scope: &ScopeArgs, n: usize) -> Result<ImportLine, Error> {
    let value: serde_json::Value =
        serde_json::from_str(raw).map_err(|e| at_line(n, format!("not JSON: {e}")))?;
    if value.get("type").is_some() {
        let rec: ExportRecord = serde_json::from_value(value).map_err(|e| at_line(n, e))?;
        return Ok(ImportLine::Record(rec));
    }
    line_to_request(&value, scope)
        .map(|r| ImportLine::Add(Box::new(r)))
        .map_err(|e| match e {
            Error::InvalidInput { field, reason } => at_line(n, format!("{field}: {reason}")),
            other => at_line(n, other),
        })
}

/// A message / memory line as the raw add it asks for.
fn line_to_request(line: &serde_json::Value, scope: &ScopeArgs) -> Result<AddRequest, Error> {
    let obj = line
        .as_object()
        .ok_or_else(|| Error::invalid("line", "must be a JSON object"))?;
    let get = |k: &str| obj.get(k).and_then(|v| v.as_str()).map(str::to_string);
    let scope = Scope::from_parts(
        get("user_id").or(scope.user_id.clone()).as_deref(),
        get("agent_id").or(scope.agent_id.clone()).as_deref(),
        get("run_id").or(scope.run_id.clone()).as_deref(),
    )?;
    let timestamp = ["timestamp", "created_at"]
        .iter()
        .find_map(|k| obj.get(*k))
        .map(|v| mnemo_core::filter::parse_time("timestamp", v))
        .transpose()?;
    let input = if let Some(content) = get("content") {
        let role = get("role").unwrap_or_else(|| "user".into()).parse()?;
        AddInput::Messages(vec![InputMessage {
            role,
            content,
            name: get("name"),
        }])
    } else if let Some(text) = get("memory").or(get("text")) {
        AddInput::Text(text)
    } else {
        return Err(Error::invalid(
            "line",
            "needs `content` (a message) or `memory` (a text)",
        ));
    };
    Ok(AddRequest {
        scope,
        input,
        metadata: obj.get("metadata").cloned(),
        expires_at: obj
            .get("expires_at")
            .map(|v| mnemo_core::filter::parse_time("expires_at", v))
            .transpose()?,
        timestamp,
        idempotency_key: get("idempotency_key"),
        infer: Some(false),
        memory_type: None,
        instructions: None,
        session_id: get("session_id"),
        request_id: None,
        actor: None,
        note: Default::default(),
    })
}

/// Imports `file` in batches of `batch_size` lines' worth of adds and records.
pub(super) async fn run(
    memory: &Memory,
    scope: &ScopeArgs,
    batch_size: usize,
    file: &std::path::Path,
    json: bool,
) -> anyhow::Result<()> {
    let reader = std::io::BufReader::new(
        std::fs::File::open(file).with_context(|| format!("opening {}", file.display()))?,
    );
    let lines: Vec<String> = reader.lines().collect::<Result<_, _>>()?;
    let bar = indicatif::ProgressBar::new(lines.len() as u64);
    bar.set_style(
        indicatif::ProgressStyle::with_template("{bar:40} {pos}/{len} lines  {per_sec}  eta {eta}")
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
    );
    let (mut added, mut restored) = (0u64, 0u64);
    let mut pending_adds: Vec<AddRequest> = Vec::new();
    let mut pending_records: Vec<ExportRecord> = Vec::new();
    let batch_size = batch_size.clamp(1, 10_000);
    for (i, raw) in lines.iter().enumerate() {
        // Blank lines are skipped, but still reach the flush below when they end the file.
        if !raw.trim().is_empty() {
            match parse_line(raw, scope, i + 1)? {
                ImportLine::Record(rec) => pending_records.push(rec),
                ImportLine::Add(req) => pending_adds.push(*req),
            }
        }
        let last = i + 1 == lines.len();
        if pending_adds.len() >= batch_size || (last && !pending_adds.is_empty()) {
            let outcomes = memory.add_many(std::mem::take(&mut pending_adds)).await?;
            let ids: Vec<MemoryId> = outcomes
                .iter()
                .flat_map(|o| o.results.iter().map(|r| r.id))
                .collect();
            added += ids.len() as u64;
            if json {
                // Each line acknowledges a committed batch.
                let mut out = crate::io::Stdout;
                writeln!(out, "{}", serde_json::json!({"acknowledged": ids}))?;
                out.flush()?;
            }
        }
        // Export records are restored together at the end, in one transaction: later records
        // (index texts, history, entity links, pages) refer back to earlier memories.
        if last && !pending_records.is_empty() {
            restored += memory
                .import_records(std::mem::take(&mut pending_records))
                .await?;
        }
        bar.inc(1);
    }
    bar.finish_and_clear();
    if json {
        print_json(&serde_json::json!({"imported": {"added": added, "restored": restored}}))?;
    } else {
        outln!("imported: {added} added, {restored} restored from export records");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::{json, Value};

    fn scope(user: Option<&str>) -> ScopeArgs {
        ScopeArgs {
            user_id: user.map(str::to_string),
            agent_id: None,
            run_id: None,
        }
    }

    fn memory_record(user_id: Value, agent_id: Value) -> Value {
        json!({"type": "memory", "id": "01a2308d-d164-7305-b45e-a01819e97608", "memory": "tea",
               "kind": "raw", "state": "active", "user_id": user_id, "agent_id": agent_id,
               "run_id": null, "metadata": {}, "hash": "", "created_at": "2020-01-01T00:00:00Z",
               "updated_at": "2020-01-01T00:00:00Z", "expires_at": null, "valid_from": null,
               "valid_until": null, "actor": null, "role": "user", "sources": [],
               "access_count": 0, "last_accessed_at": null})
    }

    fn refusal(raw: &str) -> String {
        let err = parse_line(raw, &scope(None), 7).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidInput, "{raw}");
        assert!(err.to_string().contains("line 7"), "{err}");
        err.to_string()
    }

    #[test]
    fn records_with_a_missing_or_invalid_scope_are_refused_naming_the_line() {
        for (user, agent) in [
            (json!(null), json!(null)),
            (json!(""), json!(null)),
            (json!("a b"), json!(null)),
            (json!("ok"), json!("bad\u{200B}id")),
            (json!("x".repeat(129)), json!(null)),
        ] {
            refusal(&memory_record(user, agent).to_string());
        }
        let message = json!({"type": "message", "id": "01a2308d-d164-7305-b45e-a01819e97608",
            "user_id": null, "agent_id": null, "run_id": null, "session_id": null,
            "role": "user", "name": null, "content": "hi", "created_at": "2020-01-01T00:00:00Z"});
        assert!(refusal(&message.to_string()).contains("at least one"));
        // A valid record is read, its scope normalised.
        let ok = parse_line(
            &memory_record(json!(" alice "), json!(null)).to_string(),
            &scope(None),
            1,
        )
        .unwrap();
        let ImportLine::Record(ExportRecord::Memory(m)) = ok else {
            panic!("a memory record")
        };
        assert_eq!(m.user_id.as_deref(), Some("alice"));
    }

    #[test]
    fn add_lines_name_the_line_in_every_refusal() {
        for bad in [
            "[1]",
            "{\"content\": \"hi\"}",
            "{\"user_id\": \"u\"}",
            "{\"user_id\": \"u\", \"content\": \"hi\", \"role\": \"boss\"}",
            "{\"user_id\": \"u\", \"memory\": \"hi\", \"timestamp\": \"yesterday\"}",
            "{\"user_id\": \"u\", \"memory\": \"hi\", \"expires_at\": 5}",
            "not json",
        ] {
            refusal(bad);
        }
    }

    fn cases() -> u32 {
        std::env::var("MNEMO_FUZZ_CASES")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(1000)
    }

    /// Strings an import line is made of: field names, scope parts good and bad, times, roles.
    fn word() -> impl Strategy<Value = String> {
        prop_oneof![
            proptest::sample::select(vec![
                "type",
                "memory",
                "message",
                "content",
                "text",
                "role",
                "name",
                "user_id",
                "agent_id",
                "run_id",
                "session_id",
                "metadata",
                "timestamp",
                "created_at",
                "expires_at",
                "idempotency_key",
                "id",
                "kind",
                "state",
                "sources",
                "user",
                "assistant",
                "raw",
                "fact",
                "active",
                "2024-01-01T00:00:00Z",
                "0000-01-01T00:00:00Z",
                "9999-12-31T23:59:59Z",
                "",
                " ",
                "a b",
                "\u{200B}",
                "01a2308d-d164-7305-b45e-a01819e97608",
            ])
            .prop_map(str::to_string),
            ".{0,12}",
        ]
    }

    fn value() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(Value::from),
            any::<f64>().prop_map(|f| json!(f)),
            word().prop_map(Value::String),
        ];
        leaf.prop_recursive(3, 32, 6, |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                proptest::collection::vec((word(), inner), 0..6)
                    .prop_map(|kv| Value::Object(kv.into_iter().collect())),
            ]
        })
    }

    /// A valid memory record with some fields replaced by arbitrary values.
    /// Scope parts as files carry them: valid, padded, empty, spaced, invisible, long, absent.
    fn scope_part() -> impl Strategy<Value = Value> {
        prop_oneof![
            Just(Value::Null),
            proptest::sample::select(vec![
                "u",
                " u ",
                "",
                " ",
                "a b",
                "a\tb",
                "u\u{200B}",
                "\u{FEFF}u",
                "\u{0}",
            ])
            .prop_map(|s| json!(s)),
            (120usize..140).prop_map(|n| json!("x".repeat(n))),
        ]
    }

    /// A memory or message record with arbitrary scope parts and some fields replaced.
    fn mutated_record() -> impl Strategy<Value = String> {
        (
            [scope_part(), scope_part(), scope_part()],
            proptest::collection::vec((word(), value()), 0..3),
            any::<bool>(),
        )
            .prop_map(|([user, agent, run], changes, message)| {
                let mut rec = memory_record(user, agent);
                rec["run_id"] = run;
                if message {
                    rec["type"] = json!("message");
                }
                for (k, v) in changes {
                    rec[k] = v;
                }
                rec.to_string()
            })
    }

    proptest! {
        #![proptest_config(ProptestConfig {
            cases: cases(),
            failure_persistence: None,
            ..ProptestConfig::default()
        })]

        /// Any line: read, or refused as invalid input naming the line; what is read carries a
        /// valid, normalised scope.
        #[test]
        fn fuzz_import_lines(
            raw in prop_oneof![
                1 => value().prop_map(|v| v.to_string()),
                3 => mutated_record(),
                1 => ".{0,80}",
            ],
            user in proptest::option::of(word()),
        ) {
            match parse_line(&raw, &scope(user.as_deref()), 3) {
                Ok(ImportLine::Record(ExportRecord::Memory(m))) => {
                    let s = m.scope().map_err(|e| TestCaseError::fail(e.to_string()))?;
                    prop_assert_eq!(m.user_id.as_deref(), s.user_id().map(|v| v.as_str()));
                }
                Ok(ImportLine::Record(ExportRecord::Message(m))) => {
                    prop_assert!(m.scope().is_ok());
                }
                // Links carry no scope of their own: the store checks both ends on import.
                Ok(ImportLine::Record(ExportRecord::Link(_))) => {}
                // Checked by the store on import (scopes, ends, vectors).
                Ok(ImportLine::Record(_)) => {}
                // An add's `Scope` cannot exist invalid: parsing it is the check.
                Ok(ImportLine::Add(_)) => {}
                Err(e) => {
                    prop_assert_eq!(e.kind(), ErrorKind::InvalidInput);
                    prop_assert!(e.to_string().contains("line 3"), "{}", e);
                }
            }
        }
    }
}
