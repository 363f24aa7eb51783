//! Output and error reporting: one JSON shape for errors, exit codes by error kind.

use mnemo_core::{Error, ErrorKind};
use serde::Serialize;

/// Exit status for each error kind (0 is success, 1 an error that is not mnemo's own).
pub fn exit_code(kind: ErrorKind) -> i32 {
    match kind {
        ErrorKind::InvalidInput => 2,
        ErrorKind::NotFound => 3,
        ErrorKind::Conflict => 4,
        ErrorKind::Unauthorized => 5,
        ErrorKind::RateLimited => 6,
        ErrorKind::Unavailable => 7,
        ErrorKind::Internal => 8,
        ErrorKind::ModelOutput => 9,
    }
}

pub fn report_error(err: &anyhow::Error, json: bool) -> i32 {
    let (kind, code) = match (
        err.downcast_ref::<Error>(),
        err.downcast_ref::<mnemo_server::ApiError>(),
    ) {
        (Some(e), _) => (e.kind().as_str(), exit_code(e.kind())),
        (None, Some(e)) => match e.kind {
            mnemo_server::ApiKind::Core(k) => (k.as_str(), exit_code(k)),
            other => (other.as_str(), 2),
        },
        (None, None) => ("internal", 1),
    };
    if json {
        let body = serde_json::json!({"error": {"kind": kind, "message": format!("{err:#}")}});
        println!("{body}");
    } else {
        eprintln!("error ({kind}): {err:#}");
    }
    code
}

pub fn print_json<T: Serialize>(value: &T) -> anyhow::Result<()> {
    println!("{}", serde_json::to_string(value)?);
    Ok(())
}

pub fn parse_json_arg(field: &str, raw: &str) -> Result<serde_json::Value, Error> {
    serde_json::from_str(raw).map_err(|e| Error::invalid(field, format!("not valid JSON: {e}")))
}

pub fn parse_time_arg(field: &str, raw: &str) -> Result<mnemo_core::Timestamp, Error> {
    mnemo_core::filter::parse_rfc3339(field, raw)
}

pub fn human_memory(m: &mnemo_core::Memory) -> String {
    let mut line = format!("{}  {}", m.id, m.text);
    if !m.metadata.is_empty() {
        line.push_str(&format!(
            "  {}",
            serde_json::Value::Object(m.metadata.clone())
        ));
    }
    if let Some(e) = m.expires_at {
        line.push_str(&format!("  (expires {})", e.to_rfc3339()));
    }
    line
}
