//! The words the relation rules look for. Every list is small and closed on purpose: a word that
//! is not here produces nothing, which is how the rules stay precise.

/// Substrings (ASCII lower case) one of which every text a rule can match contains; a text
/// with none of them costs one lower-casing pass and nothing else.
pub(super) const TRIGGERS: &[&str] = &[
    "my ",
    "our ",
    "'s ",
    "’s ",
    "work",
    "live",
    "moved",
    "relocated",
    "stud",
    "school",
    "attend",
    "named",
    "called",
    "love",
    "like",
    "hate",
    "enjoy",
    "adore",
    "fan of",
    "stand ",
    "married",
    "engaged",
    "member",
    "joined",
    "years old",
    "turned ",
    "dog",
    "cat",
    "pupp",
    "kitt",
    "bunny",
    "rabbit",
    "hamster",
    "parrot",
    "bird",
    "horse",
    "pony",
    "turtle",
    "tortoise",
    "snake",
    "lizard",
    "fish",
    "ferret",
    "gecko",
    "iguana",
    "budgie",
    "chinchilla",
    "pet",
];

/// Family and friendship nouns: the predicate `(relative, predicate, anchor)` they state and
/// whether the noun is plural (a plural may be followed by a list of names).
pub(super) fn kin(word: &str) -> Option<(&'static str, bool)> {
    let (singular, plural) = match word.strip_suffix('s') {
        Some(stem) if kin_singular(stem).is_some() => (stem, true),
        _ => (word, false),
    };
    let predicate = kin_singular(singular).or(match word {
        "children" => Some("child_of"),
        _ => None,
    })?;
    Some((predicate, plural || word == "children"))
}

fn kin_singular(word: &str) -> Option<&'static str> {
    Some(match word {
        "sister" | "brother" | "sibling" | "twin" | "sis" | "bro" => "sibling_of",
        "husband" | "wife" | "partner" | "boyfriend" | "girlfriend" | "fiance" | "fiancé"
        | "fiancee" | "fiancée" | "spouse" | "hubby" => "partner_of",
        "mother" | "father" | "mom" | "mum" | "dad" | "mommy" | "daddy" | "parent" | "stepmom"
        | "stepdad" | "stepmother" | "stepfather" => "parent_of",
        "son" | "daughter" | "child" | "kid" | "stepson" | "stepdaughter" => "child_of",
        "cousin" | "aunt" | "uncle" | "niece" | "nephew" | "grandma" | "grandpa"
        | "grandmother" | "grandfather" | "grandson" | "granddaughter" | "grandchild"
        | "grandparent" | "granny" | "grandkid" => "family_of",
        "friend" | "bff" | "buddy" | "pal" => "friend_of",
        _ => return None,
    })
}

/// Pet nouns; the singular is the pet's kind.
pub(super) fn pet(word: &str) -> Option<&'static str> {
    const PETS: &[&str] = &[
        "dog",
        "cat",
        "puppy",
        "kitten",
        "pup",
        "bunny",
        "rabbit",
        "hamster",
        "parrot",
        "bird",
        "horse",
        "pony",
        "turtle",
        "tortoise",
        "snake",
        "lizard",
        "fish",
        "goldfish",
        "ferret",
        "gecko",
        "iguana",
        "budgie",
        "chinchilla",
        "doggo",
        "kitty",
        "pet",
    ];
    let singular = word
        .strip_suffix('s')
        .filter(|s| PETS.contains(s))
        .unwrap_or(word);
    PETS.iter().copied().find(|p| *p == singular)
}

/// Words allowed between `my` and a kinship or pet noun ("my older sister", "my best friend").
pub(super) const MODIFIERS: &str = "\
    older younger little big baby elder eldest oldest youngest best dear good close twin \
    new old lovely sweet beloved late step adopted two three four first second";

/// Adverbs and auxiliaries allowed between a subject and its verb ("I have been working at").
pub(super) const AUX: &str = "\
    am 'm is are 're 's have 've has been just still now currently also recently finally \
    actually really already started start starting began begun absolutely totally truly \
    definitely so do does both all happily officially";

/// Words that put a verb out of the present or into the negative; a match through one of them
/// states nothing current ("I was working at", "I used to live in", "I don't work at").
pub(super) const NOT_CURRENT: &str = "\
    was were used had 'd would will could should might may to if not never don't doesn't \
    didn't won't wasn't can't no";

/// What a verb at this word states, and the prepositions that introduce its object.
pub(super) fn verb(word: &str) -> Option<(&'static str, &'static [&'static str])> {
    Some(match word {
        "work" | "works" | "working" => ("works_at", &["at", "for"]),
        "live" | "lives" | "living" | "reside" | "resides" | "residing" => ("lives_in", &["in"]),
        "moved" | "relocated" => ("moved_to", &["to"]),
        "study" | "studies" | "studying" => ("studies_at", &["at"]),
        "married" | "engaged" => ("partner_of", &["to"]),
        "joined" => ("member_of", &[]),
        _ => return None,
    })
}

/// Verbs of liking and the predicate each states.
pub(super) fn liking(word: &str) -> Option<&'static str> {
    Some(match word {
        "love" | "loves" | "like" | "likes" | "enjoy" | "enjoys" | "adore" | "adores" => "likes",
        "hate" | "hates" | "dislike" | "dislikes" | "detest" | "detests" => "dislikes",
        _ => return None,
    })
}

/// First words that make what follows a verb of liking no object worth keeping ("I love you",
/// "I like how…", "I love it when…").
pub(super) const OBJECT_STOP: &str = "\
    a an the another my your his her its our their you it this that these those them him me us \
    myself yourself to how when what where why who which whenever if so too that's it's \
    everything everyone everybody anything something nothing all both each every some any \
    having getting hearing seeing knowing doing about such as there here \
    more most much very lot lots one ones way thing things idea fact going coming trying \
    taking giving putting letting keeping feeling thinking looking";

/// Determiners and possessives: a phrase that stops right before one was cut short.
pub(super) const DETERMINERS: &str = "this the a an my your our his her their these those";

/// Words that end a lower-case object phrase.
pub(super) const OBJECT_END: &str = "\
    and or but with because when while so too to in at on for of about from by that this is \
    are was were as like than then since if though although very really also just now even \
    much more lot lots here there together again always sometimes every each which who";

/// Words allowed between a pet verb and its pet noun ("adopted this cute pup").
pub(super) const PET_DETERMINERS: &str = "\
    a an another this two three new little rescue cute adorable sweet tiny fluffy";

/// Verbs after which a subject takes a pet ("we adopted a dog named Biscuit").
pub(super) const PET_VERBS: &str = "\
    adopted adopt got get have has bought rescued found brought welcomed own owns";

/// Capitalised words that describe rather than name: after a copula ("my sister is Dutch",
/// "my brother is Catholic") they are no relative's name. Words ending in `-ish` or `-ese`
/// ("Spanish", "Chinese") are caught by their ending.
pub(super) const NOT_NAMES: &str = "\
    dutch french greek thai swiss german american mexican italian indian canadian australian \
    korean russian african asian european latina latino brazilian colombian cuban peruvian \
    chilean argentinian egyptian iranian iraqi israeli nigerian kenyan ukrainian norwegian \
    christian catholic muslim buddhist hindu mormon protestant atheist agnostic orthodox \
    republican democrat conservative liberal gay lesbian trans bi queer black white hispanic";

/// Whether a capitalised word describes rather than names (see [`NOT_NAMES`]).
pub(super) fn describes(word: &str) -> bool {
    let w = word.to_ascii_lowercase();
    let listed = crate::entity::listed;
    listed(NOT_NAMES, &w) || w.ends_with("ish") || w.ends_with("ese")
}
