//! The inspector's own routes over real HTTP: `/v1/scopes` (what a key sees, with counts by
//! kind and state), `/v1/stats` and the admin key table `/v1/keys`, their tenancy, their place
//! in the OpenAPI document, and listing superseded memories with `include_inactive`.

use crate::TestServer;
use serde_json::json;

#[test]
fn scopes_show_a_bound_key_only_its_own_and_admin_everything_with_counts() {
    let s = TestServer::start();
    s.seed("alice", "Alice's door code is 4711");
    s.seed("alice", "Alice likes tea");
    let gone = s.seed("alice", "Alice had a cat");
    let r = s.call(
        "DELETE",
        &format!("/v1/memories/{gone}?user_id=alice"),
        Some(&s.admin),
        None,
    );
    assert_eq!(r.status, 200);
    s.seed("bob", "Bob likes chess");
    let bob = s.user_key("bob");
    let r = s.call("GET", "/v1/scopes", Some(&bob), None);
    assert_eq!(r.status, 200, "{:?}", r.body);
    let text = r.body.to_string();
    assert!(!text.contains("alice"), "bob's key sees alice: {text}");
    assert_eq!(r.body["scopes"].as_array().unwrap().len(), 1);
    assert_eq!(r.body["scopes"][0]["user_id"], "bob");
    assert_eq!(r.body["scopes"][0]["active"], 1);
    let r = s.call("GET", "/v1/scopes", Some(&s.admin), None);
    let scopes = r.body["scopes"].as_array().unwrap();
    let alice = scopes.iter().find(|x| x["user_id"] == "alice").unwrap();
    assert_eq!(alice["active"], 2);
    assert_eq!(alice["states"], json!({"active": 2, "deleted": 1}));
    assert_eq!(alice["kinds"], json!({"raw": 3}));
    assert_eq!(r.body["truncated"], false);
    assert!(scopes.iter().any(|x| x["user_id"] == "bob"));
    assert_eq!(s.call("GET", "/v1/scopes", None, None).status, 401);
}

#[test]
fn only_admin_keys_manage_keys_and_read_stats() {
    let s = TestServer::start();
    s.seed("alice", "Alice likes tea");
    let bob = s.user_key("bob");
    let before = s.call("GET", "/v1/keys", Some(&s.admin), None);
    for (method, path, body) in [
        ("GET", "/v1/keys".to_string(), None),
        ("POST", "/v1/keys".to_string(), Some(json!({"admin": true}))),
        ("DELETE", "/v1/keys/key_000000000000".to_string(), None),
        ("GET", "/v1/stats".to_string(), None),
    ] {
        let r = s.call(method, &path, Some(&bob), body);
        assert_eq!(r.status, 403, "{method} {path}: {:?}", r.body);
        assert_eq!(r.kind(), "forbidden");
    }
    assert_eq!(
        before.body,
        s.call("GET", "/v1/keys", Some(&s.admin), None).body,
        "refusals changed nothing"
    );
    // Create bound, use, list (no secret), revoke, refused.
    let r = s.call(
        "POST",
        "/v1/keys",
        Some(&s.admin),
        Some(json!({"name": "carol's app", "user_id": "carol"})),
    );
    assert_eq!(r.status, 200, "{:?}", r.body);
    let key = r.body["key"].as_str().unwrap().to_string();
    let id = r.body["id"].as_str().unwrap().to_string();
    assert_eq!(r.body["user_id"], "carol");
    let list = s.call("GET", "/v1/keys", Some(&s.admin), None);
    assert!(
        !list.body.to_string().contains(&key),
        "a listing never holds a secret"
    );
    assert!(list.body["keys"]
        .as_array()
        .unwrap()
        .iter()
        .any(|k| k["id"] == id.as_str()));
    assert_eq!(s.call("GET", "/v1/memories", Some(&key), None).status, 200);
    assert_eq!(
        s.call("GET", "/v1/memories?user_id=alice", Some(&key), None)
            .status,
        403
    );
    assert_eq!(
        s.call("DELETE", &format!("/v1/keys/{id}"), Some(&s.admin), None)
            .status,
        200
    );
    assert_eq!(s.call("GET", "/v1/memories", Some(&key), None).status, 401);
    assert_eq!(
        s.call("DELETE", &format!("/v1/keys/{id}"), Some(&s.admin), None)
            .status,
        404
    );
    // Bad bindings are clear errors and write nothing.
    let n = s.call("GET", "/v1/keys", Some(&s.admin), None).body["keys"]
        .as_array()
        .unwrap()
        .len();
    for bad in [
        json!({}),
        json!({"admin": true, "user_id": "x"}),
        json!({"user_id": "a b"}),
        json!({"user_id": "x", "color": 1}),
    ] {
        let r = s.call("POST", "/v1/keys", Some(&s.admin), Some(bad.clone()));
        assert_eq!(r.status, 400, "{bad}: {:?}", r.body);
    }
    assert_eq!(
        s.call("GET", "/v1/keys", Some(&s.admin), None).body["keys"]
            .as_array()
            .unwrap()
            .len(),
        n
    );
    let st = s.call("GET", "/v1/stats", Some(&s.admin), None);
    assert_eq!(st.status, 200);
    assert_eq!(st.body["memories"], 1);
    assert_eq!(st.body["scopes"], 1);
}

#[test]
fn the_inspector_routes_are_in_the_openapi_document() {
    let s = TestServer::start();
    let doc = s.call("GET", "/openapi.json", None, None).body;
    for path in ["/v1/scopes", "/v1/stats", "/v1/keys", "/v1/keys/{id}"] {
        assert!(doc["paths"][path].is_object(), "{path} missing");
    }
    assert!(doc["paths"]["/v1/keys"]["post"].is_object());
    assert!(doc["paths"]["/v1/keys/{id}"]["delete"].is_object());
}

#[test]
fn a_list_with_include_inactive_shows_deleted_memories_with_their_state() {
    let s = TestServer::start();
    let keep = s.seed("alice", "Alice likes tea");
    let gone = s.seed("alice", "Alice had a cat");
    s.call(
        "DELETE",
        &format!("/v1/memories/{gone}?user_id=alice"),
        Some(&s.admin),
        None,
    );
    let plain = s.call("GET", "/v1/memories?user_id=alice", Some(&s.admin), None);
    assert_eq!(plain.body["results"].as_array().unwrap().len(), 1);
    let all = s.call(
        "GET",
        "/v1/memories?user_id=alice&include_inactive=true",
        Some(&s.admin),
        None,
    );
    let rows = all.body["results"].as_array().unwrap();
    assert_eq!(rows.len(), 2);
    assert!(rows
        .iter()
        .any(|m| m["id"] == gone.as_str() && m["state"] == "deleted"));
    assert!(rows
        .iter()
        .any(|m| m["id"] == keep.as_str() && m["state"] == "active"));
    let bob = s.user_key("bob");
    let r = s.call(
        "GET",
        "/v1/memories?include_inactive=true",
        Some(&bob),
        None,
    );
    assert_eq!(
        r.body["results"].as_array().unwrap().len(),
        0,
        "bob's inactive listing is bob's"
    );
    let r = s.call(
        "GET",
        "/v1/memories?user_id=alice&include_inactive=true&filters=%7Bbad",
        Some(&s.admin),
        None,
    );
    assert_eq!(r.status, 400);
}

#[test]
fn without_keys_the_inspector_sees_every_scope() {
    let s = TestServer::start_with(std::sync::Arc::new(mnemo_testkit::HashEmbedder), |c| {
        c.no_auth = true
    });
    s.seed("alice", "Alice likes tea");
    s.seed("bob", "Bob likes chess");
    let r = s.call("GET", "/v1/scopes", None, None);
    assert_eq!(r.status, 200, "{:?}", r.body);
    assert_eq!(r.body["scopes"].as_array().unwrap().len(), 2);
    let r = s.call("GET", "/v1/keys", None, None);
    assert_eq!(r.status, 400, "no key table without keys: {:?}", r.body);
    let ui = s.raw("GET", "/ui/", None, None, None);
    assert_eq!(ui.status, 200);
    assert!(ui.header("content-security-policy").is_some());
}
