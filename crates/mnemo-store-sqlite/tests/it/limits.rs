//! Input at the bounds of `mnemo_core::limits` runs on SQLite, and input past them is refused
//! as invalid input before any SQL is built. Wide filters once reached SQLite's own limits
//! (expression depth 1,000) and came back as internal errors.

use crate::open;
use mnemo_core::filter::{
    Op, MAX_FILTER_CONDITIONS, MAX_FILTER_DEPTH, MAX_FILTER_IN_LIST, MAX_FILTER_KEYS,
};
use mnemo_core::limits::MAX_QUERY_CHARS;
use mnemo_core::*;
use mnemo_store_sqlite::SqliteStore;
use mnemo_testkit::*;
use serde_json::{json, Value};

/// The ids `filter` admits through `list`, after checking that the candidate reads and the
/// shared hybrid search accept it too.
fn run(store: &dyn Store, scope: &Scope, filter: &Filter) -> Result<Vec<MemoryId>> {
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
    let page = store.list(&ListQuery {
        scope: scope.clone(),
        kinds: None,
        filter: Some(filter.clone()),
        limit: 100,
        cursor: None,
        read: ReadOptions::default(),
    })?;
    Ok(page.results.iter().map(|m| m.id).collect())
}

fn parsed(f: Value) -> Filter {
    Filter::from_json(&f).unwrap().unwrap()
}

fn values(prefix: &str, n: usize) -> Vec<String> {
    (0..n).map(|i| format!("{prefix}{i}")).collect()
}

#[test]
fn filters_at_every_bound_run_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(&dir.path().join("mnemo.db"));
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
        let got = run(store.as_ref(), &s, &parsed(f.clone()));
        assert_eq!(got.unwrap(), vec![hit], "{what}: {f}");
    }
}

#[test]
fn filters_past_a_bound_are_invalid_input_in_the_parser_and_the_store() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(&dir.path().join("mnemo.db"));
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
        let err = run(store.as_ref(), &s, &f).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidInput, "{f:?}: {err}");
    }
}

/// Before an embedder is bound, lexical search runs on FTS5: a query at the length limit, of
/// distinct words, is one long OR there, and FTS5 parses it.
#[test]
fn a_query_at_the_length_limit_runs_on_fts5() {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(dir.path().join("mnemo.db")).unwrap();
    let s = scope("wanda");
    let query: String = (0..)
        .map(|i| format!("w{i} "))
        .scan(0, |len, w| {
            *len += w.len();
            (*len <= MAX_QUERY_CHARS).then_some(w)
        })
        .collect();
    let terms = text::query_terms(&query);
    assert!(terms.len() > 2000, "{}", terms.len());
    let got = store.lexical_candidates(&candidates(&s, ReadOptions::default()), &terms);
    assert!(got.unwrap().is_empty());
}
