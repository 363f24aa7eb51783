//! Context packs over REST (`POST /v1/context`, in the OpenAPI document) and MCP
//! (`get_context`): a pack within its budget with sections, keys bound to a user confined to
//! that user's pack, and bad budgets answered as invalid input naming `budget_tokens`.

use crate::mcp::{call_tool, open_session};
use crate::TestServer;
use serde_json::{json, Value};

/// Alice's conversation in one session, and one memory of bob's that must never reach her pack.
fn seed(s: &TestServer) {
    let admin = s.admin.clone();
    let turns = [
        (
            "I am training for the Lisbon marathon in April",
            "Good luck! How far do you run a week?",
        ),
        (
            "About sixty kilometres, mostly along the river",
            "That is a solid base for April.",
        ),
        (
            "My left knee hurts after long runs",
            "Ease off the long runs and see a physio.",
        ),
    ];
    for (user, assistant) in turns {
        let r = s.call(
            "POST",
            "/v1/memories",
            Some(&admin),
            Some(
                json!({"user_id": "alice", "session_id": "s1", "infer": false, "messages": [
                {"role": "user", "content": user}, {"role": "assistant", "content": assistant}]}),
            ),
        );
        assert_eq!(r.status, 200, "{:?}", r.body);
    }
    s.seed("bob", "bob's locker code is 7719");
}

fn items(pack: &Value) -> Vec<&Value> {
    pack["sections"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|s| s["items"].as_array().unwrap())
        .collect()
}

/// Budget kept, sections present and in order, every item's tokens counted.
fn assert_pack(pack: &Value, budget: u64) {
    assert_eq!(pack["budget_tokens"], budget, "{pack}");
    let used = pack["used_tokens"].as_u64().unwrap();
    assert!(used <= budget, "{used} tokens used of {budget}: {pack}");
    assert_eq!(pack["tokenizer"], "cl100k_base");
    let order = ["profile", "short_term", "segments", "memories"];
    let sections: Vec<usize> = pack["sections"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| order.iter().position(|o| s["section"] == *o).unwrap())
        .collect();
    assert!(!sections.is_empty(), "no sections: {pack}");
    assert!(sections.windows(2).all(|w| w[0] < w[1]), "{pack}");
    for item in items(pack) {
        assert!(item["tokens"].as_u64().unwrap() > 0, "{item}");
        assert!(item["reason"].is_string(), "{item}");
    }
    assert!(!pack["rendered"].as_str().unwrap().is_empty());
}

#[test]
fn rest_context_pack_fits_its_budget_and_stays_in_the_keys_scope() {
    let s = TestServer::start();
    seed(&s);
    let alice = s.user_key("alice");
    let k = Some(alice.as_str());
    let r = s.call(
        "POST",
        "/v1/context",
        k,
        Some(
            json!({"query": "how is the marathon training going?", "budget_tokens": 1000,
                    "session_id": "s1"}),
        ),
    );
    assert_eq!(r.status, 200, "{:?}", r.body);
    assert_pack(&r.body, 1000);
    let rendered = r.body["rendered"].as_str().unwrap();
    assert!(rendered.contains("Lisbon marathon"), "{rendered}");
    assert!(!rendered.contains("7719"), "bob's memory in alice's pack");
    assert_eq!(r.body["omitted"], 0, "everything fits 1000 tokens");

    // A budget smaller than everything: still within it, and what was left out is counted.
    let r = s.call(
        "POST",
        "/v1/context",
        k,
        Some(json!({"query": "knee", "budget_tokens": 30, "session_id": "s1"})),
    );
    assert_eq!(r.status, 200, "{:?}", r.body);
    assert!(
        r.body["used_tokens"].as_u64().unwrap() <= 30,
        "{:?}",
        r.body
    );
    assert!(r.body["omitted"].as_u64().unwrap() > 0, "{:?}", r.body);

    // Alice's key cannot ask for bob's pack; bob's own pack has nothing of alice's.
    let r = s.call(
        "POST",
        "/v1/context",
        k,
        Some(json!({"query": "locker", "budget_tokens": 500, "user_id": "bob"})),
    );
    assert_eq!((r.status, r.kind()), (403, "forbidden"), "{:?}", r.body);
    let bob = s.user_key("bob");
    let r = s.call(
        "POST",
        "/v1/context",
        Some(bob.as_str()),
        Some(json!({"query": "marathon knee locker", "budget_tokens": 500})),
    );
    assert_eq!(r.status, 200, "{:?}", r.body);
    let rendered = r.body["rendered"].as_str().unwrap();
    assert!(rendered.contains("7719"), "{rendered}");
    assert!(
        !rendered.contains("marathon"),
        "alice's text in bob's pack: {rendered}"
    );
    // A session of alice's named with bob's key is unknown in bob's scope.
    let r = s.call(
        "POST",
        "/v1/context",
        Some(bob.as_str()),
        Some(json!({"query": "marathon", "budget_tokens": 500, "session_id": "s1"})),
    );
    assert_eq!((r.status, r.kind()), (400, "invalid_input"), "{:?}", r.body);
    assert!(r.body["error"]["message"]
        .as_str()
        .unwrap()
        .contains("session_id"));

    // Bad budgets are invalid input naming the field; a missing one too.
    for bad in [json!(0), json!(-5), json!(200_001), json!(1u64 << 40)] {
        let r = s.call(
            "POST",
            "/v1/context",
            k,
            Some(json!({"query": "marathon", "budget_tokens": bad})),
        );
        assert_eq!(
            (r.status, r.kind()),
            (400, "invalid_input"),
            "{bad}: {:?}",
            r.body
        );
        let message = r.body["error"]["message"].as_str().unwrap();
        assert!(message.contains("budget_tokens"), "{bad}: {message}");
    }
    let r = s.call("POST", "/v1/context", k, Some(json!({"query": "marathon"})));
    assert_eq!(r.status, 400, "{:?}", r.body);
    assert!(r.body["error"]["message"]
        .as_str()
        .unwrap()
        .contains("budget_tokens"));
    s.stop();
}

#[test]
fn openapi_documents_the_context_route_with_the_real_pack_fields() {
    let s = TestServer::start();
    seed(&s);
    let doc = s.call("GET", "/openapi.json", None, None).body;
    assert!(
        doc["paths"]["/v1/context"]["post"].is_object(),
        "missing route"
    );
    let schemas = &doc["components"]["schemas"];
    assert!(schemas["ContextBody"]["properties"]["budget_tokens"].is_object());
    let admin = s.admin.clone();
    let pack = s
        .call(
            "POST",
            "/v1/context",
            Some(&admin),
            Some(
                json!({"user_id": "alice", "query": "marathon", "budget_tokens": 800,
                        "session_id": "s1"}),
            ),
        )
        .body;
    let keys = |v: &Value| {
        let mut k: Vec<String> = v.as_object().unwrap().keys().cloned().collect();
        k.sort();
        k
    };
    assert_eq!(keys(&schemas["ContextPackDoc"]["properties"]), keys(&pack));
    assert_eq!(
        keys(&schemas["PackSectionDoc"]["properties"]),
        keys(&pack["sections"][0])
    );
    // Items leave out empty optional fields; every field they have is documented.
    let documented = keys(&schemas["PackItemDoc"]["properties"]);
    for item in items(&pack) {
        for k in keys(item) {
            assert!(documented.contains(&k), "{k} undocumented: {item}");
        }
    }
    s.stop();
}

#[test]
fn mcp_get_context_returns_the_pack_and_refuses_bad_budgets() {
    let s = TestServer::start();
    seed(&s);
    let alice = s.user_key("alice");
    let session = open_session(&s, &alice);
    let r = call_tool(
        &s,
        &alice,
        &session,
        "get_context",
        json!({"query": "what hurts after long runs?", "budget_tokens": 400, "session_id": "s1"}),
    );
    assert_eq!(r.status, 200, "{}", r.text);
    let pack = r.tool_json();
    assert_pack(&pack, 400);
    let rendered = pack["rendered"].as_str().unwrap();
    assert!(rendered.contains("knee"), "{rendered}");
    assert!(!rendered.contains("7719"), "{rendered}");

    let (code, kind, message) = call_tool(
        &s,
        &alice,
        &session,
        "get_context",
        json!({"query": "knee", "budget_tokens": 0}),
    )
    .tool_error();
    assert_eq!((code, kind.as_str()), (-32602, "invalid_input"));
    assert!(message.contains("budget_tokens"), "{message}");
    let (code, kind, _) = call_tool(
        &s,
        &alice,
        &session,
        "get_context",
        json!({"query": "locker", "budget_tokens": 100, "user_id": "bob"}),
    )
    .tool_error();
    assert_eq!((code, kind.as_str()), (-32003, "forbidden"));
    s.stop();
}
