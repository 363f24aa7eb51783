//! The graph routes over real HTTP: relations read from a raw add by the rules, an entity's
//! relations now and as of a time, a contradiction closing the old edge, an edge's history,
//! tenancy (another scope's entity and edge answer as missing), a walk deeper than 3 refused,
//! the routes in the OpenAPI document and the MCP tool.

use crate::TestServer;
use serde_json::json;

pub(crate) fn say(s: &TestServer, user: &str, text: &str, at: &str) {
    let r = s.call(
        "POST",
        "/v1/memories",
        Some(&s.admin.clone()),
        Some(json!({
            "user_id": user,
            "timestamp": at,
            "messages": [{"role": "user", "name": "Cara", "content": text}],
        })),
    );
    assert_eq!(r.status, 200, "{:?}", r.body);
}

fn objects(body: &serde_json::Value, predicate: &str) -> Vec<String> {
    let mut out: Vec<String> = body["results"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["predicate"] == predicate)
        .map(|e| e["object"]["name"].as_str().unwrap().to_string())
        .collect();
    out.sort();
    out
}

#[test]
fn relations_read_by_rules_are_served_now_and_as_of_with_history_and_tenancy() {
    let s = TestServer::start();
    say(
        &s,
        "cara",
        "My sister Ana lives in Porto.",
        "2023-05-01T10:00:00Z",
    );
    say(
        &s,
        "cara",
        "Ana lives in Lisbon now.",
        "2024-05-01T10:00:00Z",
    );
    let cara = s.user_key("cara");
    let now = s.call("GET", "/v1/graph/relations?entity=Ana", Some(&cara), None);
    assert_eq!(now.status, 200, "{:?}", now.body);
    assert_eq!(objects(&now.body, "lives_in"), ["Lisbon"], "{:?}", now.body);
    assert_eq!(objects(&now.body, "sibling_of"), ["Cara"]);
    let then = s.call(
        "GET",
        "/v1/graph/relations?entity=Ana&as_of=2023-12-01T00:00:00Z",
        Some(&cara),
        None,
    );
    assert_eq!(
        objects(&then.body, "lives_in"),
        ["Porto"],
        "{:?}",
        then.body
    );
    let porto = then.body["results"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["object"]["name"] == "Porto")
        .unwrap()["id"]
        .as_str()
        .unwrap()
        .to_string();
    let h = s.call(
        "GET",
        &format!("/v1/graph/relations/{porto}/history"),
        Some(&cara),
        None,
    );
    assert_eq!(h.status, 200, "{:?}", h.body);
    assert_eq!(h.body["events"][1]["event"], "closed", "{:?}", h.body);
    let between = s.call("GET", "/v1/graph/between?a=Ana&b=Cara", Some(&cara), None);
    assert_eq!(objects(&between.body, "sibling_of"), ["Cara"]);

    // Another user's key: the entity and the edge answer as missing.
    say(&s, "bob", "I live in Oslo.", "2023-05-01T10:00:00Z");
    let bob = s.user_key("bob");
    let r = s.call("GET", "/v1/graph/relations?entity=Ana", Some(&bob), None);
    assert_eq!(r.status, 404, "{:?}", r.body);
    let r = s.call(
        "GET",
        &format!("/v1/graph/relations/{porto}/history"),
        Some(&bob),
        None,
    );
    assert_eq!(r.status, 404, "{:?}", r.body);
    let walk = s.call(
        "GET",
        "/v1/graph/neighbourhood?entity=Cara&depth=2",
        Some(&cara),
        None,
    );
    assert_eq!(walk.status, 200);
    assert!(
        !walk.body.to_string().contains("Oslo"),
        "a walk left its scope"
    );
    let deep = s.call(
        "GET",
        "/v1/graph/neighbourhood?entity=Ana&depth=4",
        Some(&cara),
        None,
    );
    assert_eq!(deep.status, 400, "{:?}", deep.body);
    assert!(deep.body.to_string().contains("depth"));
}

#[test]
fn the_graph_routes_are_in_the_openapi_document() {
    let s = TestServer::start();
    let doc = s.call("GET", "/openapi.json", None, None).body;
    for path in [
        "/v1/graph/relations",
        "/v1/graph/between",
        "/v1/graph/neighbourhood",
        "/v1/graph/relations/{id}/history",
    ] {
        assert!(doc["paths"][path]["get"].is_object(), "{path} missing");
    }
}
