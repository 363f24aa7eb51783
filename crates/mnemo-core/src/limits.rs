//! Bounds on what one request may carry, so the work a request causes follows an input of
//! bounded size. Each bound is checked once, in core or in the facade's validation, so every
//! surface (library, CLI, REST, Mem0 routes, MCP) meets the same ones; a value over a bound is
//! an invalid-input error whose message names the bound.
//!
//! Bounds checked next to their parsers are re-exported here, so this module lists them all.

use crate::error::{Error, Result};
use crate::memory::Timestamp;
use crate::text::has_visible_content;
use chrono::Datelike;

pub use crate::filter::{
    MAX_FILTER_CONDITIONS, MAX_FILTER_DEPTH, MAX_FILTER_IN_LIST, MAX_FILTER_KEYS,
};
pub use crate::scope::MAX_SCOPE_PART_LEN;
pub use crate::search::MAX_TOP_K;
pub use crate::text::{MAX_INDEXED_TOKENS, MAX_TOKEN_CHARS};

/// The longest memory or message text, in characters (64 Ki): a long document, far more than
/// an embedder reads (a few hundred tokens) or a turn of conversation needs.
pub const MAX_TEXT_CHARS: usize = 65_536;

/// The longest search query, in characters (16 Ki).
pub const MAX_QUERY_CHARS: usize = 16_384;

/// The most messages one add may carry; each becomes a memory in raw mode, with an embedding.
/// The server's batch routes take as many adds per request.
pub const MAX_MESSAGES_PER_ADD: usize = 1_000;

/// The years a timestamp given as input may fall in: RFC 3339's four-digit years, without the
/// year 0 (which is 1 BC in chrono's proleptic calendar).
pub const TIMESTAMP_YEARS: std::ops::RangeInclusive<i32> = 1..=9999;

/// One input rule for every store and surface: no text given as input may hold U+0000 (NUL).
/// PostgreSQL cannot store it in text or JSON and SQLite could; refusing it at the boundary,
/// naming the field, keeps every store taking exactly the same input (and a SQLite store
/// movable to PostgreSQL).
pub fn check_no_nul(field: &str, text: &str) -> Result<()> {
    match text.find('\0') {
        None => Ok(()),
        Some(at) => Err(Error::invalid(
            field,
            format!("contains a NUL character (U+0000) at byte {at}; NUL is refused in every text"),
        )),
    }
}

/// [`check_no_nul`] for every key and string of a JSON value (metadata, filters); the field
/// named is the path to the first offender (`metadata.a.b`, `metadata.tags[2]`).
pub fn check_json_no_nul(field: &str, value: &serde_json::Value) -> Result<()> {
    fn walk(path: &mut String, v: &serde_json::Value) -> std::result::Result<(), String> {
        match v {
            serde_json::Value::String(s) if s.contains('\0') => Err(path.clone()),
            serde_json::Value::Array(items) => {
                for (i, item) in items.iter().enumerate() {
                    let len = path.len();
                    path.push_str(&format!("[{i}]"));
                    walk(path, item)?;
                    path.truncate(len);
                }
                Ok(())
            }
            serde_json::Value::Object(map) => {
                for (k, item) in map {
                    let len = path.len();
                    path.push('.');
                    path.push_str(&k.replace('\0', "\\u0000"));
                    if k.contains('\0') {
                        return Err(path.clone());
                    }
                    walk(path, item)?;
                    path.truncate(len);
                }
                Ok(())
            }
            _ => Ok(()),
        }
    }
    let mut path = field.to_string();
    walk(&mut path, value).map_err(|at| {
        Error::invalid(
            &at,
            "contains a NUL character (U+0000) in a key or value; NUL is refused in every text",
        )
    })
}

/// A memory or message text: something visible (not only whitespace, control or format
/// characters) and at most [`MAX_TEXT_CHARS`] characters.
pub fn check_text(field: &str, text: &str) -> Result<()> {
    if !has_visible_content(text) {
        return Err(Error::invalid(field, "must not be empty"));
    }
    check_no_nul(field, text)?;
    check_chars(field, text, MAX_TEXT_CHARS)
}

/// At most `max` characters; a longer text is refused with both lengths in the message.
pub fn check_chars(field: &str, text: &str, max: usize) -> Result<()> {
    // Bytes bound characters from above: most texts need no count.
    if text.len() > max {
        let n = text.chars().count();
        if n > max {
            return Err(Error::invalid(
                field,
                format!("is {n} characters long; the limit is {max} characters"),
            ));
        }
    }
    Ok(())
}

/// A timestamp given as input falls in [`TIMESTAMP_YEARS`].
pub fn check_timestamp(field: &str, t: Timestamp) -> Result<Timestamp> {
    if TIMESTAMP_YEARS.contains(&t.year()) {
        return Ok(t);
    }
    Err(Error::invalid(
        field,
        format!(
            "year {} is out of range; timestamps must fall in the years {:04} to {}",
            t.year(),
            TIMESTAMP_YEARS.start(),
            TIMESTAMP_YEARS.end()
        ),
    ))
}

/// The first `max` characters of a text (the whole text when it is shorter).
pub fn truncate_chars(text: &str, max: usize) -> &str {
    match text.char_indices().nth(max) {
        Some((at, _)) => &text[..at],
        None => text,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ErrorKind;

    #[test]
    fn texts_need_visible_content_and_fit_the_limit() {
        assert!(check_text("text", "hello").is_ok());
        assert!(check_text("text", &"é".repeat(MAX_TEXT_CHARS)).is_ok());
        for bad in ["", " \n", "\u{0}\u{0}", "\u{200B}\u{200D}\u{FEFF}"] {
            let e = check_text("text", bad).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::InvalidInput, "{bad:?}");
            assert!(e.to_string().contains("must not be empty"), "{e}");
        }
        let e = check_text("text", &"a".repeat(MAX_TEXT_CHARS + 1)).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidInput);
        assert!(e.to_string().contains("65536"), "{e}");
    }

    #[test]
    fn timestamps_stay_in_four_digit_years() {
        use chrono::TimeZone;
        let at = |y| chrono::Utc.with_ymd_and_hms(y, 1, 1, 0, 0, 0).unwrap();
        assert!(check_timestamp("timestamp", at(1)).is_ok());
        assert!(check_timestamp("timestamp", at(9999)).is_ok());
        // Mem0's `timestamp` is Unix seconds: -100,000,000,000 is the year -1199.
        let ancient = chrono::DateTime::from_timestamp(-100_000_000_000, 0).unwrap();
        for bad in [at(0), at(-1199), at(10_000), ancient] {
            let e = check_timestamp("timestamp", bad).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::InvalidInput);
            assert!(e.to_string().contains("9999"), "{e}");
        }
    }

    #[test]
    fn search_queries_are_visible_and_fit_the_limit() {
        let scope = crate::Scope::user("u").unwrap();
        let q = |text: String| crate::SearchRequest::new(scope.clone(), text, 10).validate();
        assert!(q("y".repeat(MAX_QUERY_CHARS)).is_ok());
        // The probe's quadratic query: 400,000 `y`s.
        let e = q("y".repeat(400_000)).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidInput);
        assert!(e.to_string().contains("16384"), "{e}");
        let e = q("\u{200B}\u{FEFF}".into()).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidInput);
    }

    #[test]
    fn truncation_keeps_whole_characters() {
        assert_eq!(truncate_chars("héllo", 2), "hé");
        assert_eq!(truncate_chars("hé", 5), "hé");
    }
}
