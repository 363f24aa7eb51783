//! The core memory view: alice's blocks with their used/limit characters, description and
//! history; an edit in the page by the owner's key is a new version in the history; an agent's
//! key is refused the read-only block with the message in the page, and nothing changes.

use super::*;
use mnemo_server::ScopeParts;
use serde_json::json;

fn api(c: &Ctx, method: &str, path: &str, body: serde_json::Value) -> serde_json::Value {
    let r = c.s.call(method, path, Some(&c.s.admin), Some(body));
    assert_eq!(r.status, 200, "{path}: {:?}", r.body);
    r.body
}

fn set_scope(c: &Ctx, scope: serde_json::Value) {
    c.b.js(
        "sessionStorage.setItem('mnemo.scope', JSON.stringify(arguments[0]));",
        json!([scope]),
    );
}

pub(super) fn blocks_with_history_and_edits(c: &Ctx) {
    api(
        c,
        "POST",
        "/v1/blocks",
        json!({"user_id": "alice", "label": "human",
        "value": "Alice likes trains.", "description": "About Alice", "agents": ["bot"]}),
    );
    api(
        c,
        "POST",
        "/v1/blocks",
        json!({"user_id": "alice", "label": "policy",
        "value": "Be kind.", "read_only": true, "agents": ["bot"]}),
    );
    api(
        c,
        "POST",
        "/v1/blocks/human/edit",
        json!({"user_id": "alice", "op": "append",
        "text": "Alice is vegetarian.", "reason": "she said so"}),
    );

    sign_in(c, Some(&c.s.admin));
    set_scope(c, json!({"user_id": "alice"}));
    go(c, "blocks", "#/blocks");
    let human = "section.block[data-label='human']";
    let t = text_of(c, human);
    for want in [
        "v2",
        "40/2000 chars",
        "About Alice",
        "Alice is vegetarian.",
        "Attached to: bot",
    ] {
        assert!(t.contains(want), "{want}: {t}");
    }
    let hist = text_of(c, &format!("{human} table.block-history"));
    assert!(
        hist.contains("append") && hist.contains("she said so") && hist.contains("create"),
        "{hist}"
    );
    assert!(text_of(c, "section.block[data-label='policy']").contains("read-only"));

    // The owner's edit in the page: a new version, in the history with its before and after.
    let area = c.b.find(&format!("{human} textarea"));
    c.b.clear(&area);
    c.b.type_into(&area, "Alice likes night trains.");
    c.b.render("blocks", || {
        c.b.click(&c.b.find(&format!("{human} button.block-save")))
    });
    let t = text_of(c, human);
    assert!(
        t.contains("v3") && t.contains("Alice likes night trains."),
        "{t}"
    );
    let hist = text_of(c, &format!("{human} table.block-history"));
    assert!(
        hist.contains("rewrite") && hist.contains("Alice is vegetarian."),
        "{hist}"
    );
    c.shot("blocks");

    // An agent's key sees the blocks attached to it and is refused the read-only one.
    let agent_key =
        c.s.keys
            .create(
                None,
                false,
                &ScopeParts::new(Some("alice".into()), Some("bot".into()), None),
            )
            .unwrap()
            .key;
    sign_in(c, Some(&agent_key));
    set_scope(c, json!({"user_id": "alice", "agent_id": "bot"}));
    go(c, "blocks", "#/blocks");
    let policy = "section.block[data-label='policy']";
    let area = c.b.find(&format!("{policy} textarea"));
    c.b.clear(&area);
    c.b.type_into(&area, "Be rude.");
    c.b.click(&c.b.find(&format!("{policy} button.block-save")));
    let refused = c.b.wait_until("the refusal in the page", || {
        let t = c.b.js(
            "const n = document.querySelector(arguments[0] + ' .block-edit-status'); return n && n.textContent ? n.textContent : null;",
            json!([policy]),
        );
        t.as_str().map(str::to_string)
    });
    assert!(refused.contains("read-only"), "{refused}");
    let now =
        c.s.call(
            "GET",
            "/v1/blocks/policy?user_id=alice",
            Some(&c.s.admin),
            None,
        )
        .body;
    assert_eq!(
        (now["value"].as_str(), now["version"].as_u64()),
        (Some("Be kind."), Some(1))
    );
    // The next cases go on as the admin in alice's scope.
    sign_in(c, Some(&c.s.admin));
    use_scope(c, "alice");
}
