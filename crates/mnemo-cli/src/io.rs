//! Output and error reporting: one JSON shape for errors, exit codes by error kind.

use mnemo_core::{Error, ErrorKind};
use serde::Serialize;
use std::sync::atomic::{AtomicBool, Ordering};

/// Set once stdout's reader has gone away (`mnemo list | head -1`): later output is dropped.
static STDOUT_GONE: AtomicBool = AtomicBool::new(false);
/// Set when writing to stdout failed for another reason (a full disk behind `>`): exit 1.
static STDOUT_FAILED: AtomicBool = AtomicBool::new(false);

/// Standard output for every command's results. A closed pipe is not an error: the command runs
/// to its end (what it writes to the store is never cut short) and exits 0 with the rest of its
/// output dropped, as `head` expects of a producer. Any other write error is reported once on
/// stderr and makes the exit status 1 ([`output_status`]).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Stdout;

impl Stdout {
    /// A write error ends output: a closed pipe quietly, anything else reported once.
    fn check<T>(r: std::io::Result<T>, done: T) -> std::io::Result<T> {
        let Err(e) = r else { return r };
        if e.kind() != std::io::ErrorKind::BrokenPipe
            && !STDOUT_FAILED.swap(true, Ordering::Relaxed)
        {
            eprintln!("error: cannot write to standard output: {e}");
        }
        STDOUT_GONE.store(true, Ordering::Relaxed);
        Ok(done)
    }
}

impl std::io::Write for Stdout {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if STDOUT_GONE.load(Ordering::Relaxed) {
            return Ok(buf.len());
        }
        Self::check(std::io::stdout().lock().write(buf), buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        if STDOUT_GONE.load(Ordering::Relaxed) {
            return Ok(());
        }
        Self::check(std::io::stdout().lock().flush(), ())
    }
}

/// The process's exit status as far as output goes: 1 when stdout failed other than by a closed
/// pipe, else 0.
pub(crate) fn output_status() -> i32 {
    use std::io::Write as _;
    let _ = Stdout.flush();
    i32::from(STDOUT_FAILED.load(Ordering::Relaxed))
}

/// `println!` through [`Stdout`].
macro_rules! outln {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        // Stdout never fails: errors are recorded for the exit status.
        let _ = writeln!($crate::io::Stdout, $($arg)*);
    }};
}

/// `print!` through [`Stdout`].
macro_rules! out {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = write!($crate::io::Stdout, $($arg)*);
    }};
}
pub(crate) use {out, outln};

/// Exit status for each error kind (0 is success, 1 an error that is not mnemo's own).
pub(crate) fn exit_code(kind: ErrorKind) -> i32 {
    match kind {
        ErrorKind::InvalidInput => 2,
        ErrorKind::NotFound => 3,
        ErrorKind::Conflict => 4,
        ErrorKind::Unauthorized => 5,
        ErrorKind::RateLimited => 6,
        ErrorKind::Unavailable => 7,
        ErrorKind::Internal => 8,
        ErrorKind::ModelOutput => 9,
        ErrorKind::Corrupt => 10,
    }
}

pub(crate) fn report_error(err: &anyhow::Error, json: bool) -> i32 {
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
        outln!("{body}");
    } else {
        eprintln!("error ({kind}): {err:#}");
    }
    code
}

pub(crate) fn print_json<T: Serialize>(value: &T) -> anyhow::Result<()> {
    outln!("{}", serde_json::to_string(value)?);
    Ok(())
}

pub(crate) fn parse_json_arg(field: &str, raw: &str) -> Result<serde_json::Value, Error> {
    serde_json::from_str(raw).map_err(|e| Error::invalid(field, format!("not valid JSON: {e}")))
}

pub(crate) fn parse_time_arg(field: &str, raw: &str) -> Result<mnemo_core::Timestamp, Error> {
    mnemo_core::filter::parse_rfc3339(field, raw)
}

pub(crate) fn human_memory(m: &mnemo_core::Memory) -> String {
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
    if let Some(t) = &m.event_time {
        line.push_str(&format!(
            "  (happened {})",
            mnemo_core::pack::dates::when(t)
        ));
    }
    line
}
