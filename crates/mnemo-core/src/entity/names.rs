//! Names: runs of capitalised words (with connectors such as `of`), the words that are never
//! names, and whether a run is a person, a place or another name.

use super::dates::{date_at, MONTHS, WEEKDAYS};
use super::extract::{listed, Kind, Token};
use super::{EntityMention, NAME, PERSON, PLACE};
use std::collections::HashSet;

/// Capitalised words that are never names on their own, compared in lower case.
const STOPWORDS: &str = "\
    a about absolutely actually after ah all also always amazing an and any anyone anything \
    anyway are as at aw awesome aww be because before but by bye can congrats congratulations \
    cool could dear definitely did do does dr each even every everyone everything exactly \
    first for from get give glad go good great had haha has have he hello her here hey hi his \
    hmm hope how i if in is it its just keep last later let lol look love make maybe me might \
    mr mrs ms must my never next nice no nobody nope not nothing now of often oh ok okay omg \
    on once or our please prof really remember see she should since so some someone something \
    sometimes soon sorry still sure take tell thank thanks that the their them then there \
    these they this those to today tomorrow tonight totally try uh um us was we well were what \
    when where which who why will wish with would wow yeah yep yes yesterday you your";

/// Words before a capitalised run that make it a place.
const PLACE_PREPS: &str = "\
    across around at from in inside into near outside through toward towards visit visited \
    visiting";

/// Words before `to` that make the run after it a place (`went to Paris`, not `talked to Mel`).
const MOTION: &str = "\
    back came come coming drive driving drove flew fly flying go goes going gone headed \
    heading move moved moving relocated return returned travel traveled traveling travelled \
    travelling trip way went";

/// Lower-case words allowed between capitalised words of one name.
const CONNECTORS: &str = "da de del der du la le of van von";

/// Words that make a multi-word name a place or organisation rather than a person.
const NON_PERSON: &str = "\
    academy airport association avenue bank bay beach bridge cafe castle center centre church \
    city club college company corp county east festival foundation gallery group hall hospital \
    hotel inc institute island islands kingdom lake las library los market mount mountains \
    museum national new north palace park republic restaurant river road saint san school \
    society south st stadium states station street team theater theatre tower united \
    university valley west";

/// Splits a trailing contraction or possessive off a word: the base, whether it was a
/// possessive, and whether the word was a negation (`Don't`), which is never a name.
pub(crate) fn split_word(word: &str) -> (&str, bool, bool) {
    let lower = word.to_lowercase().replace('’', "'");
    if lower.ends_with("n't") {
        return (word, false, true);
    }
    for suffix in ["'s", "'m", "'re", "'ve", "'ll", "'d"] {
        if lower.ends_with(suffix) {
            // The apostrophe may be one or three bytes; cut at its char boundary.
            let cut = word
                .char_indices()
                .rev()
                .nth(suffix.len() - 1)
                .map_or(0, |c| c.0);
            return (&word[..cut], suffix == "'s", false);
        }
    }
    (word, false, false)
}

/// Whether a capitalised token may be part of a name at all.
fn nameable<'a>(t: &Token<'a>) -> Option<(&'a str, bool)> {
    let (base, possessive, negation) = split_word(t.text);
    let lower = base.to_lowercase();
    let calendar = MONTHS.contains(&lower.as_str())
        || WEEKDAYS
            .iter()
            .any(|d| lower == *d || lower == format!("{d}s"));
    (!negation && !base.is_empty() && !calendar && !listed(STOPWORDS, &lower))
        .then_some((base, possessive))
}

/// A run of capitalised words starting at token `i`.
pub(crate) fn name_at(
    tokens: &[Token<'_>],
    i: usize,
    text: &str,
    common: &HashSet<String>,
) -> (usize, Option<EntityMention>) {
    let Some((base, mut ended)) = nameable(&tokens[i]) else {
        return (1, None);
    };
    let mut words = vec![base.to_string()];
    let mut j = i + 1;
    while !ended {
        let joinable = |k: usize| {
            tokens
                .get(k)
                .filter(|t| t.capitalised() && !t.newline_before)
                .filter(|_| date_at(tokens, k, text).is_none())
                .and_then(nameable)
        };
        if let Some((base, possessive)) = joinable(j) {
            words.push(base.to_string());
            (ended, j) = (possessive, j + 1);
        } else if let (Some(c), Some((base, possessive))) = (tokens.get(j), joinable(j + 1)) {
            if c.kind != Kind::Word || c.newline_before || !listed(CONNECTORS, c.text) {
                break;
            }
            words.extend([c.text.to_string(), base.to_string()]);
            (ended, j) = (possessive, j + 2);
        } else {
            break;
        }
    }
    let mut prev = i.checked_sub(1).map(|p| &tokens[p]);
    let mut prev2 = i.checked_sub(2).map(|p| &tokens[p]);
    let first = words[0].to_lowercase();
    let ordinary = looks_ordinary(&first);
    if tokens[i].sentence_start && (ordinary || common.contains(&first)) {
        words.remove(0);
        while words.first().is_some_and(|w| listed(CONNECTORS, w)) {
            words.remove(0);
        }
        (prev2, prev) = (prev, Some(&tokens[i]));
    }
    if words.is_empty() {
        return (j - i, None);
    }
    let prev = prev.filter(|p| p.kind == Kind::Word).map(Token::lower);
    let prev2 = prev2.filter(|p| p.kind == Kind::Word).map(Token::lower);
    let entity_type = classify(&words, prev.as_deref(), prev2.as_deref());
    (
        j - i,
        Some(EntityMention::new(words.join(" "), entity_type)),
    )
}

/// Whether a sentence's first word reads like a gerund or an adverb (`Painting`, `Honestly`)
/// rather than a name; the endings are chosen to spare names such as `Emily` or `Sally`.
fn looks_ordinary(lower: &str) -> bool {
    const ADVERB_ENDINGS: [&str; 10] = [
        "ably", "ally", "ibly", "kily", "ntly", "ssly", "stly", "tely", "ully", "usly",
    ];
    let len = lower.chars().count();
    (len > 4 && lower.ends_with("ing"))
        || (len > 6 && ADVERB_ENDINGS.iter().any(|e| lower.ends_with(e)))
}

fn classify(words: &[String], prev: Option<&str>, prev2: Option<&str>) -> &'static str {
    let after_place_word = match prev {
        Some("to") => prev2.is_some_and(|p| listed(MOTION, p)),
        Some(p) => listed(PLACE_PREPS, p),
        None => false,
    };
    if after_place_word {
        return PLACE;
    }
    // Title case, letters only, not an acronym: `Smith`, `O'Brien`, `Jean-Luc`, `McDonald`.
    let plain = |w: &String| {
        w.chars().next().is_some_and(char::is_uppercase)
            && w.chars().any(char::is_lowercase)
            && w.chars()
                .all(|c| c.is_alphabetic() || matches!(c, '-' | '\'' | '’'))
    };
    let personal = words.iter().all(plain)
        && words.len() <= 3
        && !words.iter().any(|w| listed(NON_PERSON, &w.to_lowercase()));
    if personal {
        PERSON
    } else {
        NAME
    }
}
