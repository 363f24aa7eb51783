//! Notes over REST and MCP: fields kept as given, malformed lists refused naming the field,
//! links added, listed and removed, and link-expanded search with `via`.

use crate::mcp::{call_tool, open_session};
use crate::TestServer;
use serde_json::json;

#[test]
fn notes_links_and_expansion_over_rest() {
    let s = TestServer::start();
    let k = s.user_key("alice");
    let k = Some(k.as_str());
    let add = |body: serde_json::Value| {
        let r = s.call("POST", "/v1/memories", k, Some(body));
        assert_eq!(r.status, 200, "{:?}", r.body);
        r.body["results"][0]["id"].as_str().unwrap().to_string()
    };
    let trip = add(
        json!({"text": "booked the night train to Vienna", "memory_type": "note",
        "keywords": ["train", "Vienna"], "tags": ["travel"], "context": "planning the spring trip"}),
    );
    let opera =
        add(json!({"text": "opera tickets for Saturday", "memory_type": "note", "tags": []}));
    let r = s.call("GET", &format!("/v1/memories/{trip}"), k, None);
    assert_eq!(r.body["kind"], "note");
    assert_eq!(r.body["memory"], "booked the night train to Vienna");
    assert_eq!(
        r.body["note"],
        json!({"keywords": ["train", "Vienna"], "tags": ["travel"], "context": "planning the spring trip"})
    );

    // Malformed lists are invalid input naming the field; nothing is written.
    for (field, bad) in [
        ("keywords", json!("train, Vienna")),
        ("tags", json!([1, 2])),
        ("tags", json!(["ok", ""])),
    ] {
        let mut body = json!({"text": "x", "memory_type": "note"});
        body[field] = bad;
        let r = s.call("POST", "/v1/memories", k, Some(body));
        assert_eq!(r.status, 400, "{field}: {:?}", r.body);
        assert_eq!(r.body["error"]["kind"], "invalid_input");
        assert!(
            r.body["error"]["message"].as_str().unwrap().contains(field),
            "{:?}",
            r.body
        );
    }
    let r = s.call("GET", "/v1/memories", k, None);
    assert_eq!(
        r.body["results"].as_array().unwrap().len(),
        2,
        "nothing written"
    );

    // Links: add, list from both ends, bad strength refused, remove.
    let r = s.call(
        "POST",
        &format!("/v1/memories/{opera}/links"),
        k,
        Some(json!({"links": [{"to": trip, "strength": 0.8, "reason": "same trip"}]})),
    );
    assert_eq!(r.status, 200, "{:?}", r.body);
    for end in [&trip, &opera] {
        let r = s.call("GET", &format!("/v1/memories/{end}/links"), k, None);
        let links = r.body["results"].as_array().unwrap();
        assert_eq!(links.len(), 1, "{end}: {:?}", r.body);
        assert_eq!(links[0]["author"], "caller");
        assert_eq!(links[0]["reason"], "same trip");
    }
    for (bad, field) in [
        (json!({"to": trip, "strength": 1.5}), "strength"),
        (json!({"to": opera}), "to"),
        (json!({"to": "00000000-0000-7000-8000-000000000000"}), "to"),
    ] {
        let r = s.call(
            "POST",
            &format!("/v1/memories/{opera}/links"),
            k,
            Some(json!({"links": [bad]})),
        );
        assert_eq!(r.status, 400, "{field}: {:?}", r.body);
        assert!(
            r.body["error"]["message"].as_str().unwrap().contains(field),
            "{:?}",
            r.body
        );
    }

    // Search: the opera note is a direct hit, the trip comes through the link with `via`.
    let r = s.call(
        "POST",
        "/v1/memories/search",
        k,
        Some(json!({"query": "opera Saturday", "top_k": 1, "expand_links": 1})),
    );
    assert_eq!(r.status, 200, "{:?}", r.body);
    let hits = r.body["results"].as_array().unwrap();
    assert_eq!(hits.len(), 2, "{:?}", r.body);
    assert_eq!(hits[0]["id"], opera.as_str());
    assert!(hits[0].get("via").is_none());
    assert_eq!(hits[1]["id"], trip.as_str());
    assert_eq!(hits[1]["via"]["memory_id"], opera.as_str());

    // Another user sees neither the links nor the memories.
    let other = s.user_key("bob");
    let r = s.call(
        "GET",
        &format!("/v1/memories/{trip}/links"),
        Some(other.as_str()),
        None,
    );
    assert_eq!(r.status, 404, "{:?}", r.body);

    let r = s.call(
        "DELETE",
        &format!("/v1/memories/{opera}/links/{trip}"),
        k,
        None,
    );
    assert_eq!(r.status, 200, "{:?}", r.body);
    let r = s.call(
        "DELETE",
        &format!("/v1/memories/{opera}/links/{trip}"),
        k,
        None,
    );
    assert_eq!(r.status, 404, "{:?}", r.body);
    let r = s.call("GET", &format!("/v1/memories/{trip}/links"), k, None);
    assert!(r.body["results"].as_array().unwrap().is_empty());
}

#[test]
fn mcp_adds_notes_and_expands_search_along_links() {
    let s = TestServer::start();
    let alice = s.user_key("alice");
    let session = open_session(&s, &alice);
    let added = call_tool(
        &s,
        &alice,
        &session,
        "add_memory",
        json!({"text": "the cabin key is under the blue pot", "memory_type": "note", "tags": ["cabin"]}),
    );
    assert_eq!(added.status, 200, "{}", added.text);
    assert!(added.text.contains("cabin key"), "{}", added.text);
    let r = s.call("GET", "/v1/memories", Some(alice.as_str()), None);
    let m = &r.body["results"][0];
    assert_eq!(m["kind"], "note");
    assert_eq!(m["note"]["tags"], json!(["cabin"]));
    let found = call_tool(
        &s,
        &alice,
        &session,
        "search_memories",
        json!({"query": "cabin key", "expand_links": 2}),
    );
    assert_eq!(found.status, 200, "{}", found.text);
    assert!(found.text.contains("blue pot"), "{}", found.text);
    let bad = call_tool(
        &s,
        &alice,
        &session,
        "add_memory",
        json!({"text": "x", "memory_type": "note", "keywords": [""]}),
    );
    assert!(bad.text.contains("keywords"), "{}", bad.text);
}

/// The link tools over MCP: a link is added, seen from both ends and removed; both ends must lie
/// in the key's scope, invented ids and bad strengths are invalid input naming the field, and
/// another user's key can neither see nor remove the link.
#[test]
fn mcp_link_tools_add_list_and_remove_within_the_keys_scope() {
    let s = TestServer::start();
    let alice = s.user_key("alice");
    let bob = s.user_key("bob");
    let lock = s.seed("alice", "the spare bike lock is in the garage");
    let code = s.seed("alice", "the garage door code is 4512");
    let bobs = s.seed("bob", "bob keeps his bike at work");
    let session = open_session(&s, &alice);
    let tool = |name: &str, args: serde_json::Value| call_tool(&s, &alice, &session, name, args);

    let added = tool(
        "add_link",
        json!({"memory_id": lock, "to": code, "strength": 0.7, "reason": "both about the garage"}),
    );
    assert_eq!(added.status, 200, "{}", added.text);
    let links = added.tool_json()["results"].as_array().unwrap().clone();
    assert_eq!(links.len(), 1, "{links:?}");
    assert_eq!(links[0]["to"], code.as_str());
    assert_eq!(links[0]["author"], "caller");
    let seen = tool("get_links", json!({"memory_id": code})).tool_json();
    let seen = seen["results"].as_array().unwrap();
    assert_eq!(seen.len(), 1, "the other end sees the link: {seen:?}");
    assert_eq!(seen[0]["from"], lock.as_str());
    assert_eq!(seen[0]["reason"], "both about the garage");

    // Refused, naming the field, with nothing written: an end outside alice's scope, an
    // invented id, a strength outside [0, 1], a self-link.
    let invented = "00000000-0000-7000-8000-000000000000";
    for (args, field) in [
        (json!({"memory_id": lock, "to": bobs}), "to"),
        (json!({"memory_id": lock, "to": invented}), "to"),
        (
            json!({"memory_id": lock, "to": code, "strength": 1.5}),
            "strength",
        ),
        (json!({"memory_id": lock, "to": lock}), "to"),
    ] {
        let (code_, kind, message) = tool("add_link", args.clone()).tool_error();
        assert_eq!((code_, kind.as_str()), (-32602, "invalid_input"), "{args}");
        assert!(message.contains(field), "{args}: {message}");
    }
    // A link from a memory the key cannot see is about a memory that is not there for it.
    for from in [bobs.as_str(), invented] {
        let (c, kind, _) = tool("add_link", json!({"memory_id": from, "to": lock})).tool_error();
        assert_eq!((c, kind.as_str()), (-32004, "not_found"), "{from}");
    }
    let admin = s.admin.clone();
    let r = s.call(
        "GET",
        &format!("/v1/memories/{bobs}/links"),
        Some(&admin),
        None,
    );
    assert_eq!(r.body["results"], json!([]), "nothing written for bob");
    let r = s.call(
        "GET",
        &format!("/v1/memories/{lock}/links"),
        Some(&admin),
        None,
    );
    assert_eq!(r.body["results"].as_array().unwrap().len(), 1);

    // Naming another user with alice's key is forbidden; bob's key does not see alice's ids.
    let (c, kind, _) = tool("get_links", json!({"memory_id": lock, "user_id": "bob"})).tool_error();
    assert_eq!((c, kind.as_str()), (-32003, "forbidden"));
    let bob_session = open_session(&s, &bob);
    let by_bob =
        |name: &str, args: serde_json::Value| call_tool(&s, &bob, &bob_session, name, args);
    let (c, kind, _) = by_bob("get_links", json!({"memory_id": lock})).tool_error();
    assert_eq!((c, kind.as_str()), (-32004, "not_found"));
    let (c, kind, _) = by_bob("remove_link", json!({"memory_id": lock, "to": code})).tool_error();
    assert_eq!((c, kind.as_str()), (-32004, "not_found"));
    let seen = tool("get_links", json!({"memory_id": lock})).tool_json();
    assert_eq!(
        seen["results"].as_array().unwrap().len(),
        1,
        "bob removed nothing"
    );

    // Removed once; a second removal finds no link.
    let removed = tool("remove_link", json!({"memory_id": lock, "to": code}));
    assert_eq!(removed.status, 200, "{}", removed.text);
    assert_eq!(removed.tool_json()["removed"]["to"], code.as_str());
    let (c, kind, message) =
        tool("remove_link", json!({"memory_id": lock, "to": code})).tool_error();
    assert_eq!((c, kind.as_str()), (-32004, "not_found"), "{message}");
    let seen = tool("get_links", json!({"memory_id": code})).tool_json();
    assert_eq!(seen["results"], json!([]));
}
