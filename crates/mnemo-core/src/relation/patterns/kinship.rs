//! Kinship and pet patterns: "my sister Ana", "Ana is my sister", "Caroline's husband Tom",
//! "my dog Max", "a dog named Biscuit", "we adopted a puppy".

use super::{boundary, entity, person, subject_before};
use crate::entity::listed;
use crate::relation::lexicon::{describes, kin, pet, MODIFIERS, PET_DETERMINERS, PET_VERBS};
use crate::relation::rules::{End, Found, Name, Sentence};
use crate::relation::{ObjectKind, PERSON, PET, THING};

/// "my sister Ana", "our kids Tom and Ana", "Ana, my sister", "Ana is my sister",
/// "Caroline's husband Tom", "Caroline's husband is Tom", "my sister's name is Ana", "my dog Max".
pub(super) fn kinship(cx: &Sentence<'_, '_>, k: usize, out: &mut Vec<Found>) {
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
pub(super) fn pet_named(cx: &Sentence<'_, '_>, k: usize, out: &mut Vec<Found>) {
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
pub(super) fn pet_unnamed(cx: &Sentence<'_, '_>, k: usize, out: &mut Vec<Found>) {
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
