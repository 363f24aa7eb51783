//! Contract cases for finding memories: filters (the grammar, its bounds and its errors),
//! hybrid search on both signals, entities and their scores, duplicates by hash, read counts.
//! Re-exported by `contract`.

use crate::contract::all;
use crate::*;
use mnemo_core::*;
use serde_json::json;

pub fn filters(h: &dyn Harness) {
    let store = h.fresh();
    let s = scope("ivan");
    let a = put(
        store.as_ref(),
        &s,
        "a",
        json!({"zip": "0012", "n": 3, "tags": ["red", "blue"], "flag": true}),
    );
    let b = put(
        store.as_ref(),
        &s,
        "b",
        json!({"zip": 12, "n": 7, "tags": ["green"], "note": "big red barn"}),
    );
    let c = put(store.as_ref(), &s, "c", json!({"n": 10, "flag": false}));
    let run = |f: serde_json::Value| -> Vec<MemoryId> {
        let filter = Filter::from_json(&f).unwrap();
        let page = store
            .list(
                &ListQuery::new(s.clone(), 100)
                    .with_filter(filter)
                    .with_read(all(false)),
            )
            .unwrap();
        page.results.iter().map(|m| m.id).collect()
    };
    assert_eq!(
        run(json!({"zip": "0012"})),
        vec![a],
        "string never equals number"
    );
    assert_eq!(run(json!({"zip": 12})), vec![b]);
    assert_eq!(run(json!({"zip": {"ne": "0012"}})), vec![b, c]);
    assert_eq!(run(json!({"n": {"in": [3, 10]}})), vec![a, c]);
    assert_eq!(run(json!({"n": {"nin": [3, 10]}})), vec![b]);
    assert_eq!(run(json!({"n": {"gt": 3}})), vec![b, c]);
    assert_eq!(run(json!({"n": {"gte": 3, "lt": 10}})), vec![a, b]);
    assert_eq!(run(json!({"n": {"lte": 7}})), vec![a, b]);
    assert_eq!(run(json!({"tags": {"contains": "red"}})), vec![a]);
    assert_eq!(run(json!({"note": {"contains": "red"}})), vec![b]);
    assert_eq!(run(json!({"flag": true})), vec![a]);
    assert_eq!(
        run(json!({"OR": [{"flag": false}, {"zip": 12}]})),
        vec![b, c]
    );
    assert_eq!(run(json!({"NOT": {"n": {"gt": 5}}})), vec![a]);
    assert_eq!(
        run(json!({"AND": [{"n": {"gt": 1}}, {"NOT": {"flag": true}}]})),
        vec![b, c]
    );
    let later = (chrono::Utc::now() + chrono::Duration::hours(1)).to_rfc3339();
    assert_eq!(run(json!({"created_at": {"lt": later}})).len(), 3);
    assert!(run(json!({"created_at": {"gt": later}})).is_empty());
    // Filters apply to search candidates too.
    let f = Filter::from_json(&json!({"n": 7})).unwrap();
    let q = CandidateQuery {
        scope: &s,
        kinds: None,
        filter: f.as_ref(),
        read: all(false),
        limit: 10,
    };
    let dense = store
        .dense_candidates(&q, &HashEmbedder::vector("a"))
        .unwrap();
    assert_eq!(dense.len(), 1);
    assert_eq!(store.fetch(&q, &[dense[0].key]).unwrap()[0].1.id, b);
}

/// Mem0 2.x's filter forms: the wildcard `{"key": "*"}` matches records that have the key (a
/// JSON null value included, a missing key never, `NOT` the rest), and `icontains` matches a
/// string field case-insensitively on ASCII letters only, alike on every store.
pub fn filters_wildcard_and_icontains(h: &dyn Harness) {
    let store = h.fresh();
    let s = scope("wanda");
    let a = put(
        store.as_ref(),
        &s,
        "a",
        json!({"team": "Red Barons", "n": 1}),
    );
    let b = put(store.as_ref(), &s, "b", json!({"team": null}));
    let c = put(
        store.as_ref(),
        &s,
        "c",
        json!({"other": "RED", "team": ["red"]}),
    );
    let d = put(store.as_ref(), &s, "d", json!({"team": "ÉCOLE red"}));
    let e = put(store.as_ref(), &s, "e", json!({"team": "*"}));
    let run = |f: serde_json::Value| -> Vec<MemoryId> {
        let filter = Filter::from_json(&f).unwrap();
        let page = store
            .list(
                &ListQuery::new(s.clone(), 100)
                    .with_filter(filter)
                    .with_read(all(false)),
            )
            .unwrap();
        page.results.iter().map(|m| m.id).collect()
    };
    assert_eq!(run(json!({"team": "*"})), vec![a, b, c, d, e]);
    assert_eq!(run(json!({"n": "*"})), vec![a]);
    assert_eq!(run(json!({"NOT": {"n": "*"}})), vec![b, c, d, e]);
    assert_eq!(
        run(json!({"team": {"eq": "*"}})),
        vec![e],
        "the literal star"
    );
    assert_eq!(run(json!({"team": {"icontains": "rED"}})), vec![a, d]);
    assert_eq!(run(json!({"other": {"icontains": "red"}})), vec![c]);
    // Only A–Z fold: "é" never matches "É", on every store.
    assert!(run(json!({"team": {"icontains": "école"}})).is_empty());
    assert_eq!(run(json!({"team": {"icontains": "ÉCOLE"}})), vec![d]);
    assert_eq!(
        run(json!({"AND": [{"team": "*"}, {"NOT": {"team": {"icontains": "red"}}}]})),
        vec![b, c, e]
    );
}

pub fn hybrid_search_uses_both_sides(h: &dyn Harness) {
    let store = h.fresh();
    let s = scope("jane");
    let exact = put(
        store.as_ref(),
        &s,
        "Jane's passport number is XK42",
        json!({}),
    );
    for i in 0..30 {
        put(
            store.as_ref(),
            &s,
            &format!("filler memory {i} about weather and travel plans"),
            json!({}),
        );
    }
    let hits = search(store.as_ref(), &s, "XK42", all(false));
    assert_eq!(hits[0].memory.id, exact);
    assert!(hits[0].scores.bm25 > 0.0);
    assert!(
        hits[0].scores.dense > 0.0,
        "lexical-only candidates are scored densely too"
    );
    for w in hits.windows(2) {
        assert!(w[0].score >= w[1].score, "hits are sorted by final score");
    }
    let req = SearchRequest {
        threshold: Some(2.0),
        read: all(false),
        ..SearchRequest::new(s.clone(), "weather", 5)
    };
    assert!(
        hybrid_search(
            store.as_ref(),
            &req,
            &HashEmbedder::vector("weather"),
            &RankParams::default()
        )
        .unwrap()
        .is_empty(),
        "threshold"
    );
    let req = SearchRequest {
        kinds: Some(vec![MemoryKind::Fact]),
        threshold: None,
        ..req
    };
    assert!(
        hybrid_search(
            store.as_ref(),
            &req,
            &HashEmbedder::vector("weather"),
            &RankParams::default()
        )
        .unwrap()
        .is_empty(),
        "kinds"
    );
}

fn mention(name: &str, ty: &str) -> EntityMention {
    EntityMention {
        name: name.into(),
        normalized: normalize_entity(name),
        entity_type: ty.into(),
    }
}

pub fn entities_merge_and_find_candidates(h: &dyn Harness) {
    let store = h.fresh();
    let s = scope("rita");
    let mut a = batch(&s, "Caroline went to the support group", json!({}));
    a.memories[0].entities = vec![mention("Caroline", "person")];
    let mut b = batch(&s, "Carolin painted in Lisbon", json!({}));
    b.memories[0].entities = vec![mention("Carolin", "person"), mention("Lisbon", "place")];
    let mut c = batch(&s, "The 2023 trip", json!({}));
    c.memories[0].entities = vec![mention("2023", "date")];
    let mut d = batch(&s, "The 2022 trip", json!({}));
    d.memories[0].entities = vec![mention("2022", "date")];
    let ids: Vec<MemoryId> = [&a, &b, &c, &d].iter().map(|x| x.memories[0].id).collect();
    store.write(vec![a, b, c, d]).unwrap();
    let ea = store.entities_of(&s, ids[0]).unwrap();
    let eb = store.entities_of(&s, ids[1]).unwrap();
    assert_eq!(ea.len(), 1);
    assert!(
        eb.iter().any(|e| e.id == ea[0].id),
        "Carolin merged into Caroline"
    );
    let ec = store.entities_of(&s, ids[2]).unwrap();
    let ed = store.entities_of(&s, ids[3]).unwrap();
    assert_ne!(ec[0].id, ed[0].id, "different years never merge");

    let q = candidates(&s, all(false));
    let found = store
        .entity_candidates(&EntityQuery {
            query: q,
            names: &["caroline".into(), "lisbon".into()],
            pooled: &[],
        })
        .unwrap();
    assert_eq!(found.len(), 2);
    // The memory matching both names comes first. With N = 4 memories, "caroline" (on 2) has
    // idf ln 2 and "lisbon" (on 1) ln(10/3); scores are their sums over ln 5, capped at 1.
    assert_eq!(found[0].score, 1.0);
    let expected = (2f32.ln() / 5f32.ln()).min(1.0);
    assert!((found[1].score - expected).abs() < 1e-4, "{found:?}");
    // A rare name carries more than a common one.
    let rare = store
        .entity_candidates(&EntityQuery {
            query: q,
            names: &["lisbon".into()],
            pooled: &[],
        })
        .unwrap();
    let common = store
        .entity_candidates(&EntityQuery {
            query: q,
            names: &["caroline".into()],
            pooled: &[],
        })
        .unwrap();
    assert!(rare[0].score > common[0].score, "{rare:?} {common:?}");
    let got = store.fetch(&q, &[found[0].key]).unwrap();
    assert_eq!(got[0].1.id, ids[1]);
    // Scoped: another user sees nothing.
    let other = scope("sam");
    assert!(store
        .entity_candidates(&EntityQuery {
            query: candidates(&other, all(false)),
            names: &["caroline".into()],
            pooled: &[]
        })
        .unwrap()
        .is_empty());
}

/// One write whose batches name the same people again and again (and one name in two scopes):
/// every mention of a name in a scope joins one entity, each scope has its own, a near spelling
/// joins too, and every entity counts exactly the memories linked to it.
pub fn a_write_links_repeated_names_to_one_entity_per_scope(h: &dyn Harness) {
    let store = h.fresh();
    let (mine, theirs) = (scope("nora"), scope("ivan"));
    let texts = [
        (&mine, "Oslo trip with Caroline", vec!["Caroline", "Oslo"]),
        (&mine, "Caroline again, in Oslo", vec!["Caroline", "Oslo"]),
        (&mine, "Carolin wrote back", vec!["Carolin"]),
        (&theirs, "Ivan met Caroline", vec!["Caroline"]),
        (&mine, "Caroline and Caroline", vec!["Caroline", "Caroline"]),
    ];
    let batches: Vec<WriteBatch> = texts
        .iter()
        .map(|(s, text, names)| {
            let mut b = batch(s, text, json!({}));
            b.memories[0].entities = names.iter().map(|n| mention(n, "person")).collect();
            b
        })
        .collect();
    let ids: Vec<MemoryId> = batches.iter().map(|b| b.memories[0].id).collect();
    store.write(batches).unwrap();
    let caroline = |s: &Scope, id: MemoryId| {
        store
            .entities_of(s, id)
            .unwrap()
            .into_iter()
            .find(|e| e.normalized.starts_with("carolin"))
            .unwrap_or_else(|| panic!("memory {id} has no Caroline"))
            .id
    };
    let mine_id = caroline(&mine, ids[0]);
    for i in [1, 2, 4] {
        assert_eq!(
            caroline(&mine, ids[i]),
            mine_id,
            "memory {i} joins the scope's Caroline"
        );
    }
    assert_ne!(
        caroline(&theirs, ids[3]),
        mine_id,
        "another scope's Caroline is its own entity"
    );
    let report = store.integrity().unwrap();
    assert_eq!(report.entities_with_wrong_mentions, 0, "{report:?}");
    // Caroline is on all four of the scope's memories and Oslo on two: the rarer name scores
    // higher, which it does only if each entity counted its own links.
    let q = candidates(&mine, all(false));
    let score = |name: &str| {
        store
            .entity_candidates(&EntityQuery {
                query: q,
                names: &[name.into()],
                pooled: &[],
            })
            .unwrap()[0]
            .score
    };
    assert!(score("oslo") > score("caroline"));
}

/// Exact scores keep the query's scope: a key of another owner scores nothing.
pub fn exact_scores_stay_in_the_query_scope(h: &dyn Harness) {
    let store = h.fresh();
    let (mine, theirs) = (scope("maya"), scope("tom"));
    put(store.as_ref(), &mine, "Maya walks by the river", json!({}));
    put(store.as_ref(), &theirs, "Tom walks by the river", json!({}));
    let vector = HashEmbedder::vector("walks by the river");
    let key_of = |s: &Scope| {
        store
            .dense_candidates(&candidates(s, all(false)), &vector)
            .unwrap()[0]
            .key
    };
    let (my_key, their_key) = (key_of(&mine), key_of(&theirs));
    assert_ne!(my_key, their_key);
    let scored = store
        .vector_scores(&ScoreQuery {
            query: candidates(&mine, all(false)),
            keys: &[my_key, their_key],
            vector: &vector,
        })
        .unwrap();
    assert_eq!(scored.len(), 1, "{scored:?}");
    assert_eq!(scored[0].key, my_key);
    assert!(scored[0].score > 0.5, "{scored:?}");
}

/// A name on many memories scores the keys the other signals pooled, whatever a backend walks;
/// its weight follows the links that remain after hard deletes.
pub fn common_entities_score_the_pooled_keys(h: &dyn Harness) {
    let store = h.fresh();
    let s = scope("una");
    let mut batches = Vec::new();
    for i in 0..150 {
        let mut b = batch(&s, &format!("Caroline wrote page marker{i}"), json!({}));
        b.memories[0].entities = vec![mention("Caroline", "person")];
        batches.push(b);
    }
    let mut postcard = batch(&s, "A postcard from Lisbon", json!({}));
    postcard.memories[0].entities = vec![mention("Lisbon", "place")];
    batches.push(postcard);
    let ids: Vec<MemoryId> = batches.iter().map(|b| b.memories[0].id).collect();
    store.write(batches).unwrap();
    let mut q = candidates(&s, all(false));
    let key_of = |term: &str| store.lexical_candidates(&q, &[term.into()]).unwrap()[0].key;
    let pooled = vec![key_of("marker7"), key_of("marker140")];
    let weight = |n: f32, df: f32| (1.0 + (n - df + 0.5) / (df + 0.5)).ln() / (1.0 + n).ln();
    let names = ["caroline".to_string(), "lisbon".to_string()];
    let check = |q: &CandidateQuery<'_>, expected: f32| {
        let found = store
            .entity_candidates(&EntityQuery {
                query: *q,
                names: &names,
                pooled: &pooled,
            })
            .unwrap();
        assert!(found.len() <= q.limit);
        for k in &pooled {
            let c = found
                .iter()
                .find(|c| c.key == *k)
                .expect("a pooled key is scored");
            assert!(
                (c.score - expected).abs() < 1e-4,
                "{} vs {expected}",
                c.score
            );
        }
        // The rare name's memory is found without being pooled, and ranks first.
        let best = store.fetch(q, &[found[0].key]).unwrap();
        assert_eq!(best[0].1.text, "A postcard from Lisbon");
    };
    // With a limit of 10, Caroline (150 memories) is more than a backend need walk.
    q.limit = 10;
    check(&q, weight(151.0, 150.0));
    // Hard-deleting 100 of Caroline's memories (not the pooled two) leaves her on 50 of 51; a
    // limit of 60 has room for all of them.
    let ctx = WritePlan::default();
    for id in &ids[10..110] {
        store.delete(&s, *id, DeleteMode::Hard, &ctx).unwrap();
    }
    q.limit = 60;
    check(&q, weight(51.0, 50.0));
}

pub fn duplicates_are_found_by_hash_in_the_exact_scope(h: &dyn Harness) {
    let store = h.fresh();
    let s = scope("tom");
    let id = put(store.as_ref(), &s, "Tom has two cats", json!({}));
    let hash = content_hash("Tom has two cats");
    assert_eq!(
        store.find_by_hash(&s, std::slice::from_ref(&hash)).unwrap(),
        vec![(hash.clone(), id)]
    );
    assert!(store
        .find_by_hash(&scope("uma"), std::slice::from_ref(&hash))
        .unwrap()
        .is_empty());
    store
        .delete(&s, id, DeleteMode::Soft, &WritePlan::default())
        .unwrap();
    assert!(
        store.find_by_hash(&s, &[hash]).unwrap().is_empty(),
        "only active memories count"
    );
}

/// The ids `filter` admits through `list`, after checking that the candidate reads and the
/// shared hybrid search accept it too.
fn run_filter(store: &dyn Store, scope: &Scope, filter: &Filter) -> Result<Vec<MemoryId>> {
    let q = CandidateQuery {
        filter: Some(filter),
        ..candidates(scope, ReadOptions::default())
    };
    store.dense_candidates(&q, &HashEmbedder::vector("tomatoes"))?;
    store.lexical_candidates(&q, &["tomatoes".to_string()])?;
    let req = SearchRequest {
        filter: Some(filter.clone()),
        ..SearchRequest::new(scope.clone(), "tomatoes", 10)
    };
    hybrid_search(
        store,
        &req,
        &HashEmbedder::vector("tomatoes"),
        &RankParams::default(),
    )?;
    let page = store.list(&ListQuery::new(scope.clone(), 100).with_filter(filter.clone()))?;
    Ok(page.results.iter().map(|m| m.id).collect())
}

fn parsed(f: serde_json::Value) -> Filter {
    Filter::from_json(&f).unwrap().unwrap()
}

fn values(prefix: &str, n: usize) -> Vec<String> {
    (0..n).map(|i| format!("{prefix}{i}")).collect()
}

/// Filters at every bound of the parser — alone and together — run on every read path of the
/// backend (wide filters once reached SQLite's expression-depth limit and came back as internal
/// errors).
pub fn filters_at_every_bound_run(h: &dyn Harness) {
    use mnemo_core::filter::{
        MAX_FILTER_CONDITIONS, MAX_FILTER_DEPTH, MAX_FILTER_IN_LIST, MAX_FILTER_KEYS,
    };
    use serde_json::Value;
    let store = h.fresh();
    let s = scope("wanda");
    let hit = put(
        store.as_ref(),
        &s,
        "wanda grows tomatoes",
        json!({"tag": "v7", "tags": ["x7"], "n": 7}),
    );
    put(
        store.as_ref(),
        &s,
        "wanda sells tomatoes",
        json!({"tag": "zz", "tags": ["y"], "n": 8}),
    );
    let contains = |i: usize| json!({"tags": {"contains": format!("x{i}")}});
    let mut keys: serde_json::Map<String, Value> = (0..MAX_FILTER_KEYS - 1)
        .map(|i| (format!("k{i}"), json!({"ne": i})))
        .collect();
    keys.insert("n".into(), json!(7));
    // Every level an OR of fifteen `contains` and the next level; an `in` list at the bottom:
    // the deepest nesting and all the conditions at once.
    let per_level = (MAX_FILTER_CONDITIONS - 16) / MAX_FILTER_DEPTH;
    let bottom = json!({"tag": {"in": values("v", 16)}});
    let deep_and_wide = (0..MAX_FILTER_DEPTH).fold(bottom, |inner, level| {
        let mut items: Vec<Value> = (0..per_level)
            .map(|j| json!({"tags": {"contains": format!("q{level}-{j}")}}))
            .collect();
        items.push(inner);
        json!({"OR": items})
    });
    let not_16 = (0..MAX_FILTER_DEPTH).fold(json!({"n": 7}), |f, _| json!({"NOT": f}));
    for (what, f) in [
        (
            "in list",
            json!({"tag": {"in": values("v", MAX_FILTER_IN_LIST)}}),
        ),
        (
            "nin list",
            json!({"NOT": {"tag": {"nin": values("v", MAX_FILTER_IN_LIST)}}}),
        ),
        (
            "OR of conditions",
            json!({"OR": (0..MAX_FILTER_CONDITIONS).map(contains).collect::<Vec<_>>()}),
        ),
        (
            "AND of conditions",
            json!({"AND": (1..MAX_FILTER_CONDITIONS).map(|i| json!({format!("m{i}"): {"ne": i}})).collect::<Vec<_>>(), "n": 7}),
        ),
        ("keys", Value::Object(keys)),
        ("depth", not_16),
        ("depth and conditions", deep_and_wide),
    ] {
        let got = run_filter(store.as_ref(), &s, &parsed(f.clone()));
        assert_eq!(got.unwrap(), vec![hit], "{what}: {f}");
    }
}

/// Past a bound a filter is invalid input: in the parser, and in the backend for filters built
/// in code (never an internal error from the database).
pub fn filters_past_a_bound_are_invalid_input(h: &dyn Harness) {
    use mnemo_core::filter::{
        Op, MAX_FILTER_CONDITIONS, MAX_FILTER_DEPTH, MAX_FILTER_IN_LIST, MAX_FILTER_KEYS,
    };
    use serde_json::Value;
    let store = h.fresh();
    let s = scope("wanda");
    put(store.as_ref(), &s, "wanda grows tomatoes", json!({"n": 7}));
    let keys: serde_json::Map<String, Value> = (0..=MAX_FILTER_KEYS)
        .map(|i| (format!("k{i}"), json!(i)))
        .collect();
    let leaves = |n: usize| {
        (0..n)
            .map(|i| json!({format!("k{i}"): i}))
            .collect::<Vec<_>>()
    };
    // The probe's shapes (an `in` list of 994, an OR of 1,001, 5,000 keys), then one past each
    // bound.
    for f in [
        json!({"tag": {"in": values("v", 994)}}),
        json!({"OR": leaves(1001)}),
        Value::Object((0..5000).map(|i| (format!("k{i}"), json!(i))).collect()),
        json!({"tag": {"in": values("v", MAX_FILTER_IN_LIST + 1)}}),
        json!({"OR": leaves(MAX_FILTER_CONDITIONS + 1)}),
        json!({"AND": [{"tag": {"in": values("v", MAX_FILTER_IN_LIST)}}, {"n": 7}]}),
        Value::Object(keys),
        (0..=MAX_FILTER_DEPTH).fold(json!({"n": 7}), |f, _| json!({"NOT": f})),
        // A scope id under OR inside a top-level AND, once read as a metadata key.
        json!({"AND": [{"n": 7}, {"OR": [{"user_id": "mallory"}, {"n": 8}]}]}),
    ] {
        let err = Filter::from_json(&f).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidInput, "{f}");
    }
    // Built in code, past the parser: the store refuses it rather than failing in SQLite.
    let leaf = |i: usize| Filter::Meta {
        key: format!("k{i}"),
        op: Op::Eq,
        value: json!(i),
    };
    for f in [
        Filter::Or((0..1001).map(leaf).collect()),
        Filter::And((0..5000).map(leaf).collect()),
        Filter::Meta {
            key: "tag".into(),
            op: Op::In,
            value: json!(values("v", 994)),
        },
        Filter::Meta {
            key: "tag".into(),
            op: Op::In,
            value: json!("not a list"),
        },
        Filter::Or(Vec::new()),
    ] {
        let err = run_filter(store.as_ref(), &s, &f).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidInput, "{f:?}: {err}");
    }
}

/// Reads are counted in the scope that reads: `touch` counts each id once per call, never
/// edits the memory, and never moves the last access back.
pub fn touch_counts_reads_in_the_scope(h: &dyn Harness) {
    let store = h.fresh();
    let (s, other) = (scope("lena"), scope("mallory"));
    let a = crate::contract_notes::put_note(store.as_ref(), &s, "a note", NoteFields::default());
    let before = store.get(&s, a, &ReadOptions::default()).unwrap();
    assert_eq!((before.access_count, before.last_accessed_at), (0, None));
    let at = chrono::Utc::now();
    assert_eq!(store.touch(&s, &[a, a, MemoryId::new()], at).unwrap(), 2);
    assert_eq!(
        store.touch(&other, &[a], at).unwrap(),
        0,
        "another scope cannot touch it"
    );
    let after = store.get(&s, a, &ReadOptions::default()).unwrap();
    assert_eq!(after.access_count, 2);
    assert_eq!(
        after.last_accessed_at.map(|t| t.timestamp_millis()),
        Some(at.timestamp_millis())
    );
    assert_eq!(
        after.updated_at, before.updated_at,
        "reading is not editing"
    );
    assert_eq!(
        store
            .history(&HistoryQuery::new(&s, a, ReadOptions::default()))
            .unwrap()
            .len(),
        1
    );
    // An earlier access time never moves the last access back.
    store
        .touch(&s, &[a], at - chrono::Duration::days(1))
        .unwrap();
    let again = store.get(&s, a, &ReadOptions::default()).unwrap();
    assert_eq!(again.access_count, 3);
    assert_eq!(again.last_accessed_at, after.last_accessed_at);
}
