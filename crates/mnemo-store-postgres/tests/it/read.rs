//! The read path against the embedded store: the same records and the same metadata filters
//! give the same listings on both (JSON types, missing keys, byte-ordered strings, list
//! membership), and the same refusals.

use crate::fresh_schema;
use mnemo_core::filter::Op;
use mnemo_core::*;
use mnemo_store_postgres::PgStore;
use mnemo_store_sqlite::SqliteStore;
use mnemo_testkit::{put, scope, HashEmbedder};
use serde_json::{json, Value};

fn stores() -> (PgStore, SqliteStore) {
    let (_, url) = fresh_schema("read");
    let pg = PgStore::connect(&url, 2).expect("connect");
    let lite = SqliteStore::open_in_memory().expect("open sqlite");
    for s in [&pg as &dyn Store, &lite] {
        s.bind_embedder(&Binding::new(HashEmbedder::MODEL_ID, HashEmbedder::DIM).unwrap())
            .expect("bind");
    }
    (pg, lite)
}

/// Texts of the memories `filter` admits, in list order.
fn listed(store: &dyn Store, s: &Scope, filter: Filter) -> Result<Vec<String>> {
    let page = store.list(&ListQuery::new(s.clone(), 100).with_filter(filter))?;
    Ok(page.results.into_iter().map(|m| m.text).collect())
}

#[test]
fn metadata_filters_mean_what_they_mean_in_the_embedded_store() {
    let (pg, lite) = stores();
    let s = scope("parity");
    let records = [
        json!({"s": "apple", "n": 12, "tags": ["red", 7, "Blue"], "b": true, "z": null, "l": [1, 2]}),
        json!({"s": "Zebra", "n": 12.0, "tags": ["blue"], "b": 1, "l": []}),
        json!({"s": "éclair", "n": "12", "tags": "a red tag", "b": "true"}),
        json!({"s": "", "n": -3.5, "tags": [], "z": 0}),
        json!({"s": 5, "n": 18446744073709551615u64, "tags": [["red"]]}),
        json!({}),
        json!({"s": "apple pie", "n": 1e20, "tags": [12, "12"], "l": [1, 2]}),
    ];
    for (i, md) in records.iter().enumerate() {
        for store in [&pg as &dyn Store, &lite] {
            put(store, &s, &format!("record {i}"), md.clone());
        }
    }
    let filters = [
        json!({"s": "apple"}),
        json!({"s": {"ne": "apple"}}),
        json!({"s": {"gt": "Zebra"}}),
        json!({"s": {"lt": "b"}}),
        json!({"s": {"gte": ""}}),
        json!({"s": {"lte": "éclair"}}),
        json!({"s": {"gt": 4}}),
        json!({"s": {"contains": "pp"}}),
        json!({"s": {"contains": ""}}),
        json!({"s": {"contains": 5}}),
        json!({"n": 12}),
        json!({"n": 12.0}),
        json!({"n": "12"}),
        json!({"n": {"gt": 11.5}}),
        json!({"n": {"lt": 0}}),
        json!({"n": {"gte": 18446744073709551615u64}}),
        json!({"n": {"in": [12, -3.5]}}),
        json!({"n": {"nin": [12]}}),
        json!({"n": {"in": []}}),
        json!({"tags": {"contains": "red"}}),
        json!({"tags": {"contains": 7}}),
        json!({"tags": {"contains": 12}}),
        json!({"tags": {"contains": "12"}}),
        json!({"tags": {"contains": "lue"}}),
        json!({"tags": {"eq": []}}),
        json!({"tags": {"eq": ["blue"]}}),
        json!({"l": {"eq": [1, 2]}}),
        json!({"b": true}),
        json!({"b": 1}),
        json!({"b": "true"}),
        json!({"z": null}),
        json!({"z": {"ne": null}}),
        json!({"NOT": {"z": null}}),
        json!({"missing": {"ne": 1}}),
        json!({"missing": {"nin": [1]}}),
        json!({"NOT": {"missing": {"gt": 0}}}),
        json!({"AND": [{"n": {"gt": 0}}, {"s": {"contains": "app"}}]}),
        json!({"OR": [{"b": true}, {"NOT": {"tags": {"contains": "red"}}}]}),
    ];
    for f in filters {
        let filter = Filter::from_json(&f).unwrap().expect("a filter");
        let want = listed(&lite, &s, filter.clone()).unwrap();
        let got = listed(&pg, &s, filter).unwrap();
        assert_eq!(got, want, "{f}");
    }
    // Filters built in code past what the parser allows are refused alike.
    for (op, value) in [
        (Op::Gt, json!(true)),
        (Op::Contains, json!(null)),
        (Op::In, json!("not a list")),
    ] {
        let f = Filter::Meta {
            key: "s".into(),
            op,
            value,
        };
        let want = listed(&lite, &s, f.clone()).unwrap_err().kind();
        let got = listed(&pg, &s, f).unwrap_err().kind();
        assert_eq!(
            (got, want),
            (ErrorKind::InvalidInput, ErrorKind::InvalidInput)
        );
    }
}

/// JSONB keeps no key order, so objects compare as JSON objects: equal whatever the order
/// their keys were written in (the embedded store compares their text).
#[test]
fn object_values_compare_whatever_their_key_order() {
    let (pg, _) = stores();
    let s = scope("objects");
    put(&pg, &s, "ab", json!({"o": {"a": 1, "b": [1, 2]}}));
    put(&pg, &s, "ba", json!({"o": {"b": [1, 2], "a": 1}}));
    put(&pg, &s, "a", json!({"o": {"a": 1}}));
    let f: Value = json!({"o": {"eq": {"a": 1, "b": [1, 2]}}});
    let got = listed(&pg, &s, Filter::from_json(&f).unwrap().unwrap()).unwrap();
    assert_eq!(got, vec!["ab", "ba"]);
}

/// A user's scope covers that user's agent and run memories; a narrower scope sees only its
/// part, on every read path that takes a scope.
#[test]
fn a_user_scope_covers_its_agents_and_runs() {
    let (pg, lite) = stores();
    let user = Scope::user("una").unwrap();
    let agent = Scope::from_parts(Some("una"), Some("helper"), None).unwrap();
    let run = Scope::from_parts(Some("una"), Some("helper"), Some("r1")).unwrap();
    let other = Scope::from_parts(Some("una"), Some("other"), None).unwrap();
    for store in [&pg as &dyn Store, &lite] {
        put(store, &user, "user note", json!({}));
        put(store, &agent, "agent note", json!({}));
        put(store, &run, "run note", json!({}));
        put(store, &other, "other agent note", json!({}));
    }
    for (s, want) in [
        (&user, 4),
        (&agent, 2),
        (&run, 1),
        (&other, 1),
        (&Scope::from_parts(None, Some("helper"), None).unwrap(), 2),
    ] {
        for store in [&pg as &dyn Store, &lite] {
            let page = store.list(&ListQuery::new(s.clone(), 100)).unwrap();
            assert_eq!(page.results.len(), want, "{s:?}");
            let pos = store.locate(&ListQuery::new(s.clone(), 1), 1);
            assert_eq!(pos.unwrap().total, want as u64, "{s:?}");
            let run_id = page.results.iter().find(|m| m.text == "run note");
            if let Some(m) = run_id {
                assert_eq!(
                    store.get(s, m.id, &ReadOptions::default()).unwrap().id,
                    m.id
                );
                assert_eq!(
                    store
                        .history(&HistoryQuery::new(s, m.id, ReadOptions::default()))
                        .unwrap()
                        .len(),
                    1
                );
                assert_eq!(store.messages_by_id(s, &m.sources).unwrap().len(), 1);
            }
        }
    }
    let pg_owners = pg.owners().unwrap();
    assert_eq!(pg_owners, lite.owners().unwrap());
    assert_eq!(pg_owners.len(), 4);
    let report = pg.integrity().unwrap();
    assert!(report.is_consistent(), "{report:?}");
    assert_eq!((report.memories, report.messages), (4, 4));
    let stats = pg.stats().unwrap();
    assert_eq!((stats.memories, stats.messages), (4, 4));
    assert_eq!(stats.dimension, Some(HashEmbedder::DIM));
    assert!(stats.file_bytes > 0);
}
