//! The identity rule stores apply to mentions from any extractor: the normal form names are
//! compared in, and when two normal forms are the same entity (a plural, or a small edit).

use super::CURRENCY;
use unicode_normalization::{char::is_combining_mark, UnicodeNormalization};

/// The form entity names are compared in: compatibility-decomposed with diacritics removed,
/// lower case, apostrophes and full stops dropped (`O'Brien` → `obrien`, `U.S.` → `us`), other
/// punctuation turned into spaces, whitespace collapsed, and a leading `the ` removed.
///
/// Hyphens between letters or digits stay (`jean-luc`), as do a decimal point (`12.5`), currency
/// signs and `%`; a comma between digits is a thousands separator and is dropped (`1,200`).
pub fn normalize_entity(name: &str) -> String {
    let chars: Vec<char> = name
        .to_lowercase()
        .nfkd()
        .filter(|c| !is_combining_mark(*c))
        .collect();
    let mut out = String::with_capacity(chars.len());
    for (i, &c) in chars.iter().enumerate() {
        let prev = i.checked_sub(1).map(|p| chars[p]);
        let next = chars.get(i + 1).copied();
        let between =
            |f: fn(&char) -> bool| prev.as_ref().is_some_and(f) && next.as_ref().is_some_and(f);
        match c {
            c if c.is_alphanumeric() || c == '%' || CURRENCY.contains(&c) => out.push(c),
            '-' if between(|c| c.is_alphanumeric()) => out.push('-'),
            '.' if between(char::is_ascii_digit) => out.push('.'),
            ',' if between(char::is_ascii_digit) => {}
            '\'' | '’' | '‘' | '.' => {}
            _ => out.push(' '),
        }
    }
    let collapsed = out.split_whitespace().collect::<Vec<_>>().join(" ");
    match collapsed.strip_prefix("the ") {
        Some(rest) => rest.to_string(),
        None => collapsed,
    }
}

/// The names `entities_match` accepts without an edit: `normalized` itself and its plural or
/// singular by a trailing `s`. A store can look these up by equality.
pub fn exact_match_variants(normalized: &str) -> Vec<String> {
    let mut out = vec![normalized.to_string()];
    if normalized.is_empty() || normalized.chars().any(|c| c.is_ascii_digit()) {
        return out;
    }
    if normalized.chars().count() >= 3 {
        out.push(format!("{normalized}s"));
    }
    if let Some(single) = normalized.strip_suffix('s') {
        if single.chars().count() >= 3 {
            out.push(single.to_string());
        }
    }
    out
}

/// The character lengths a name within `entities_match`'s edit distance of `normalized` can
/// have, or `None` when only the exact variants can match (digits, or too short to allow an
/// edit). A store scans this window for near matches and checks each with `entities_match`.
pub fn near_match_lengths(normalized: &str) -> Option<(usize, usize)> {
    let n = normalized.chars().count();
    if n < 5 || normalized.chars().any(|c| c.is_ascii_digit()) {
        return None;
    }
    // The edit limit follows the shorter name: up to 2 when both have 10+ characters, 1 from 5.
    Some((n.saturating_sub(2).max(5), n + 2))
}

/// The slice of an index on normalised names a store scans for near matches of `normalized`:
/// names in `from..before` (its first character up to the next one, in byte order) of
/// [`near_match_lengths`]' character lengths, each then checked with [`entities_match`];
/// `None` when only the exact variants can match.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NearWindow {
    pub from: String,
    pub before: String,
    pub shortest: usize,
    pub longest: usize,
}

/// [`NearWindow`] of `normalized`.
pub fn near_match_window(normalized: &str) -> Option<NearWindow> {
    let (shortest, longest) = near_match_lengths(normalized)?;
    let first = normalized.chars().next()?;
    Some(NearWindow {
        from: first.to_string(),
        before: char::from_u32(first as u32 + 1)
            .unwrap_or(char::MAX)
            .to_string(),
        shortest,
        longest,
    })
}

/// Whether two normalised names are the same entity: equal, or differing by a trailing plural
/// `s`, or within a small edit distance (1 when both have at least 5 characters, 2 when both
/// have at least 10). Names containing a digit match only when equal, so `2022` never merges
/// with `2023` nor `3 kids` with `4 kids`.
pub fn entities_match(a_normalized: &str, b_normalized: &str) -> bool {
    let (a, b) = (a_normalized, b_normalized);
    if a == b {
        return true;
    }
    if a.is_empty() || b.is_empty() || a.chars().chain(b.chars()).any(|c| c.is_ascii_digit()) {
        return false;
    }
    let (short, long) = if a.len() <= b.len() { (a, b) } else { (b, a) };
    if short.chars().count() >= 3 && long.strip_suffix('s') == Some(short) {
        return true;
    }
    let (la, lb) = (a.chars().count(), b.chars().count());
    let limit = match la.min(lb) {
        n if n >= 10 => 2,
        n if n >= 5 => 1,
        _ => return false,
    };
    levenshtein_within(a, b, limit, &mut 0).is_some()
}

/// The edit distance of `a` and `b` when it is at most `limit`, else `None`. Only the cells
/// within `limit` of the diagonal are computed (and the walk stops once every one of a row
/// exceeds `limit`), so the cost is (2·limit + 1) cells a character rather than the product of
/// the lengths: names reach a store from any text. `cells` counts the cells computed.
pub(super) fn levenshtein_within(
    a: &str,
    b: &str,
    limit: usize,
    cells: &mut usize,
) -> Option<usize> {
    let (a, b): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
    if a.len().abs_diff(b.len()) > limit {
        return None;
    }
    // Any distance over `limit` is stored as `over`: cells outside the band read as that.
    let over = limit + 1;
    let mut prev: Vec<usize> = (0..=b.len()).map(|j| j.min(over)).collect();
    let mut cur = vec![over; b.len() + 1];
    for i in 1..=a.len() {
        let (lo, hi) = (i.saturating_sub(limit).max(1), (i + limit).min(b.len()));
        cur[lo - 1] = if lo == 1 { i.min(over) } else { over };
        for j in lo..=hi {
            *cells += 1;
            let substitute = prev[j - 1] + usize::from(a[i - 1] != b[j - 1]);
            cur[j] = substitute.min(prev[j] + 1).min(cur[j - 1] + 1).min(over);
        }
        // The next row reads one cell past this band; it must not be a stale one.
        if hi < b.len() {
            cur[hi + 1] = over;
        }
        if lo <= hi && cur[lo..=hi].iter().all(|d| *d > limit) {
            return None;
        }
        std::mem::swap(&mut prev, &mut cur);
    }
    Some(prev[b.len()]).filter(|d| *d <= limit)
}
