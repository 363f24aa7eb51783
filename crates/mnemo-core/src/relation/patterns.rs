//! The patterns, each anchored on one closed-list word: kinship and pet nouns, named pets, verbs
//! of working/living/moving/studying/marrying/joining, verbs of liking, and ages.

use super::lexicon::{
    describes, kin, liking, pet, verb, AUX, DETERMINERS, MODIFIERS, NOT_CURRENT, OBJECT_END,
    OBJECT_STOP, PET_DETERMINERS, PET_VERBS,
};
use super::rules::{End, Found, Name, Sentence};
use super::{ObjectKind, ORGANIZATION, PERSON, PET, PLACE, THING};
use crate::entity::{self, listed, Kind};

/// Tries every pattern at every token of the sentence, in text order.
pub(super) fn walk(cx: &Sentence<'_, '_>, out: &mut Vec<Found>) {
    for k in cx.start..cx.end {
        let (base, _) = cx.base(k);
        if kin(base).is_some() || pet(base).is_some() {
            kinship(cx, k, out);
        }
        if matches!(base, "named" | "called") {
            pet_named(cx, k, out);
        } else if PET_VERBS.split_whitespace().any(|w| w == base) {
            pet_unnamed(cx, k, out);
        }
        if verb(base).is_some() {
            verb_object(cx, k, out);
        }
        if matches!(base, "student" | "member" | "school") {
            role_at(cx, k, out);
        }
        if liking(base).is_some() || base == "stand" || base == "fan" {
            likes(cx, k, out);
        }
        if base == "old" || base == "turned" {
            age(cx, k, out);
        }
    }
}

fn entity(n: &Name, entity_type: &'static str) -> End {
    (n.text.clone(), entity_type)
}

/// Person names by the entity rules' typing (single and plain multi-word names).
fn person(n: Option<Name>) -> Option<Name> {
    n.filter(|n| n.entity_type == entity::PERSON)
}

/// Whether token `k` ends a phrase: punctuation, the sentence's end, or a closing word.
fn boundary(cx: &Sentence<'_, '_>, k: usize) -> bool {
    k >= cx.end || cx.tokens[k].kind == Kind::Punct || listed(OBJECT_END, cx.word(k))
}

/// The subject of a verb at `k`: walks back over auxiliaries and adverbs (at most four); a
/// word that puts the verb out of the present or negates it yields nothing. `negated` reports
/// "don't"/"do not" so that "I don't like" can read as a dislike.
fn subject_before(
    cx: &Sentence<'_, '_>,
    k: usize,
    negated: Option<&mut bool>,
) -> Option<(End, bool)> {
    let mut j = k.checked_sub(1)?;
    let mut negation = false;
    for _ in 0..4 {
        if j < cx.start {
            return None;
        }
        let w = cx.word(j);
        if matches!(w, "don't" | "doesn't" | "not" | "never") && negated.is_some() {
            negation = true;
        } else if listed(NOT_CURRENT, w) {
            return None;
        } else if !listed(AUX, w) {
            break;
        }
        j = j.checked_sub(1)?;
    }
    let subject = cx.subject_at(j)?;
    if let Some(flag) = negated {
        *flag = negation;
    }
    Some(subject)
}

/// "my sister Ana", "our kids Tom and Ana", "Ana, my sister", "Ana is my sister",
/// "Caroline's husband Tom", "Caroline's husband is Tom", "my sister's name is Ana", "my dog Max".
fn kinship(cx: &Sentence<'_, '_>, k: usize, out: &mut Vec<Found>) {
    let (base, possessive) = cx.base(k);
    let (predicate, plural) = match (kin(base), pet(base)) {
        (Some(kin), _) => kin,
        (None, Some(_)) => ("has_pet", base.ends_with('s')),
        _ => return,
    };
    let is_pet = predicate == "has_pet";
    // The possessor: `my`/`our` or a possessive name, past up to two modifiers.
    let mut p = k;
    for _ in 0..3 {
        p = match p.checked_sub(1) {
            Some(p) if p >= cx.start => p,
            _ => return,
        };
        if !listed(MODIFIERS, cx.word(p)) {
            break;
        }
    }
    let (anchor, anchor_start) = if matches!(cx.word(p), "my" | "our") {
        match cx.first_person(p) {
            Some(me) => (me, p),
            None => return,
        }
    } else {
        match person(cx.name_ending_at(p)).filter(|n| n.possessive) {
            Some(n) => (entity(&n, PERSON), n.start),
            None => return,
        }
    };
    let emit = |relative: &Name, out: &mut Vec<Found>, span: (usize, usize)| {
        if is_pet {
            out.push(Found {
                subject: anchor.clone(),
                predicate: "has_pet",
                object: entity(relative, PET),
                object_kind: ObjectKind::Entity,
                span,
            });
            if let Some(kind) = pet(base).filter(|kind| *kind != "pet") {
                out.push(Found {
                    subject: entity(relative, PET),
                    predicate: "is_a",
                    object: (kind.to_string(), THING),
                    object_kind: ObjectKind::Literal,
                    span,
                });
            }
        } else {
            out.push(Found {
                subject: entity(relative, PERSON),
                predicate,
                object: anchor.clone(),
                object_kind: ObjectKind::Entity,
                span,
            });
        }
    };
    let named = |n: Option<Name>| if is_pet { n } else { person(n) };
    if possessive {
        // "my sister's name is Ana"
        let is = matches!(cx.word(k + 2), "is" | "was");
        if cx.word(k + 1) == "name" && is {
            if let Some(n) = named(cx.name(k + 3)).filter(|n| boundary(cx, n.next)) {
                emit(&n, out, (anchor_start, n.next));
            }
        }
        return;
    }
    // "my sister is Ana", "Caroline's husband is Tom": a present copula to one lone name (a
    // name going on into a possessive, "is Ana's friend", says something else; "is Dutch"
    // describes).
    if !plural && cx.word(k + 1) == "is" {
        let lone = |n: &Name| {
            !n.possessive && boundary(cx, n.next) && !n.text.split_whitespace().any(describes)
        };
        if let Some(n) = named(cx.name(k + 2)).filter(lone) {
            emit(&n, out, (anchor_start, n.next));
            return;
        }
    }
    let mut j = k + 1;
    if cx.word(j) == "," {
        j += 1;
    }
    let mut listed_names = 0;
    while let Some(n) = named(cx.name(j)) {
        emit(&n, out, (anchor_start, n.next));
        listed_names += 1;
        if !plural || listed_names == 4 {
            break;
        }
        j = n.next;
        if cx.word(j) == "," {
            j += 1;
        }
        if cx.word(j) == "and" {
            j += 1;
        }
    }
    if listed_names > 0 {
        return;
    }
    // "Ana, my sister" and "Ana is my sister": the name right before the possessor.
    let closed = matches!(
        cx.word(k + 1),
        "" | "," | "." | "!" | "?" | ";" | "and" | "who" | ")"
    );
    let linked = anchor_start >= cx.start + 2 && matches!(cx.word(anchor_start - 1), "," | "is");
    if !plural && closed && linked {
        let before = anchor_start - 2;
        if let Some(n) = named(cx.name_ending_at(before)).filter(|n| !n.possessive) {
            emit(&n, out, (before, k + 1));
            return;
        }
    }
    // "my dog" without a name: the owner has a pet of that kind ("my pets" says too little).
    if is_pet && pet(base) != Some("pet") {
        out.push(Found {
            subject: anchor,
            predicate: "has_pet",
            object: (pet(base).unwrap_or("pet").to_string(), THING),
            object_kind: ObjectKind::Literal,
            span: (anchor_start, k + 1),
        });
    }
}

/// "we adopted a dog named Biscuit", "Ana has a cat called Luna".
fn pet_named(cx: &Sentence<'_, '_>, k: usize, out: &mut Vec<Found>) {
    let Some(kind) = k.checked_sub(1).and_then(|p| pet(cx.word(p))) else {
        return;
    };
    let Some(name) = cx.name(k + 1).filter(|n| !n.possessive) else {
        return;
    };
    let Some((owner, from)) = pet_owner(cx, k - 1) else {
        return;
    };
    let span = (from, name.next);
    out.push(Found {
        subject: owner,
        predicate: "has_pet",
        object: entity(&name, PET),
        object_kind: ObjectKind::Entity,
        span,
    });
    if kind != "pet" {
        out.push(Found {
            subject: entity(&name, PET),
            predicate: "is_a",
            object: (kind.to_string(), THING),
            object_kind: ObjectKind::Literal,
            span,
        });
    }
}

/// "we adopted a puppy", "I have two cats": the owner and the kind as a literal.
fn pet_unnamed(cx: &Sentence<'_, '_>, k: usize, out: &mut Vec<Found>) {
    // The pet noun within three words after the verb ("a", "two", "little", "rescue").
    let Some(at) = (k + 1..(k + 4).min(cx.end)).find(|&j| pet(cx.base(j).0).is_some()) else {
        return;
    };
    let between_ok = (k + 1..at).all(|j| {
        let w = cx.word(j);
        listed(PET_DETERMINERS, w) || listed(MODIFIERS, w)
    });
    let named_next = matches!(cx.word(at + 1), "named" | "called") || cx.name(at + 1).is_some();
    if !between_ok || named_next || cx.base(at).1 {
        return;
    }
    let Some((owner, _)) = subject_before(cx, k, None) else {
        return;
    };
    let kind = pet(cx.base(at).0).unwrap_or("pet");
    // "I have two cats, Mochi and Tofu": the names after a comma.
    let mut j = at + 2;
    let mut names = 0;
    while cx.word(j - 1) == "," || (names > 0 && cx.word(j - 1) == "and") {
        let Some(n) = cx.name(j).filter(|n| !n.possessive) else {
            break;
        };
        out.push(Found {
            subject: owner.clone(),
            predicate: "has_pet",
            object: entity(&n, PET),
            object_kind: ObjectKind::Entity,
            span: (k, n.next),
        });
        if kind != "pet" {
            out.push(Found {
                subject: entity(&n, PET),
                predicate: "is_a",
                object: (kind.to_string(), THING),
                object_kind: ObjectKind::Literal,
                span: (k, n.next),
            });
        }
        names += 1;
        j = n.next + 1;
        if names == 4 {
            break;
        }
    }
    if names > 0 {
        return;
    }
    out.push(Found {
        subject: owner,
        predicate: "has_pet",
        object: (kind.to_string(), THING),
        object_kind: ObjectKind::Literal,
        span: (k, at + 1),
    });
}

/// The owner before a pet noun at `noun`: a pet verb within four tokens back, then its subject.
fn pet_owner(cx: &Sentence<'_, '_>, noun: usize) -> Option<(End, usize)> {
    let lo = noun.saturating_sub(4).max(cx.start);
    let v = (lo..noun).rev().find(|&j| listed(PET_VERBS, cx.word(j)))?;
    let between_ok = (v + 1..noun).all(|j| {
        let w = cx.word(j);
        listed(PET_DETERMINERS, w) || listed(MODIFIERS, w)
    });
    between_ok.then_some(())?;
    Some((subject_before(cx, v, None)?.0, v))
}

/// "I work at X", "Ana lives in X", "we moved to X", "I'm married to X", "I joined X".
fn verb_object(cx: &Sentence<'_, '_>, k: usize, out: &mut Vec<Found>) {
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
    if cx.word(j) == "the" {
        j += 1;
    }
    let Some(object) = cx
        .name(j)
        .filter(|n| !n.possessive && boundary_or_word(cx, n.next))
    else {
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
fn boundary_or_word(cx: &Sentence<'_, '_>, k: usize) -> bool {
    k >= cx.end || !cx.tokens[k].capitalised()
}

/// "I'm a student at X", "Ana is a member of X", "I go to school at X".
fn role_at(cx: &Sentence<'_, '_>, k: usize, out: &mut Vec<Found>) {
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
    let mut j = k + 2;
    if cx.word(j) == "the" {
        j += 1;
    }
    let Some(object) = cx
        .name(j)
        .filter(|n| !n.possessive && boundary_or_word(cx, n.next))
    else {
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
fn likes(cx: &Sentence<'_, '_>, k: usize, out: &mut Vec<Found>) {
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
fn age(cx: &Sentence<'_, '_>, k: usize, out: &mut Vec<Found>) {
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
