//! Entity mentions: a rule-based extractor, the normal form names are compared in, and the rule
//! that decides when two normal forms are the same entity.
//!
//! [`extract_entities`] is the fallback used when no model extracts entities (or the model's
//! answer is unusable). It reads plain English text and needs no dictionary of names:
//!
//! - `title`: text between double or curly quotes, 2–80 characters (`"Becoming Nicole"`).
//!   Words inside a title are not extracted again.
//! - `date`: `2023-05-07`, `7 May 2023`, `May 7, 2023`, `May 7`, `May 2023`, a year after
//!   `in`/`since`/`during`/…, and month or weekday names on their own. A date's `normalized` is
//!   canonical rather than textual (`2023-05-07`, `2023-05`, `2022`, `may 7`, `friday`), so the
//!   same day written two ways is one entity.
//! - `number`: a number with an optional currency sign, percent sign and one following
//!   lower-case unit or noun (`$40`, `3 kids`, `12.5 km`).
//! - Runs of capitalised words form one name (`New York`, `Melanie Smith`, `University of
//!   Michigan`); a possessive `'s` ends the run and is dropped. A run right after `in`, `at`,
//!   `from`, `near`, `visited`, … (or `to` after a verb of motion: `went to Paris`) is a `place`;
//!   otherwise a single word or a plain two-to-three-word name is a `person`, and anything else
//!   (place or organisation words such as `Lake`, `University`, a connector like `of`, digits,
//!   acronyms) is a `name`.
//! - Capitalised function words (`I`, `The`, `Hey`, `Thanks`, contractions such as `Don't`) are
//!   never names. A sentence's first word is accepted as a name (`Caroline went…`) unless it looks
//!   like an ordinary word: a gerund or adverb (`Painting`, `Honestly`), or a word the text also
//!   uses in lower case.
//!
//! Results are deterministic, deduplicated by `normalized`, in order of first appearance. A
//! mention longer than [`MAX_MENTION_CHARS`] is no name and is dropped; a text yields at most
//! [`MAX_MENTIONS`] (each costs a store lookup). Extraction is linear in the text.
//!
//! [`normalize_entity`] and [`entities_match`] are the merge rules stores apply to mentions from
//! any extractor, model or rules.
//!
//! The pieces: `extract` (tokens, titles and the walk), `dates` (dates and
//! numbers), `names` (runs of capitalised words and their type), `identity` (the normal form and
//! the matching rule) and `score` (what a match is worth in search).

mod dates;
mod extract;
mod identity;
mod names;
mod score;

/// Month and weekday names, shared with the temporal tagger (`time`).
pub(crate) use dates::{MONTHS, WEEKDAYS};
pub use extract::extract_entities;
pub use identity::{
    entities_match, exact_match_variants, near_match_lengths, near_match_window, normalize_entity,
    NearWindow,
};
pub use score::entity_score;
// The relation rules read the same tokens and names.
pub(crate) use extract::{common_words, listed, tokenize, Kind, Token};
pub(crate) use names::{name_at, split_word};

pub const PERSON: &str = "person";
pub const PLACE: &str = "place";
pub const DATE: &str = "date";
pub const NUMBER: &str = "number";
pub const TITLE: &str = "title";
/// A capitalised name that the rules cannot classify further.
pub const NAME: &str = "name";

/// The longest mention the rules extract, in characters (quoted titles stop at 80).
pub const MAX_MENTION_CHARS: usize = 100;
/// The most mentions the rules extract from one text, the first ones in the text.
pub const MAX_MENTIONS: usize = 256;

/// One entity named in a text: as written, normalised for matching, and its type (one of the
/// constants of this module when it comes from [`extract_entities`]; models may use others).
#[derive(Debug, Clone, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct EntityMention {
    pub name: String,
    pub normalized: String,
    pub entity_type: String,
}

impl EntityMention {
    /// A mention whose normal form is [`normalize_entity`] of its name.
    pub fn new(name: impl Into<String>, entity_type: impl Into<String>) -> Self {
        let name = name.into();
        EntityMention {
            normalized: normalize_entity(&name),
            name,
            entity_type: entity_type.into(),
        }
    }
}

/// Currency signs: part of a number token and kept by the normal form.
const CURRENCY: &[char] = &['$', '€', '£', '¥', '₹'];

#[cfg(test)]
mod tests {
    use super::extract::extract;
    use super::identity::levenshtein_within;
    use std::collections::HashSet;
    #[test]
    fn entity_score_favours_rare_names_and_caps_at_one() {
        let rare = super::entity_score(&[vec![1]], 1000);
        let common = super::entity_score(&[vec![900]], 1000);
        assert!(rare > 0.9 && common < 0.1, "{rare} {common}");
        assert_eq!(super::entity_score(&[vec![], vec![]], 1000), 0.0);
        assert!(super::entity_score(&[vec![1], vec![1]], 1000) <= 1.0);
        // The best entity per name counts, not the sum of a name's entities.
        assert_eq!(super::entity_score(&[vec![1, 900]], 1000), rare);
    }

    use super::*;
    use proptest::prelude::*;

    fn pairs(text: &str) -> Vec<(String, String)> {
        extract_entities(text)
            .into_iter()
            .map(|m| (m.name, m.entity_type))
            .collect()
    }

    fn has(text: &str, name: &str, entity_type: &str) {
        let got = pairs(text);
        assert!(
            got.contains(&(name.to_string(), entity_type.to_string())),
            "{name:?} as {entity_type} not in {got:?}"
        );
    }

    fn normalized_of(text: &str, name: &str) -> String {
        extract_entities(text)
            .into_iter()
            .find(|m| m.name == name)
            .unwrap_or_else(|| panic!("{name:?} not extracted from {text:?}"))
            .normalized
    }

    #[test]
    fn people_including_at_sentence_start_and_multi_word() {
        has(
            "Caroline went hiking with Melanie Smith.",
            "Caroline",
            PERSON,
        );
        has(
            "Caroline went hiking with Melanie Smith.",
            "Melanie Smith",
            PERSON,
        );
        has("yesterday I met Jean-Luc at lunch", "Jean-Luc", PERSON);
        has("Emily and Sally came over.", "Emily", PERSON);
        has("Kimberly said hi to NASA.", "NASA", NAME);
    }

    #[test]
    fn places_follow_place_words() {
        has("We moved from Sweden last year.", "Sweden", PLACE);
        has(
            "She visited Paris and then went to New York.",
            "Paris",
            PLACE,
        );
        has(
            "She visited Paris and then went to New York.",
            "New York",
            PLACE,
        );
        has("I talked to Melanie.", "Melanie", PERSON);
        has(
            "The University of Michigan is big.",
            "University of Michigan",
            NAME,
        );
        has("He loves New York.", "New York", NAME);
    }

    #[test]
    fn dates_in_every_format() {
        let text = "On 2023-05-07 we met; again on 7 May 2023, then May 7, 2023 and in May 2023. \
                    I started in 2022 and on the 3rd of June. See you Friday or in August.";
        let got = extract_entities(text);
        let dates: Vec<(&str, &str)> = got
            .iter()
            .filter(|m| m.entity_type == DATE)
            .map(|m| (m.name.as_str(), m.normalized.as_str()))
            .collect();
        // `7 May 2023` and `May 7, 2023` are the same day as `2023-05-07`, so deduplicated.
        assert_eq!(
            dates,
            vec![
                ("2023-05-07", "2023-05-07"),
                ("May 2023", "2023-05"),
                ("2022", "2022"),
                ("3rd of June", "june 3"),
                ("Friday", "friday"),
                ("August", "august"),
            ]
        );
        assert_eq!(
            normalized_of("Meet me May 7, 2023.", "May 7, 2023"),
            "2023-05-07"
        );
        assert_eq!(
            normalized_of("Since 7 May 2023.", "7 May 2023"),
            "2023-05-07"
        );
        assert_eq!(
            normalized_of("on 19 January, 2023", "19 January, 2023"),
            "2023-01-19"
        );
        assert_eq!(
            normalized_of("Due Sept. 3 at noon", "Sept. 3"),
            "september 3"
        );
        // A month or weekday is never a person, and a year without a preposition is a number.
        assert!(pairs("I was born 1990.").contains(&("1990".into(), NUMBER.into())));
        assert!(pairs("May I ask?").is_empty());
    }

    #[test]
    fn numbers_with_units_and_currency() {
        let text = "I paid $40 for 3 kids to ride 12.5 km, about 20% of 2 of them.";
        let numbers: Vec<String> = extract_entities(text)
            .into_iter()
            .filter(|m| m.entity_type == NUMBER)
            .map(|m| m.name)
            .collect();
        assert_eq!(numbers, ["$40", "3 kids", "12.5 km", "20%", "2"]);
        assert_eq!(normalized_of("It cost $1,200.", "$1,200"), "$1200");
    }

    #[test]
    fn quoted_titles_and_their_words_are_not_names() {
        let got = pairs("I read \"Becoming Nicole\" and “The Hobbit”, by Tolkien.");
        assert_eq!(
            got,
            vec![
                ("Becoming Nicole".into(), TITLE.into()),
                ("The Hobbit".into(), TITLE.into()),
                ("Tolkien".into(), PERSON.into()),
            ]
        );
        assert_eq!(
            normalized_of("loved \"The Hobbit\"", "The Hobbit"),
            "hobbit"
        );
    }

    #[test]
    fn possessives_are_removed_and_end_a_name() {
        has("I saw Caroline's new painting.", "Caroline", PERSON);
        has("I saw Melanie’s new car.", "Melanie", PERSON);
        assert!(!pairs("Caroline's Mom called")
            .iter()
            .any(|(n, _)| n.contains('\'')));
    }

    #[test]
    fn stopwords_contractions_and_ordinary_sentence_starts_are_skipped() {
        let text = "Hey! I think The plan is fine. Thanks, it's great. Don't worry. \
                    Painting is fun and I love painting. Honestly it works.";
        assert!(pairs(text).is_empty(), "{:?}", pairs(text));
        has("Hi Caroline, how are you?", "Caroline", PERSON);
    }

    #[test]
    fn deduplicated_by_normal_form_in_order_of_first_appearance() {
        let got =
            pairs("Melanie met José. Later José and melanie... Then Melanie left for Jose's home.");
        assert_eq!(
            got,
            vec![
                ("Melanie".into(), PERSON.into()),
                ("José".into(), PERSON.into())
            ]
        );
    }

    #[test]
    fn normalisation() {
        assert_eq!(normalize_entity("José"), "jose");
        assert_eq!(normalize_entity("  Crème   Brûlée "), "creme brulee");
        assert_eq!(normalize_entity("The Beatles"), "beatles");
        assert_eq!(normalize_entity("O'Brien"), "obrien");
        assert_eq!(normalize_entity("Jean-Luc Picard!"), "jean-luc picard");
        assert_eq!(normalize_entity("St. Louis, MO"), "st louis mo");
        assert_eq!(normalize_entity("12.5 km"), "12.5 km");
        assert_eq!(normalize_entity("the"), "the");
    }

    #[test]
    fn near_matches() {
        assert!(entities_match("caroline", "caroline"));
        assert!(entities_match("caroline", "carolyne"));
        assert!(entities_match("dog", "dogs"));
        assert!(entities_match("melanie smith", "melany smith"));
        assert!(entities_match(
            "university of michigan",
            "universty of michigen"
        ));
        assert!(!entities_match("ann", "anna"));
        assert!(!entities_match("jon", "jan"));
        assert!(!entities_match("caroline", "carolina smith"));
        assert!(!entities_match("melanie", "melissa"));
        assert!(!entities_match("2022", "2023"));
        assert!(!entities_match("3 kids", "3 kid"));
        assert!(!entities_match("2023-05-07", "2023-05-08"));
        assert!(!entities_match("", "a"));
    }

    #[test]
    fn every_match_is_an_exact_variant_or_inside_the_length_window() {
        let names = [
            "caroline",
            "carolyne",
            "carolin",
            "carolines",
            "dog",
            "dogs",
            "do",
            "ann",
            "anna",
            "annas",
            "melanie smith",
            "melany smith",
            "melanie smit",
            "university of michigan",
            "universty of michigen",
            "univrsty of michigen",
            "2022",
            "2023",
            "bus",
            "bu",
            "jose",
            "josef",
            "josefa",
            "abcdefghij",
            "abcdefghi",
            "abcdefgh",
            "abcdefghijkl",
        ];
        for a in names {
            let variants = exact_match_variants(a);
            let window = near_match_lengths(a);
            for b in names {
                if !entities_match(a, b) {
                    continue;
                }
                let len = b.chars().count();
                let reachable = variants.iter().any(|v| v == b)
                    || window.is_some_and(|(lo, hi)| (lo..=hi).contains(&len));
                assert!(reachable, "{a} matches {b} but a store would not find it");
                // Only names that start alike are scanned, inside the window's key range.
                if !variants.iter().any(|v| v == b) {
                    assert_eq!(a.chars().next(), b.chars().next(), "{a} / {b}");
                    let w = near_match_window(a).expect("a near match has a window");
                    assert!(w.from.as_str() <= b && b < w.before.as_str(), "{a} / {b}");
                    assert!((w.shortest..=w.longest).contains(&len), "{a} / {b}");
                }
            }
        }
        assert_eq!(exact_match_variants("2023"), ["2023"]);
        assert_eq!(near_match_lengths("2023-05-07"), None);
        assert_eq!(near_match_lengths("maya"), None);
        assert_eq!(near_match_window("maya"), None);
        assert_eq!(exact_match_variants("maya"), ["maya", "mayas"]);
    }

    #[test]
    fn mention_serialises_with_its_field_names() {
        let m = EntityMention::new("José", PERSON);
        let v = serde_json::to_value(&m).unwrap();
        assert_eq!(
            v,
            serde_json::json!({"name": "José", "normalized": "jose", "entity_type": "person"})
        );
    }

    /// One character of each Unicode general category but Cs (no `char` is a surrogate).
    const CATEGORY_SAMPLES: [char; 29] = [
        'A', 'y', 'ǅ', 'ʰ', '中', '\u{301}', '\u{903}', '\u{20DD}', '٣', 'Ⅻ', '½', '_', '-', '(',
        ')', '«', '»', '!', '+', '$', '^', '©', ' ', '\u{2028}', '\u{2029}', '\u{0}', '\u{200B}',
        '\u{E000}', '\u{378}',
    ];

    #[test]
    fn the_samples_cover_every_general_category() {
        use unicode_general_category::get_general_category as category;
        let seen: HashSet<_> = CATEGORY_SAMPLES.iter().map(|c| category(*c)).collect();
        assert_eq!(seen.len(), CATEGORY_SAMPLES.len());
    }

    /// Long runs of one unit (a letter of either case, a character of any category, punctuation,
    /// a quoted title, a capitalised word, a date), several runs one after another.
    fn pathological() -> impl Strategy<Value = String> {
        let unit = prop_oneof![
            (b'a'..=b'z').prop_map(|b| char::from(b).to_string()),
            (b'A'..=b'Z').prop_map(|b| format!("{} ", char::from(b))),
            proptest::sample::select(CATEGORY_SAMPLES.to_vec()).prop_map(String::from),
            proptest::sample::select(vec![
                ".", "\"", "“", "”", "'", "’", "-", ",", "$", "%", "*", "(", ":", "\n", "İ",
            ])
            .prop_map(String::from),
            proptest::sample::select(vec![
                "\"ab\" ",
                "“Ab” ",
                "Ab ",
                "Ab of ",
                "Ab's ",
                "ay",
                "yay ",
                "7 May 2023, ",
                "May 7 ",
                "in 2022 ",
                "$1,2",
                "1-",
                "12.5 km ",
                "I. ",
                "Y",
            ])
            .prop_map(String::from),
            "[a-zA-Z0-9 .,\"'-]{1,12}",
        ];
        proptest::collection::vec((unit, 1usize..40_000), 1..4).prop_map(|runs| {
            runs.into_iter()
                .map(|(u, n)| u.repeat((n / u.chars().count()).max(1)))
                .collect()
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(48))]

        /// Work is counted, not timed: the title filter once compared every token with every
        /// title (`"ab" ` × 20,000 cost 8·10⁸ steps for 10⁵ characters).
        #[test]
        fn extraction_work_is_linear_in_the_text(text in pathological()) {
            let mut work = 0;
            let found = extract(&text, &mut work);
            let chars = text.chars().count();
            prop_assert!(work <= 2 * chars, "{work} steps for {chars} characters");
            prop_assert!(found.len() <= MAX_MENTIONS);
            prop_assert!(found.iter().all(|m| m.name.chars().count() <= MAX_MENTION_CHARS));
        }

        #[test]
        fn banded_distance_agrees_with_the_full_table(
            a in "[abc]{0,12}",
            b in "[abc]{0,12}",
            limit in 0usize..4,
        ) {
            let full = full_levenshtein(&a, &b);
            let got = levenshtein_within(&a, &b, limit, &mut 0);
            prop_assert_eq!(got, Some(full).filter(|d| *d <= limit), "{} / {}", a, b);
        }
    }

    fn full_levenshtein(a: &str, b: &str) -> usize {
        let (a, b): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
        let mut row: Vec<usize> = (0..=b.len()).collect();
        for i in 1..=a.len() {
            let mut next = vec![i; b.len() + 1];
            for j in 1..=b.len() {
                next[j] = (row[j - 1] + usize::from(a[i - 1] != b[j - 1]))
                    .min(row[j] + 1)
                    .min(next[j - 1] + 1);
            }
            row = next;
        }
        row[b.len()]
    }

    #[test]
    fn thousands_of_quoted_titles_cost_linear_work() {
        let text = "\"ab\" ".repeat(20_000);
        let mut work = 0;
        let found = extract(&text, &mut work);
        assert!(
            work <= 2 * text.len(),
            "{work} steps for {} characters",
            text.len()
        );
        assert_eq!(found.len(), 1, "one title, deduplicated");
    }

    #[test]
    fn runaway_names_and_numbers_are_not_mentions() {
        let long_name = format!("Y{}", "y".repeat(100_000));
        assert!(extract_entities(&format!("I met {long_name} and Caroline.")).len() == 1);
        assert!(extract_entities(&"1".repeat(100_000)).is_empty());
        let many: String = (0..1000).map(|i| format!("I met Zed{i} today. ")).collect();
        assert_eq!(extract_entities(&many).len(), MAX_MENTIONS);
    }

    /// Two memories naming `Yyyy…` 100,000 characters long, one letter apart, made the store's
    /// near-match check fill a 10¹⁰-cell table.
    #[test]
    fn near_match_cost_follows_the_band_not_the_lengths() {
        let n = 100_000;
        let a = "y".repeat(n);
        let b = format!("{}z", "y".repeat(n - 1));
        let mut cells = 0;
        assert_eq!(levenshtein_within(&a, &b, 2, &mut cells), Some(1));
        assert!(cells <= 5 * n, "{cells} cells for {n} characters");
        assert!(entities_match(&a, &b));
        let mut cells = 0;
        let c = format!("zz{}", "y".repeat(n - 2));
        assert_eq!(levenshtein_within(&a, &c, 1, &mut cells), None);
        // A row with every cell over the limit ends the walk.
        assert!(cells <= 3 * 3, "{cells}");
    }
}
