//! The other views (context pack, notes graph, conversations, profile, admin) and usability:
//! keyboard focus, a phone-width layout, the time to show 1,000 memories.

use super::*;
use serde_json::json;

pub(super) fn pack_within_budget(c: &Ctx) {
    for budget in [60u64, 400] {
        go(
            c,
            "pack",
            &format!("#/pack?query=Lisbon+trip+hotel&session=trip-chat&budget={budget}"),
        );
        let used: u64 = text_of(c, "#pack-used").parse().unwrap();
        assert!(used <= budget && used > 0, "{used} of {budget}");
        let reasons: Vec<String> =
            c.b.find_all("#pack td.reason")
                .iter()
                .map(|e| c.b.text(e))
                .collect();
        assert!(!reasons.is_empty());
        for r in &reasons {
            assert!(
                ["recent", "matched", "linked", "hot", "profile", "pinned"].contains(&r.as_str()),
                "{r}"
            );
        }
        let tokens: u64 =
            c.b.find_all("#pack td.tokens")
                .iter()
                .map(|e| c.b.text(e).parse::<u64>().unwrap())
                .sum();
        assert!(tokens <= budget, "items' tokens {tokens} within {budget}");
        assert!(!text_of(c, "#pack-rendered").is_empty());
        let omitted = text_of(c, "#pack-omitted").parse::<u64>().unwrap();
        if budget == 60 {
            assert!(omitted > 0, "a 60-token budget leaves candidates out");
        }
    }
    c.shot("pack");
}

pub(super) fn notes_graph(c: &Ctx) {
    go(c, "graph", "#/graph");
    assert!(text_of(c, "#note-list").contains("flights booked"));
    go(c, "graph", &format!("#/graph/{}", c.seeded.note_a));
    let v = c.b.js("const s = document.getElementById('graph-svg'); return [s.querySelectorAll('circle').length, s.querySelectorAll('line').length, s.textContent];", json!([]));
    assert_eq!(v[0], json!(2), "{v}");
    assert_eq!(v[1], json!(1), "{v}");
    assert!(
        v[2].as_str().unwrap().contains("hotel near Alfama")
            && v[2].as_str().unwrap().contains("same trip"),
        "{v}"
    );
    c.b.find(&format!(
        "#graph-svg a[href='#/memory/{}']",
        c.seeded.note_b
    ));
    c.shot("graph");
}

pub(super) fn conversations_and_profile(c: &Ctx) {
    go(c, "conversations", "#/conversations?session=trip-chat");
    let sessions = text_of(c, "#sessions-table");
    assert!(sessions.contains("trip-chat"), "{sessions}");
    let messages = text_of(c, "#messages-table");
    for said in ["tile museum", "grilled sardines", "quiet hotel in Lisbon"] {
        assert!(messages.contains(said), "{messages}");
    }
    // A window of one page: the last exchange; the earlier ones went on to segments.
    let window = text_of(c, "#window-table");
    assert!(
        window.contains("quiet hotel") && !window.contains("tile museum"),
        "{window}"
    );
    let segments = c.b.find_all("#segments-table tbody tr");
    assert!(!segments.is_empty(), "mid-term segments are listed");
    let seg = text_of(c, "#segments-table");
    assert!(
        seg.contains("visits") && seg.contains("recency") && seg.contains("active"),
        "heat inputs and state: {seg}"
    );
    assert!(seg.contains("Happened"), "the event time column: {seg}");
    c.shot("conversations");
    let trip = segments
        .iter()
        .find(|r| c.b.text(r).contains("trip-chat"))
        .expect("a segment of the trip-chat session");
    // "open on Monday", said in the first exchange, dates its segment (tier::page_event_time);
    // the seafood exchange states no time.
    let dated = segments
        .iter()
        .filter(|r| {
            c.b.js(
                "return arguments[0].querySelector('.when') !== null;",
                json!([{"element-6066-11e4-a52e-4f735466cecf": r.id()}]),
            ) == json!(true)
        })
        .count();
    assert_eq!(dated, 1, "one segment shows when it happened: {seg}");
    let link = c.b.js(
        "return arguments[0].querySelector('a').getAttribute('href');",
        json!([{"element-6066-11e4-a52e-4f735466cecf": trip.id()}]),
    );
    let hash = link.as_str().unwrap().to_string();
    go(c, "conversations", &hash);
    let pages = text_of(c, "#segment-pages-table");
    assert!(
        pages.contains("tile museum") || pages.contains("grilled sardines"),
        "{pages}"
    );
    go(c, "profile", "#/profile");
    let page = c.b.page_text();
    assert!(page.contains("No profile dimensions yet"), "{page}");
    assert!(
        page.contains("User knowledge") && page.contains("Assistant knowledge"),
        "{page}"
    );
    c.shot("profile");
}

pub(super) fn admin_view(c: &Ctx) {
    go(c, "admin", "#/admin");
    let keys = text_of(c, "#keys-table");
    assert!(
        keys.contains("admin") && keys.contains("user_id=bob"),
        "{keys}"
    );
    let stats = text_of(c, "#stats");
    assert!(
        stats.contains("memories") && stats.contains("schema version"),
        "{stats}"
    );
    let served = c.b.js(
        "const r = [...document.querySelectorAll('#metrics tr')].find(r => r.cells[0].textContent === 'requests served'); return Number(r.cells[1].textContent);",
        json!([]),
    );
    assert!(
        served.as_f64().unwrap() > 0.0,
        "the metrics count this run's requests: {served}"
    );
    c.b.type_into(&c.b.find("#key-user"), "carol");
    c.b.click(&c.b.find("#key-form button[type=submit]"));
    let key = c.b.wait_until("the new key", || {
        c.b.js(
            "const k = document.getElementById('new-key'); return k ? k.textContent : null;",
            json!([]),
        )
        .as_str()
        .map(str::to_string)
    });
    let p = c.s.keys.authenticate(&key).unwrap();
    assert_eq!(p.user_id.as_deref(), Some("carol"));
    assert!(!p.admin);
    c.shot("admin");
    // Revoke it through the page.
    go(c, "admin", "#/admin");
    let row =
        c.b.find(&format!("tr.key-row[data-id='{}'] button.revoke", p.key_id));
    c.b.render("admin", || c.b.click(&row));
    assert!(c.s.keys.authenticate(&key).is_err(), "revoked");
}

pub(super) fn keyboard_focus(c: &Ctx) {
    // A fresh load puts the focus at the start of the document (the key stays in the tab).
    let url = c.ui("?keyboard#/scopes");
    c.b.render("scopes", || c.b.goto(&url));
    let tab = json!({"actions": [{"type": "key", "id": "kb", "actions": [
        {"type": "keyDown", "value": "\u{E004}"}, {"type": "keyUp", "value": "\u{E004}"}]}]});
    let mut seen = Vec::new();
    for _ in 0..4 {
        c.b.cmd("POST", "/actions", Some(tab.clone()));
        let v = c.b.js("const e = document.activeElement; const s = getComputedStyle(e); return [e.tagName, e.textContent.trim(), s.outlineStyle, s.outlineWidth];", json!([]));
        seen.push(v);
    }
    // The skip link first, then the nav links, each with a visible focus ring.
    assert_eq!(seen[0][1], json!("Skip to content"), "{seen:?}");
    assert_eq!(seen[1][1], json!("Scopes"), "{seen:?}");
    for v in &seen {
        assert_ne!(v[2], json!("none"), "focus is visible: {v}");
    }
    // Tab on past Timeline to Profile; Enter opens its view.
    c.b.render("profile", || {
        c.b.cmd("POST", "/actions", Some(tab.clone()));
        c.b.cmd("POST", "/actions", Some(tab.clone()));
        c.b.cmd(
            "POST",
            "/actions",
            Some(json!({"actions": [{"type": "key", "id": "kb", "actions": [
            {"type": "keyDown", "value": "\u{E007}"}, {"type": "keyUp", "value": "\u{E007}"}]}]})),
        );
    });
    c.shot("focus");
    // Every form control of the views with forms has a label a screen reader can read.
    for (view, hash) in [
        ("memories", "#/memories".to_string()),
        ("memory", format!("#/memory/{}", c.seeded.new_fact)),
        ("pack", "#/pack".to_string()),
        ("admin", "#/admin".to_string()),
    ] {
        go(c, view, &hash);
        let unlabelled = c.b.js(
            "return [...document.querySelectorAll('main input, main select, main textarea')].filter(e => !e.labels.length && !e.getAttribute('aria-label')).map(e => e.name);",
            json!([]),
        );
        assert_eq!(unlabelled, json!([]), "unlabelled controls on {hash}");
    }
}

pub(super) fn phone_width(c: &Ctx) {
    c.b.viewport(390, 800);
    c.b.js(
        "document.activeElement && document.activeElement.blur();",
        json!([]),
    );
    go(c, "memories", "#/memories");
    let v = c.b.js(
        "return [document.documentElement.scrollWidth, window.innerWidth];",
        json!([]),
    );
    assert_eq!(v[1], json!(390));
    assert!(
        v[0].as_u64().unwrap() <= 390,
        "no sideways scrolling at 390 px: {v}"
    );
    c.shot("memories-phone");
    c.b.viewport(1280, 800);
}

pub(super) fn thousand_memories(c: &Ctx) {
    use_scope(c, "bulk");
    go(c, "memories", "#/memories?limit=1000");
    let rows = c.b.js(
        "return document.querySelectorAll('#memory-table tbody tr').length;",
        json!([]),
    );
    assert_eq!(rows, json!(1000));
    let v = c.b.js(
        "return [document.body.dataset.renderMs, document.body.dataset.listRenderMs];",
        json!([]),
    );
    println!(
        "ui timing: 1000 memories listed in {} ms (fetch + render), table built in {} ms",
        v[0].as_str().unwrap(),
        v[1].as_str().unwrap()
    );
    c.shot("memories-1000");
}

/// The profile view on a server with a chat model: refreshing through the page writes the
/// profile, shown with each dimension's evidence and the user and assistant knowledge.
pub(super) fn profile_with_evidence(c: &Ctx) {
    let s = super::fixture::start_with_chat(Some(super::fixture::profile_chat()));
    let r = s.call(
        "POST",
        "/v1/memories",
        Some(&s.admin),
        Some(
            json!({"user_id": "ann", "infer": false, "session_id": "s1", "messages": [
            {"role": "user", "content": "For Porto I want a quiet hotel, please"},
            {"role": "assistant", "content": "A quiet guesthouse by the river, then"}]}),
        ),
    );
    assert_eq!(r.status, 200, "{:?}", r.body);
    c.b.goto(&format!("{}/ui/", s.url));
    c.b.js("sessionStorage.clear();", json!([]));
    c.b.goto(&format!("{}/ui/?profile", s.url));
    let input = c.b.wait("#signin:not([hidden]) #key");
    c.b.type_into(&input, &s.admin);
    c.b.render("scopes", || {
        c.b.click(&c.b.find("#signin-form button[type=submit]"))
    });
    c.b.js(
        "sessionStorage.setItem('mnemo.scope', JSON.stringify({user_id: 'ann'}));",
        json!([]),
    );
    go(c, "profile", "#/profile");
    assert!(c.b.page_text().contains("No profile dimensions yet"));
    c.b.render("profile", || c.b.click(&c.b.find("#refresh-profile")));
    let dims = text_of(c, "#profile-table");
    assert!(
        dims.contains("travel") && dims.contains("prefers quiet hotels"),
        "{dims}"
    );
    let evidence = c.b.find_all("#profile-table ul.evidence li");
    assert_eq!(evidence.len(), 1, "one evidence message");
    let said = c.b.text(&evidence[0]);
    assert!(
        said.contains("user: For Porto I want a quiet hotel"),
        "the evidence shows its message: {said}"
    );
    assert!(text_of(c, "#user-knowledge").contains("planning a trip to Porto"));
    assert!(text_of(c, "#assistant-knowledge").contains("quiet guesthouse"));
    c.shot("profile");
}
