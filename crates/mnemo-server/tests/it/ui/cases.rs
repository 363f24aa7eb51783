//! The cases of the browser suite, run in order in one browser session.

use super::fixture::{ALICE_SECRET, XSS_META, XSS_TEXT};
use super::Ctx;
use serde_json::{json, Value};

pub fn run_all(c: &Ctx) {
    let cases: &[(&str, fn(&Ctx))] = &[
        ("ui_answers_carry_the_csp_and_security_headers", headers),
        (
            "a_revoked_or_unknown_key_is_refused_with_a_message",
            revoked_key_is_refused,
        ),
        (
            "sign_in_shows_the_scopes_the_key_sees",
            sign_in_shows_scopes,
        ),
        (
            "a_memory_added_through_the_api_is_listed",
            added_memory_is_listed,
        ),
        ("search_shows_per_signal_scores", search_shows_scores),
        (
            "an_edit_in_the_page_shows_in_the_history",
            edit_shows_in_history,
        ),
        (
            "a_superseded_fact_shows_its_successor",
            superseded_shows_successor,
        ),
        (
            "markup_in_text_and_metadata_renders_as_text",
            markup_renders_as_text,
        ),
        (
            "an_injected_inline_script_is_blocked_by_the_csp",
            inline_script_is_blocked,
        ),
        ("a_pack_shows_reasons_within_its_budget", pack_within_budget),
        (
            "bad_input_gets_clear_messages_in_the_page",
            bad_input_messages,
        ),
        ("the_notes_graph_draws_a_note_and_its_links", notes_graph),
        (
            "conversations_and_profile_views_render",
            conversations_and_profile,
        ),
        (
            "admin_sees_keys_stats_and_metrics_and_creates_a_key",
            admin_view,
        ),
        (
            "keyboard_focus_is_visible_and_reaches_the_views",
            keyboard_focus,
        ),
        ("the_memories_view_fits_a_phone_width", phone_width),
        (
            "a_thousand_memories_render_and_are_timed",
            thousand_memories,
        ),
        (
            "a_key_bound_to_bob_sees_nothing_of_alices_on_any_view",
            bob_sees_no_alice,
        ),
    ];
    for (name, case) in cases {
        eprintln!("ui case: {name}");
        case(c);
    }
}

/// Signs in afresh with `key` (None: continue without one) and waits for the scopes view.
fn sign_in(c: &Ctx, key: Option<&str>) {
    c.b.goto(&c.ui(""));
    c.b.js("sessionStorage.clear();", json!([]));
    c.b.goto(&c.ui("?fresh"));
    let input = c.b.wait("#signin:not([hidden]) #key");
    match key {
        Some(k) => {
            c.b.type_into(&input, k);
            c.b.render("scopes", || {
                c.b.click(&c.b.find("#signin-form button[type=submit]"))
            });
        }
        None => c.b.render("scopes", || c.b.click(&c.b.find("#nokey"))),
    }
}

/// Sets the scope bar's user and applies it (the view re-renders).
fn use_scope(c: &Ctx, user: &str) {
    c.b.js(
        "sessionStorage.setItem('mnemo.scope', JSON.stringify({user_id: arguments[0]}));",
        json!([user]),
    );
}

/// Goes to a hash route of the loaded page and waits for `view` to render (re-rendering when
/// the hash is already that one).
fn go(c: &Ctx, view: &str, hash: &str) {
    c.b.render(view, || {
        c.b.js(
            "if (location.hash === arguments[0]) window.dispatchEvent(new HashChangeEvent('hashchange')); else location.hash = arguments[0];",
            json!([hash]),
        );
    });
}

fn text_of(c: &Ctx, css: &str) -> String {
    c.b.text(&c.b.find(css))
}

fn headers(c: &Ctx) {
    for path in [
        "/ui",
        "/ui/",
        "/ui/app.js",
        "/ui/style.css",
        "/ui/views/memory.js",
    ] {
        let r = c.s.raw("GET", path, None, None, None);
        assert_eq!(r.status, 200, "{path}");
        let csp = r.header("content-security-policy").expect("a CSP");
        for part in [
            "default-src 'none'",
            "script-src 'self'",
            "frame-ancestors 'none'",
            "base-uri 'none'",
            "form-action 'none'",
        ] {
            assert!(csp.contains(part), "{path}: {csp}");
        }
        assert!(
            !csp.contains("unsafe-inline") && !csp.contains("unsafe-eval"),
            "{csp}"
        );
        assert_eq!(r.header("x-content-type-options"), Some("nosniff"));
        assert_eq!(r.header("x-frame-options"), Some("DENY"));
        assert_eq!(r.header("referrer-policy"), Some("no-referrer"));
        assert!(r.header("set-cookie").is_none(), "no cookie");
    }
    assert!(c
        .s
        .raw("GET", "/ui/app.js", None, None, None)
        .header("content-type")
        .unwrap()
        .starts_with("text/javascript"));
    assert_eq!(
        c.s.raw("GET", "/ui/../Cargo.toml", None, None, None).status,
        404
    );
    assert_eq!(c.s.raw("GET", "/ui/nope.js", None, None, None).status, 404);
}

fn revoked_key_is_refused(c: &Ctx) {
    let k =
        c.s.keys
            .create(
                None,
                false,
                &mnemo_server::ScopeParts::new(Some("alice".into()), None, None),
            )
            .unwrap();
    c.s.keys.revoke(&k.info.id).unwrap();
    c.b.goto(&c.ui(""));
    c.b.js("sessionStorage.clear();", json!([]));
    c.b.goto(&c.ui("?revoked"));
    let input = c.b.wait("#signin:not([hidden]) #key");
    c.b.type_into(&input, &k.key);
    c.b.click(&c.b.find("#signin-form button[type=submit]"));
    let msg = c.b.wait_until("the refusal message", || {
        let t = text_of(c, "#signin-error");
        (!t.is_empty()).then_some(t)
    });
    assert!(msg.contains("unknown or revoked"), "{msg}");
    assert_eq!(
        c.b.js("return sessionStorage.getItem('mnemo.key');", json!([])),
        Value::Null,
        "a refused key is not kept"
    );
    c.shot("signin");
    // A key revoked while signed in: the next view says so and asks to sign in again.
    let live =
        c.s.keys
            .create(
                None,
                false,
                &mnemo_server::ScopeParts::new(Some("alice".into()), None, None),
            )
            .unwrap();
    sign_in(c, Some(&live.key));
    c.s.keys.revoke(&live.info.id).unwrap();
    c.b.js("location.hash = '#/memories';", json!([]));
    let msg = c.b.wait_until("the signed-out message", || {
        let t = text_of(c, "#signin-error");
        (!t.is_empty()).then_some(t)
    });
    assert!(
        msg.contains("refused") && msg.contains("unknown or revoked"),
        "{msg}"
    );
}

fn sign_in_shows_scopes(c: &Ctx) {
    sign_in(c, Some(&c.s.admin));
    let t = text_of(c, "#scopes-table");
    for who in ["user_id=alice", "user_id=bob", "user_id=bulk"] {
        assert!(t.contains(who), "{t}");
    }
    // Counts by kind and state: alice has a superseded fact and notes.
    assert!(t.contains("superseded 1"), "{t}");
    assert!(t.contains("note 2"), "{t}");
    assert!(c.b.js("return sessionStorage.getItem('mnemo.key');", json!([])) == json!(c.s.admin));
    assert_eq!(
        c.b.js("return document.cookie;", json!([])),
        json!(""),
        "no cookie"
    );
    c.shot("scopes");
}

fn added_memory_is_listed(c: &Ctx) {
    let r = c.s.call(
        "POST",
        "/v1/memories",
        Some(&c.s.admin),
        Some(json!({"text": "Alice booked a table at Ramiro", "user_id": "alice", "infer": false})),
    );
    assert_eq!(r.status, 200);
    use_scope(c, "alice");
    go(c, "memories", "#/memories");
    let t = text_of(c, "#memory-table");
    assert!(t.contains("Alice booked a table at Ramiro"), "{t}");
    assert!(!t.contains("Bob likes chess"), "{t}");
    c.shot("memories");
}

fn search_shows_scores(c: &Ctx) {
    go(c, "memories", "#/memories?q=door+code+4711");
    let rows = c.b.find_all("#search-table tr.hit");
    assert!(!rows.is_empty());
    let first = c.b.text(&rows[0]);
    assert!(first.contains(ALICE_SECRET), "{first}");
    let dense: f64 = text_of(c, "#search-table tr.hit .s-dense").parse().unwrap();
    let lexical = text_of(c, "#search-table tr.hit .s-lexical");
    let (norm, _) = lexical.split_once(" / ").unwrap();
    assert!(dense > 0.0, "dense {dense}");
    assert!(norm.parse::<f64>().unwrap() > 0.0, "lexical {lexical}");
    text_of(c, "#search-table tr.hit .s-entity")
        .parse::<f64>()
        .unwrap();
    c.shot("search");
    // Link expansion: the notes search reaches the linked note with `via`.
    go(
        c,
        "memories",
        "#/memories?q=flights+booked&kind=note&limit=1",
    );
    let t = text_of(c, "#search-table");
    assert!(
        t.contains("related"),
        "a linked result shows its via link: {t}"
    );
}

fn edit_shows_in_history(c: &Ctx) {
    go(c, "memories", "#/memories");
    let link =
        c.b.find_all("#memory-table a.mem-link")
            .into_iter()
            .find(|a| c.b.text(a).contains("booked a table"))
            .unwrap();
    c.b.render("memory", || c.b.click(&link));
    let text = c.b.find("#edit-text");
    c.b.clear(&text);
    c.b.type_into(&text, "Alice booked a table at Cervejaria Ramiro");
    c.b.render("memory", || c.b.click(&c.b.find("#save")));
    assert_eq!(
        text_of(c, "#memory-text"),
        "Alice booked a table at Cervejaria Ramiro"
    );
    let h = text_of(c, "#history");
    assert!(
        h.contains("UPDATE") && h.contains("Cervejaria Ramiro") && h.contains("api-key:"),
        "{h}"
    );
    assert!(h.contains("was: Alice booked a table at Ramiro"), "{h}");
    c.shot("memory");
}

fn superseded_shows_successor(c: &Ctx) {
    go(c, "memories", "#/memories?state=any");
    let link =
        c.b.find_all("#memory-table a.mem-link")
            .into_iter()
            .find(|a| c.b.text(a) == "Alice lives in Berlin")
            .expect("the superseded fact is listed");
    c.b.render("memory", || c.b.click(&link));
    assert!(text_of(c, "#memory-state").contains("superseded"));
    let succ = text_of(c, "#successors");
    assert!(succ.contains(&c.seeded.new_fact), "{succ}");
    assert!(text_of(c, "#links-table").contains("she moved"));
    c.shot("lineage");
    go(c, "memory", &format!("#/memory/{}", c.seeded.new_fact));
    assert!(text_of(c, "#predecessors").contains(&c.seeded.old_fact));
    assert!(text_of(c, "#successors").contains("nothing (current)"));
}

fn no_injection(c: &Ctx) {
    assert_eq!(c.b.dialog(), None, "no dialog opened");
    let v = c.b.js("return [document.querySelectorAll('main img, main script, main b').length, window.__xss === undefined];", json!([]));
    assert_eq!(v, json!([0, true]), "no element was injected");
}

fn markup_renders_as_text(c: &Ctx) {
    go(c, "memories", "#/memories");
    assert!(text_of(c, "#memory-table").contains(XSS_TEXT));
    no_injection(c);
    go(c, "memory", &format!("#/memory/{}", c.seeded.xss_id));
    assert_eq!(text_of(c, "#memory-text"), XSS_TEXT);
    let meta = text_of(c, "#metadata-table");
    assert!(meta.contains(XSS_META), "{meta}");
    // Types survive: "0012" stays a string, 12 an integer, true a boolean.
    assert!(
        meta.contains("zip 0012 string")
            && meta.contains("n 12 integer")
            && meta.contains("ok true boolean"),
        "{meta}"
    );
    no_injection(c);
    c.shot("markup");
}

fn inline_script_is_blocked(c: &Ctx) {
    let v = c.b.js(
        "window.__violations = 0;
         document.addEventListener('securitypolicyviolation', () => { window.__violations += 1; });
         const s = document.createElement('script');
         s.textContent = 'window.__inline = 1;';
         document.body.appendChild(s);
         const d = document.createElement('div');
         d.setAttribute('onclick', 'window.__handler = 1');
         document.body.appendChild(d);
         d.click();
         return [window.__inline === undefined, window.__handler === undefined];",
        json!([]),
    );
    assert_eq!(
        v,
        json!([true, true]),
        "inline script and handlers do not run"
    );
    let n = c.b.wait_until("the CSP violation events", || {
        let n =
            c.b.js("return window.__violations;", json!([]))
                .as_u64()
                .unwrap();
        (n >= 2).then_some(n)
    });
    assert!(n >= 2);
}

fn pack_within_budget(c: &Ctx) {
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
                ["recent", "matched", "linked", "hot", "profile"].contains(&r.as_str()),
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
        text_of(c, "#pack-omitted").parse::<u64>().unwrap();
    }
    c.shot("pack");
}

fn notice(c: &Ctx) -> String {
    c.b.wait_until("a message in the page", || {
        let t = c.b.js(
            "const n = document.querySelector('main .notice'); return n ? n.textContent : null;",
            json!([]),
        );
        t.as_str().map(str::to_string)
    })
}

fn bad_input_messages(c: &Ctx) {
    let before = c.s.snapshot();
    go(c, "memories", "#/memories?filter=%7Bbad");
    let m = notice(c);
    assert!(m.contains("not JSON"), "{m}");
    go(
        c,
        "memories",
        "#/memories?filter=%7B%22user_id%22%3A%22bob%22%7D",
    );
    let m = notice(c);
    assert!(
        m.contains("invalid_input") && m.contains("names the scope"),
        "{m}"
    );
    go(
        c,
        "memories",
        "#/memories?filter=%7B%22n%22%3A%7B%22zz%22%3A1%7D%7D",
    );
    assert!(notice(c).contains("unknown operator"));
    go(c, "memory", "#/memory/01a22cec-5566-75a4-ba16-0f2c04e0d7ff");
    let m = notice(c);
    assert!(m.contains("not_found"), "{m}");
    go(c, "memory", "#/memory/not-an-id");
    assert!(notice(c).contains("invalid_input"));
    for budget in ["0", "200001", "lots"] {
        go(c, "pack", &format!("#/pack?query=x&budget={budget}"));
        let m = notice(c);
        assert!(
            m.contains("budget must be a whole number of tokens from 1 to 200000"),
            "{m}"
        );
    }
    let page = c.b.page_text();
    assert!(
        !page.contains("at http") && !page.contains("stack"),
        "no stack trace: {page}"
    );
    assert_eq!(before, c.s.snapshot(), "bad input changed nothing");
}

fn notes_graph(c: &Ctx) {
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

fn conversations_and_profile(c: &Ctx) {
    go(c, "conversations", "#/conversations?session=trip-chat");
    let page = c.b.page_text();
    // Either the routes answer, or each part says plainly that this server lacks them.
    if c.b.find_all("#sessions-table").is_empty() {
        assert!(page.contains("not available on this server"), "{page}");
    } else {
        assert!(text_of(c, "#sessions-table").contains("trip-chat"));
        assert!(text_of(c, "#messages-table").contains("quiet hotel in Lisbon"));
    }
    c.shot("conversations");
    go(c, "profile", "#/profile");
    let page = c.b.page_text();
    assert!(page.contains("Profile"), "{page}");
    c.shot("profile");
}

fn admin_view(c: &Ctx) {
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
    assert!(text_of(c, "#metrics").contains("requests served"));
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

fn keyboard_focus(c: &Ctx) {
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
    // Tab on to the next link (Profile); Enter opens its view.
    c.b.render("profile", || {
        c.b.cmd("POST", "/actions", Some(tab.clone()));
        c.b.cmd(
            "POST",
            "/actions",
            Some(json!({"actions": [{"type": "key", "id": "kb", "actions": [
            {"type": "keyDown", "value": "\u{E007}"}, {"type": "keyUp", "value": "\u{E007}"}]}]})),
        );
    });
    c.shot("focus");
}

fn phone_width(c: &Ctx) {
    c.b.viewport(390, 800);
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

fn thousand_memories(c: &Ctx) {
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

/// Every `/v1` URL the page requested, replayed with bob's key: none names alice or answers
/// with her text.
fn network_is_clean(c: &Ctx, urls: &[String]) {
    for u in urls {
        assert!(
            !u.to_lowercase().contains("alice"),
            "bob's page asked for {u}"
        );
        let Some(path) = u.strip_prefix(&c.s.url) else {
            assert!(u.starts_with("data:"), "a request leaves the server: {u}");
            continue;
        };
        if path.starts_with("/v1/") {
            let r = c.s.call("GET", path, Some(&c.seeded.bob_key), None);
            let body = r.body.to_string();
            assert!(
                !body.contains("alice") && !body.contains("4711"),
                "{path}: {body}"
            );
        }
    }
}

fn bob_sees_no_alice(c: &Ctx) {
    sign_in(c, Some(&c.seeded.bob_key));
    c.b.network_log();
    let mut urls = Vec::new();
    let alice_id = &c.seeded.secret_id;
    let views: Vec<(&str, String)> = vec![
        ("scopes", "#/scopes".into()),
        ("memories", "#/memories".into()),
        ("memories", "#/memories?state=any".into()),
        ("memories", "#/memories?q=door+code+4711".into()),
        ("memory", format!("#/memory/{alice_id}")),
        ("memory", format!("#/memory/{}", c.seeded.old_fact)),
        ("conversations", "#/conversations?session=trip-chat".into()),
        ("profile", "#/profile".into()),
        ("graph", "#/graph".into()),
        ("graph", format!("#/graph/{}", c.seeded.note_a)),
        (
            "pack",
            "#/pack?query=Lisbon+door+code&session=trip-chat&budget=500".into(),
        ),
        ("admin", "#/admin".into()),
    ];
    for (view, hash) in &views {
        go(c, view, hash);
        let page = c.b.page_text();
        for bad in [
            "alice",
            "Alice",
            "4711",
            "Lisbon",
            "Berlin",
            "flights booked",
        ] {
            assert!(!page.contains(bad), "bob's {hash} shows {bad:?}: {page}");
        }
        let dom =
            c.b.js("return document.documentElement.outerHTML;", json!([]))
                .as_str()
                .unwrap()
                .to_string();
        assert!(
            !dom.contains("alice") && !dom.contains("4711"),
            "bob's {hash} DOM holds alice's data"
        );
        if hash == "#/scopes" {
            assert!(page.contains("user_id=bob"), "{page}");
            c.shot("scopes-bob");
        }
        urls.extend(c.b.network_log());
    }
    assert!(
        urls.iter().any(|u| u.contains("/v1/memories")),
        "the log saw the API calls: {urls:?}"
    );
    let from_perf = c.b.js(
        "return performance.getEntriesByType('resource').map(e => e.name);",
        json!([]),
    );
    urls.extend(
        from_perf
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap().to_string()),
    );
    network_is_clean(c, &urls);
    // The admin link is hidden from a bound key, and the admin view refuses it.
    assert_eq!(
        c.b.js(
            "return document.querySelector('#nav .admin-only').hidden;",
            json!([])
        ),
        json!(true)
    );
}
