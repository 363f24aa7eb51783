//! Verb patterns: working, living, moving, studying, marrying and joining ("I work at X"),
//! roles ("a student at X"), likes and dislikes ("I love hiking"), and ages ("I turned 40").

use super::{boundary, entity, subject_before};
use crate::entity::{listed, Kind};
use crate::relation::lexicon::{liking, verb, DETERMINERS, OBJECT_STOP};
use crate::relation::rules::{Found, Name, Sentence};
use crate::relation::{ObjectKind, ORGANIZATION, PERSON, PLACE, THING};

/// "I work at X", "Ana lives in X", "we moved to X", "I'm married to X", "I joined X".
pub(super) fn verb_object(cx: &Sentence<'_, '_>, k: usize, out: &mut Vec<Found>) {
    let Some((predicate, preps)) = verb(cx.word(k)) else {
        return;
    };
    let mut j = k + 1;
    if predicate == "works_at" && cx.word(j) == "as" {
        // "I work as a nurse at X": the preposition within four words.
        match (j + 1..(j + 5).min(cx.end)).find(|&m| matches!(cx.word(m), "at" | "for")) {
            Some(m) if (j + 1..m).all(|w| cx.tokens[w].kind == Kind::Word) => j = m,
            _ => return,
        }
    }
    if predicate == "moved_to" && cx.word(j) == "back" {
        j += 1;
    }
    let direct = preps.is_empty()
        || (cx.word(k) == "married" && cx.tokens.get(j).is_some_and(|t| t.capitalised()));
    if !direct {
        if !preps.contains(&cx.word(j)) {
            return;
        }
        j += 1;
    }
    let Some(object) = named_object(cx, j) else {
        return;
    };
    let object_type = match predicate {
        "lives_in" | "moved_to" => PLACE,
        "partner_of" if object.entity_type == entity::PERSON => PERSON,
        "partner_of" => return,
        _ => ORGANIZATION,
    };
    let Some((subject, _)) = subject_before(cx, k, None) else {
        return;
    };
    let span = (k.saturating_sub(1), object.next);
    let mut push = |predicate| {
        out.push(Found {
            subject: subject.clone(),
            predicate,
            object: entity(&object, object_type),
            object_kind: ObjectKind::Entity,
            span,
        })
    };
    push(predicate);
    // A move states the new home too; the store's supersession closes the old one.
    if predicate == "moved_to" {
        push("lives_in");
    }
}

/// After an object name: anything but another name or a possessive continuation.
/// The name a verb or role takes as its object at word `j` ("at the Louvre": an optional
/// "the" first): a whole name, not a possessive ("at Ana's"), not run on into another name.
fn named_object(cx: &Sentence<'_, '_>, j: usize) -> Option<Name> {
    let j = if cx.word(j) == "the" { j + 1 } else { j };
    cx.name(j)
        .filter(|n| !n.possessive && boundary_or_word(cx, n.next))
}

fn boundary_or_word(cx: &Sentence<'_, '_>, k: usize) -> bool {
    k >= cx.end || !cx.tokens[k].capitalised()
}

/// "I'm a student at X", "Ana is a member of X", "I go to school at X".
pub(super) fn role_at(cx: &Sentence<'_, '_>, k: usize, out: &mut Vec<Found>) {
    let (predicate, prep, subject_end) = match cx.word(k) {
        "student" if matches!(cx.word(k.wrapping_sub(1)), "a" | "an") => {
            ("studies_at", "at", k - 1)
        }
        "member" if matches!(cx.word(k.wrapping_sub(1)), "a" | "an") => ("member_of", "of", k - 1),
        "school"
            if cx.word(k.wrapping_sub(1)) == "to"
                && matches!(cx.word(k.wrapping_sub(2)), "go" | "goes" | "going") =>
        {
            ("studies_at", "at", k - 2)
        }
        _ => return,
    };
    if cx.word(k + 1) != prep {
        return;
    }
    let Some(object) = named_object(cx, k + 2) else {
        return;
    };
    let Some((subject, _)) = subject_before(cx, subject_end, None) else {
        return;
    };
    out.push(Found {
        subject,
        predicate,
        object: entity(&object, ORGANIZATION),
        object_kind: ObjectKind::Entity,
        span: (subject_end.saturating_sub(1), object.next),
    });
}

/// "I love hiking", "Ana likes Coldplay", "I don't like crowds", "I can't stand X",
/// "I'm a big fan of X".
pub(super) fn likes(cx: &Sentence<'_, '_>, k: usize, out: &mut Vec<Found>) {
    let w = cx.word(k);
    let mut negated = false;
    let (mut predicate, subject, first_person) = match w {
        "stand" if matches!(cx.word(k.wrapping_sub(1)), "can't" | "cannot") => {
            let s = subject_before(cx, k - 1, None);
            ("dislikes", s, None)
        }
        "fan" if cx.word(k + 1) == "of" => {
            // "I'm a (big/huge) fan of X"
            let mut a = k.wrapping_sub(1);
            if matches!(cx.word(a), "big" | "huge" | "great" | "massive") {
                a = a.wrapping_sub(1);
            }
            if cx.word(a) != "a" {
                return;
            }
            ("likes", subject_before(cx, a, None), None)
        }
        _ => {
            let Some(p) = liking(w) else { return };
            let s = subject_before(cx, k, Some(&mut negated));
            (p, s, Some(!w.ends_with('s')))
        }
    };
    let Some((subject, is_me)) = subject else {
        return;
    };
    // Agreement: "I like" and "Ana likes", never "people like Ana" read backwards.
    if first_person.is_some_and(|f| f != is_me) {
        return;
    }
    if negated {
        predicate = if predicate == "likes" {
            "dislikes"
        } else {
            return;
        };
    }
    // "I love the colour": a definite object is mostly a reaction to something at hand (a
    // photo, a dish), not a lasting taste, so it is not read.
    let j = if w == "fan" { k + 2 } else { k + 1 };
    let object = if cx.tokens.get(j).is_some_and(|t| t.capitalised()) && j < cx.end {
        let Some(n) = cx.name(j).filter(|n| !n.possessive) else {
            return;
        };
        if !boundary(cx, n.next) {
            // "Nintendo games", "Italian food": a name qualifying a noun is a literal phrase.
            let Some((rest, next)) = literal_phrase(cx, n.next).filter(|(_, m)| *m <= n.next + 2)
            else {
                return;
            };
            return out.push(Found {
                subject,
                predicate,
                object: (format!("{} {rest}", n.text), THING),
                object_kind: ObjectKind::Literal,
                span: (k.saturating_sub(1), next),
            });
        }
        let t = match n.entity_type {
            entity::PERSON => PERSON,
            entity::PLACE => PLACE,
            _ => THING,
        };
        (entity(&n, t), ObjectKind::Entity, n.next)
    } else {
        let Some((phrase, next)) = literal_phrase(cx, j) else {
            return;
        };
        ((phrase, THING), ObjectKind::Literal, next)
    };
    out.push(Found {
        subject,
        predicate,
        object: object.0,
        object_kind: object.1,
        span: (k.saturating_sub(1), object.2),
    });
}

/// One to three lower-case words from `j` that end at a boundary and do not start with a
/// pronoun, determiner or other word that makes the phrase no object.
fn literal_phrase(cx: &Sentence<'_, '_>, j: usize) -> Option<(String, usize)> {
    if j >= cx.end || listed(OBJECT_STOP, cx.word(j)) {
        return None;
    }
    let mut m = j;
    while m < cx.end && m < j + 4 && !boundary(cx, m) {
        let t = &cx.tokens[m];
        if t.kind != Kind::Word || t.capitalised() || t.text.contains(['\'', '’']) {
            return None;
        }
        m += 1;
    }
    // A phrase cut before a determiner ("making this cake") is half a noun phrase.
    if m == j || m == j + 4 || !boundary(cx, m) || listed(DETERMINERS, cx.word(m)) {
        return None;
    }
    Some((
        cx.text[cx.tokens[j].start..cx.tokens[m - 1].end].to_string(),
        m,
    ))
}

/// "I'm 32 years old", "Ana is 5 years old", "I turned 40".
pub(super) fn age(cx: &Sentence<'_, '_>, k: usize, out: &mut Vec<Found>) {
    let (number, subject_end) = match cx.word(k) {
        "old" if cx.word(k.wrapping_sub(1)) == "years" => (k.wrapping_sub(2), k.wrapping_sub(2)),
        "turned" => (k + 1, k),
        _ => return,
    };
    let Some(t) = cx
        .tokens
        .get(number)
        .filter(|t| t.kind == Kind::Number && number >= cx.start && number < cx.end)
    else {
        return;
    };
    let valid = t.text.parse::<u32>().is_ok_and(|n| (1..=120).contains(&n));
    let after = cx.word(k + 2);
    let age_like = boundary(cx, k + 2) || matches!(after, "years" | "yesterday" | "today" | "last");
    if !valid || (cx.word(k) == "turned" && !age_like) {
        return;
    }
    let Some((subject, _)) = subject_before(cx, subject_end, None) else {
        return;
    };
    out.push(Found {
        subject,
        predicate: "age",
        object: (t.text.to_string(), THING),
        object_kind: ObjectKind::Literal,
        span: (subject_end.saturating_sub(1), k + 1),
    });
}
