//! Tests of reading a model's relation answer: each kind of damage a weak model does.

use super::{
    parse_model_extraction, parse_model_relations, relations_user_prompt, ObjectKind,
    MAX_MODEL_RELATIONS, RELATIONS_SYSTEM_PROMPT,
};

fn triples(answer: &str) -> Vec<String> {
    parse_model_relations(answer)
        .unwrap_or_else(|e| panic!("{answer:?}: {e}"))
        .into_iter()
        .map(|r| {
            format!(
                "{}|{}|{}|{}",
                r.subject, r.predicate, r.object, r.object_type
            )
        })
        .collect()
}

#[test]
fn a_clean_answer_is_read_with_types_from_the_entity_list() {
    let answer = r#"{"entities": [{"name": "Ana", "type": "person"}, {"name": "Caroline", "type": "person"},
        {"name": "Porto", "type": "city"}],
      "relations": [{"subject": "Ana", "predicate": "sister of", "object": "Caroline"},
        {"subject": "Ana", "predicate": "lives in", "object": "Porto", "fact": "Ana lives in Porto."}]}"#;
    let x = parse_model_extraction(answer).unwrap();
    assert_eq!(x.entities.len(), 3);
    assert_eq!(x.entities[2].entity_type, "place");
    assert_eq!(
        triples(answer),
        ["Ana|sibling_of|Caroline|person", "Ana|lives_in|Porto|place"]
    );
    assert_eq!(x.relations[1].sentence, "Ana lives in Porto.");
    assert_eq!(x.relations[0].sentence, "Ana sibling of Caroline");
    assert_eq!(x.relations[0].subject_type, "person");
}

#[test]
fn valid_empty_answers_are_ok_and_garbage_is_an_error() {
    for empty in [
        r#"{"entities": [], "relations": []}"#,
        "[]",
        r#"{"relations": null}"#,
        r#"{"entities": [{"name": "Ana", "type": "person"}]}"#,
        "Sure! ```json\n{\"relations\": []}\n```",
    ] {
        assert_eq!(parse_model_relations(empty).unwrap(), vec![], "{empty:?}");
    }
    for garbage in [
        "",
        "I could not find any relations, sorry.",
        "{\"relations\": [",
        "42",
        "\"relations\"",
        r#"{"facts": ["Ana lives in Porto"]}"#,
        r#"{"relations": "Ana is Caroline's sister"}"#,
    ] {
        assert!(parse_model_relations(garbage).is_err(), "{garbage:?}");
    }
}

#[test]
fn repairable_json_is_repaired() {
    let answer = "Here you go:\n```json\n{'relations': [{'subject': 'Ana', 'predicate': \
                  'works_at', 'object': 'IKEA',},],}\n```";
    assert_eq!(triples(answer), ["Ana|works_at|IKEA|thing"]);
}

#[test]
fn partial_triples_self_loops_pronouns_and_bad_parts_are_dropped_one_by_one() {
    let long = "N".repeat(101);
    let answer = format!(
        r#"{{"relations": [
        {{"subject": "Ana", "predicate": "likes"}},
        {{"predicate": "likes", "object": "tea"}},
        {{"subject": "Ana", "object": "tea"}},
        {{"subject": "", "predicate": "likes", "object": "tea"}},
        {{"subject": 7, "predicate": "likes", "object": "tea"}},
        {{"subject": "Ana", "predicate": "knows", "object": "ana"}},
        {{"subject": "I", "predicate": "likes", "object": "tea"}},
        {{"subject": "Ana", "predicate": "likes", "object": "{long}"}},
        {{"subject": "Ana", "predicate": "{long}", "object": "tea"}},
        {{"subject": "Ana", "predicate": "!!!", "object": "tea"}},
        "Ana likes tea",
        ["Ana", "likes"],
        ["Ana", "likes", "tea"],
        {{"source": "Tom", "relation": "employed by", "target": {{"name": "Acme", "type": "company"}}}}
      ]}}"#
    );
    assert_eq!(
        triples(&answer),
        ["Ana|likes|tea|thing", "Tom|works_at|Acme|organization"]
    );
}

#[test]
fn unknown_entity_types_become_thing_and_known_synonyms_map() {
    let answer = r#"{"entities": [{"name": "Biscuit", "type": "golden retriever"},
        {"name": "Ana", "type": "HUMAN"}, {"name": "Rex", "type": "animal"}],
      "relations": [{"subject": "Ana", "predicate": "has_pet", "object": "Biscuit"},
        {"subject": "Ana", "predicate": "has_pet", "object": "Rex"},
        {"subject": {"name": "Ana", "type": "wizard"}, "predicate": "member_of", "object": "Guild"}]}"#;
    let x = parse_model_extraction(answer).unwrap();
    assert_eq!(x.entities[0].entity_type, "thing");
    assert_eq!(x.entities[1].entity_type, "person");
    assert_eq!(
        triples(answer),
        [
            "Ana|has_pet|Biscuit|thing",
            "Ana|has_pet|Rex|pet",
            "Ana|member_of|Guild|thing"
        ]
    );
    assert_eq!(
        x.relations[2].subject_type, "thing",
        "the item's own type wins"
    );
}

#[test]
fn duplicates_are_deduplicated_and_literals_recognised() {
    let answer = r#"[{"subject": "Ana", "predicate": "age", "object": 32},
        {"subject": "Ana", "predicate": "years old", "object": "32"},
        {"subject": "Ana", "predicate": "loves", "object": "jazz", "object_kind": "literal"},
        {"subject": "ana", "predicate": "likes", "object": "Jazz", "object_kind": "literal"}]"#;
    let got = parse_model_relations(answer).unwrap();
    assert_eq!(got.len(), 2, "{got:?}");
    assert_eq!(got[0].object, "32");
    assert!(got
        .iter()
        .all(|r| r.object_kind == ObjectKind::Literal && r.object_type.is_empty()));
}

#[test]
fn a_flood_of_relations_is_capped() {
    let items: Vec<String> = (0..1_000)
        .map(|i| format!(r#"{{"subject": "P{i}", "predicate": "knows", "object": "Q{i}"}}"#))
        .collect();
    let answer = format!(r#"{{"relations": [{}]}}"#, items.join(","));
    assert_eq!(
        parse_model_relations(&answer).unwrap().len(),
        MAX_MODEL_RELATIONS
    );
}

#[test]
fn the_prompt_names_every_canonical_predicate_and_the_speaker() {
    for p in super::CANONICAL_PREDICATES {
        assert!(RELATIONS_SYSTEM_PROMPT.contains(p), "{p}");
    }
    for t in super::ENTITY_TYPES {
        assert!(RELATIONS_SYSTEM_PROMPT.contains(t), "{t}");
    }
    assert!(relations_user_prompt("hi", Some("Cara")).contains("Speaker: Cara"));
    assert!(relations_user_prompt("hi", None).contains("unknown"));
}
