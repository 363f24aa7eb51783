//! Mem0's graph memory on the Mem0 routes over real HTTP: a search with `enable_graph` carries
//! `relations` in the shape both Mem0 SDKs print, an add with it answers the edges it wrote and
//! those it closed, `GET /v1/entities/` (and the OSS `/entities`) lists each entity with the
//! edges of its node, and no answer carries another scope's edge.

use crate::graph::say;
use crate::TestServer;
use serde_json::{json, Value};

/// `(source, relationship, target)` of each row of a Mem0 relations list.
fn triples(rows: &Value) -> Vec<(String, String, String)> {
    let s = |v: &Value| v.as_str().unwrap_or_default().to_string();
    let mut out: Vec<_> = (rows.as_array().expect("a list of relations").iter())
        .map(|r| (s(&r["source"]), s(&r["relationship"]), s(&r["target"])))
        .collect();
    out.sort();
    out
}

fn t(a: &str, b: &str, c: &str) -> (String, String, String) {
    (a.into(), b.into(), c.into())
}

/// The OSS add answer's `added_entities` / `deleted_entities`: one inner list per edge.
fn flat(v: &Value) -> Value {
    let rows: Vec<Value> = (v.as_array().expect("a list of lists").iter())
        .flat_map(|inner| inner.as_array().expect("an inner list").clone())
        .collect();
    Value::Array(rows)
}

fn mem0_add(s: &TestServer, key: &str, text: &str, at: i64, graph: Option<bool>) -> Value {
    let mut body = json!({
        "messages": [{"role": "user", "name": "Cara", "content": text}],
        "user_id": "cara",
        "infer": false,
        "timestamp": at,
    });
    if let Some(g) = graph {
        body["enable_graph"] = json!(g);
    }
    let r = s.call("POST", "/v1/memories/", Some(key), Some(body));
    assert_eq!(r.status, 200, "{:?}", r.body);
    r.body
}

#[test]
fn mem0_search_with_enable_graph_carries_relations_in_mem0s_shape() {
    let s = TestServer::start();
    say(
        &s,
        "cara",
        "My sister Ana lives in Porto.",
        "2023-05-01T10:00:00Z",
    );
    let cara = s.user_key("cara");
    let body = json!({"query": "Where does Ana live?", "user_id": "cara", "enable_graph": true});
    let r = s.call("POST", "/v1/memories/search/", Some(&cara), Some(body));
    assert_eq!(r.status, 200, "{:?}", r.body);
    let relations = &r.body["relations"];
    assert!(
        triples(relations).contains(&t("Ana", "lives_in", "Porto")),
        "{relations:?}"
    );
    let porto = (relations.as_array().unwrap().iter())
        .find(|e| e["target"] == "Porto")
        .unwrap();
    // The OSS server's name for the far end, beside the platform's.
    assert_eq!(porto["destination"], "Porto", "{porto:?}");
    assert!(porto["source_type"].is_string() && porto["target_type"].is_string());
    let plain = json!({"query": "Where does Ana live?", "user_id": "cara"});
    let r = s.call("POST", "/v1/memories/search/", Some(&cara), Some(plain));
    assert!(r.body.get("relations").is_none(), "{:?}", r.body);
}

#[test]
fn mem0_add_with_enable_graph_answers_the_edges_it_wrote_and_closed() {
    let s = TestServer::start();
    let cara = s.user_key("cara");
    // 2023-05-01 and 2024-05-01, Unix seconds.
    let first = mem0_add(
        &s,
        &cara,
        "My sister Ana lives in Porto.",
        1_682_935_200,
        Some(true),
    );
    let rel = &first["relations"];
    let added = triples(&flat(&rel["added_entities"]));
    assert!(added.contains(&t("Ana", "lives_in", "Porto")), "{rel:?}");
    assert!(added.contains(&t("Ana", "sibling_of", "Cara")), "{rel:?}");
    assert_eq!(flat(&rel["deleted_entities"]), json!([]), "{rel:?}");
    assert!(first["results"][0]["memory"].is_string(), "{first:?}");

    let moved = mem0_add(
        &s,
        &cara,
        "Ana lives in Lisbon now.",
        1_714_557_600,
        Some(true),
    );
    let rel = &moved["relations"];
    assert_eq!(
        triples(&flat(&rel["added_entities"])),
        [t("Ana", "lives_in", "Lisbon")],
        "{rel:?}"
    );
    assert_eq!(
        triples(&flat(&rel["deleted_entities"])),
        [t("Ana", "lives_in", "Porto")],
        "{rel:?}"
    );

    // Without the flag the answer is Mem0's plain add answer: no `relations` key at all.
    let plain = mem0_add(&s, &cara, "Ana likes jazz.", 1_714_557_700, None);
    assert!(plain.get("relations").is_none(), "{plain:?}");
    let off = mem0_add(&s, &cara, "Ana likes tea.", 1_714_557_800, Some(false));
    assert!(off.get("relations").is_none(), "{off:?}");
}

#[test]
fn mem0_entities_carry_the_relations_of_their_node_and_only_of_their_scope() {
    let s = TestServer::start();
    say(
        &s,
        "cara",
        "My sister Ana lives in Porto.",
        "2023-05-01T10:00:00Z",
    );
    // Bob's conversation names a "Cara" too, in bob's scope.
    let r = s.call(
        "POST",
        "/v1/memories",
        Some(&s.admin.clone()),
        Some(json!({
            "user_id": "bob",
            "messages": [{"role": "user", "name": "Bob", "content": "My friend Cara lives in Oslo."}],
        })),
    );
    assert_eq!(r.status, 200, "{:?}", r.body);

    let cara = s.user_key("cara");
    for path in ["/v1/entities/", "/entities"] {
        let r = s.call("GET", path, Some(&cara), None);
        assert_eq!(r.status, 200, "{:?}", r.body);
        let list = match path {
            "/entities" => r.body.clone(),
            _ => r.body["results"].clone(),
        };
        let list = list.as_array().unwrap();
        assert_eq!(list.len(), 1, "cara's key sees only cara: {list:?}");
        assert_eq!(list[0]["name"], "cara");
        assert_eq!(
            triples(&list[0]["relations"]),
            [t("Ana", "sibling_of", "Cara")],
            "{list:?}"
        );
    }

    // The admin sees both users; each one's relations come from its own scope only.
    let r = s.call("GET", "/v1/entities/", Some(&s.admin.clone()), None);
    let list = r.body["results"].as_array().unwrap();
    let of = |name: &str| {
        let e = list.iter().find(|e| e["name"] == name).unwrap();
        triples(&e["relations"])
    };
    assert_eq!(of("cara"), [t("Ana", "sibling_of", "Cara")], "{list:?}");
    assert!(
        !of("bob").iter().any(|(a, _, b)| a == "Ana" || b == "Ana"),
        "bob's entity shows cara's edge: {list:?}"
    );
    let bob = s.user_key("bob");
    let r = s.call("GET", "/v1/entities/", Some(&bob), None);
    assert!(!r.body.to_string().contains("Porto"), "{:?}", r.body);
    // A search of bob's with the graph on never reaches cara's edges.
    let body = json!({"query": "Where does Ana live?", "user_id": "bob", "enable_graph": true});
    let r = s.call("POST", "/v1/memories/search/", Some(&bob), Some(body));
    assert_eq!(r.status, 200, "{:?}", r.body);
    assert_eq!(r.body["relations"], json!([]), "{:?}", r.body);
}
