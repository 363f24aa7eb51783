//! The per-request `graph` flag of search on the native REST route and the MCP tool: `true`
//! turns graph search on for that request (the answer lists the `relations` used and the
//! stating memory carries `via`), `false` or absent leaves the server's setting (off here); the
//! flag is in the OpenAPI document and the tool's schema; a walk never reaches another scope.

use crate::graph::say;
use crate::mcp::{call_tool, mcp, open_session};
use crate::TestServer;
use serde_json::{json, Value};

fn seeded() -> TestServer {
    let s = TestServer::start();
    say(&s, "cara", "Ana lives in Porto.", "2023-05-01T10:00:00Z");
    say(
        &s,
        "cara",
        "We had dinner by the river.",
        "2023-05-02T10:00:00Z",
    );
    say(&s, "bob", "Ana lives in Oslo.", "2023-05-01T10:00:00Z");
    s
}

/// Whether the answer used the graph: its relations name Ana's Porto edge and the stating
/// memory is marked with `via`.
fn used_graph(answer: &Value) -> bool {
    let Some(relations) = answer.get("relations").and_then(Value::as_array) else {
        return false;
    };
    let edge = relations
        .iter()
        .any(|r| r["predicate"] == "lives_in" && r["object"]["name"] == "Porto");
    let via = (answer["results"].as_array().unwrap().iter())
        .any(|h| h["memory"] == "Ana lives in Porto." && h["via"]["predicate"] == "lives_in");
    edge && via
}

#[test]
fn rest_search_graph_flag_turns_graph_search_on_for_one_request() {
    let s = seeded();
    let cara = s.user_key("cara");
    let search = |graph: Option<bool>| {
        let mut body = json!({"query": "Where does Ana live?"});
        if let Some(g) = graph {
            body["graph"] = json!(g);
        }
        let r = s.call("POST", "/v1/memories/search", Some(&cara), Some(body));
        assert_eq!(r.status, 200, "{:?}", r.body);
        r.body
    };
    let on = search(Some(true));
    assert!(used_graph(&on), "{on}");
    assert!(
        !on.to_string().contains("Oslo"),
        "a walk left its scope: {on}"
    );
    for off in [search(None), search(Some(false))] {
        assert!(off.get("relations").is_none(), "{off}");
        assert!(!used_graph(&off), "{off}");
    }
    let bad = s.call(
        "POST",
        "/v1/memories/search",
        Some(&cara),
        Some(json!({"query": "Ana", "graph": "yes"})),
    );
    assert_eq!(bad.status, 400, "{:?}", bad.body);

    let doc = s.call("GET", "/openapi.json", None, None).body;
    let flag = &doc["components"]["schemas"]["SearchBody"]["properties"]["graph"];
    assert!(
        flag["description"]
            .as_str()
            .unwrap_or("")
            .contains("relations"),
        "{flag}"
    );
    let answer = &doc["components"]["schemas"]["SearchDoc"]["properties"]["relations"];
    assert!(answer.is_object(), "the answer's relations are documented");
}

#[test]
fn mcp_search_graph_argument_turns_graph_search_on_for_one_call() {
    let s = seeded();
    let cara = s.user_key("cara");
    let session = open_session(&s, &cara);
    let on = call_tool(
        &s,
        &cara,
        &session,
        "search_memories",
        json!({"query": "Where does Ana live?", "graph": true}),
    )
    .tool_json();
    assert!(used_graph(&on), "{on}");
    assert!(!on.to_string().contains("Oslo"), "{on}");
    let off = call_tool(
        &s,
        &cara,
        &session,
        "search_memories",
        json!({"query": "Where does Ana live?"}),
    )
    .tool_json();
    assert!(off.get("relations").is_none() && !used_graph(&off), "{off}");

    let list = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/list"});
    let tools = mcp(
        &s,
        "POST",
        &cara,
        Some(&session),
        &[],
        Some(&list.to_string()),
    )
    .message();
    let search = (tools["result"]["tools"].as_array().unwrap().iter())
        .find(|t| t["name"] == "search_memories")
        .unwrap();
    assert!(
        search["description"].as_str().unwrap().contains("graph"),
        "{search}"
    );
    assert!(
        search["inputSchema"]["properties"]["graph"].is_object(),
        "{search}"
    );
}

/// A key bound to bob, on every route this work added or changed, asking for alice's graph:
/// refused as another scope (403 for a named scope, nothing written), and bob's own graph
/// answers never hold alice's edges.
#[test]
fn graph_requests_for_another_scope_are_refused_on_every_new_route() {
    let s = TestServer::start();
    say(
        &s,
        "alice",
        "My sister Ana lives in Porto.",
        "2023-05-01T10:00:00Z",
    );
    say(&s, "bob", "Ana lives in Oslo.", "2023-05-01T10:00:00Z");
    let bob = s.user_key("bob");
    let before = s.snapshot();
    let add = json!({"messages": [{"role": "user", "name": "Bob", "content": "Ana moved to Rome."}],
        "user_id": "alice", "infer": false, "enable_graph": true});
    let probes = [
        (
            "/v1/memories/search",
            json!({"query": "Where does Ana live?", "user_id": "alice", "graph": true}),
        ),
        (
            "/v1/memories/search/",
            json!({"query": "Where does Ana live?", "user_id": "alice", "enable_graph": true}),
        ),
        (
            "/v3/memories/search/",
            json!({"query": "Where does Ana live?", "filters": {"user_id": "alice"}, "enable_graph": true}),
        ),
        (
            "/search",
            json!({"query": "Where does Ana live?", "user_id": "alice", "enable_graph": true}),
        ),
        ("/v1/memories/", add.clone()),
        ("/v3/memories/add/", add.clone()),
        ("/memories", add),
    ];
    for (path, body) in probes {
        let r = s.call("POST", path, Some(&bob), Some(body));
        assert_eq!(r.status, 403, "{path}: {:?}", r.body);
        assert!(
            !r.body.to_string().contains("Porto"),
            "{path}: {:?}",
            r.body
        );
    }
    assert_eq!(
        s.snapshot(),
        before,
        "a refused graph request wrote something"
    );
    let session = open_session(&s, &bob);
    let (_, kind, _) = call_tool(
        &s,
        &bob,
        &session,
        "search_memories",
        json!({"query": "Where does Ana live?", "user_id": "alice", "graph": true}),
    )
    .tool_error();
    assert_eq!(kind, "forbidden");

    // Bob's own graph answers: his edge, never alice's.
    let own = [
        (
            "/v1/memories/search",
            json!({"query": "Where does Ana live?", "graph": true}),
        ),
        (
            "/v1/memories/search/",
            json!({"query": "Where does Ana live?", "user_id": "bob", "enable_graph": true}),
        ),
    ];
    for (path, body) in own {
        let r = s.call("POST", path, Some(&bob), Some(body));
        assert_eq!(r.status, 200, "{path}: {:?}", r.body);
        let text = r.body.to_string();
        assert!(
            text.contains("Oslo") && !text.contains("Porto"),
            "{path}: {text}"
        );
    }
    let r = s.call(
        "POST",
        "/v1/memories/",
        Some(&bob),
        Some(json!({"messages": [{"role": "user", "name": "Bob", "content": "Ana lives in Rome now."}],
            "user_id": "bob", "infer": false, "enable_graph": true})),
    );
    assert_eq!(r.status, 200, "{:?}", r.body);
    let text = r.body["relations"].to_string();
    assert!(
        text.contains("Rome") && text.contains("Oslo") && !text.contains("Porto"),
        "{text}"
    );
}

/// The native add answer lists the edges the add touched (`{id, event}`), a replay with the same
/// idempotency key answers the same, and the ids are readable edges of the scope.
#[test]
fn native_add_answers_the_edges_it_touched() {
    let s = TestServer::start();
    let cara = s.user_key("cara");
    let add = |text: &str, at: &str, key: &str| {
        let body = json!({"timestamp": at, "idempotency_key": key,
            "messages": [{"role": "user", "name": "Cara", "content": text}]});
        let r = s.call("POST", "/v1/memories", Some(&cara), Some(body));
        assert_eq!(r.status, 200, "{:?}", r.body);
        r.body
    };
    let events = |answer: &Value| -> Vec<String> {
        let mut e: Vec<String> = (answer["relations"].as_array().unwrap().iter())
            .map(|w| w["event"].as_str().unwrap().to_string())
            .collect();
        e.sort();
        e
    };
    let first = add(
        "My sister Ana lives in Porto.",
        "2023-05-01T10:00:00Z",
        "k1",
    );
    assert_eq!(events(&first), ["added", "added"], "{first}");
    let moved = add("Ana lives in Lisbon now.", "2024-05-01T10:00:00Z", "k2");
    assert_eq!(events(&moved), ["added", "closed"], "{moved}");
    let closed = (moved["relations"].as_array().unwrap().iter())
        .find(|w| w["event"] == "closed")
        .unwrap()["id"]
        .as_str()
        .unwrap()
        .to_string();
    let h = s.call(
        "GET",
        &format!("/v1/graph/relations/{closed}/history"),
        Some(&cara),
        None,
    );
    assert_eq!(h.status, 200, "{:?}", h.body);
    assert_eq!(
        h.body["relation"]["object"]["name"], "Porto",
        "{:?}",
        h.body
    );
    let again = add("Ana lives in Lisbon now.", "2024-05-01T10:00:00Z", "k2");
    assert_eq!(again["replayed"], true);
    assert_eq!(again["relations"], moved["relations"]);
    let plain = add("We had dinner by the river.", "2024-05-02T10:00:00Z", "k3");
    assert!(plain.get("relations").is_none(), "{plain}");
}
