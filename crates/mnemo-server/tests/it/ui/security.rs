//! Headers, refused keys, markup shown as text, the CSP blocking injected script, bad input,
//! and tenancy: a key bound to bob sees nothing of alice's in the DOM or the network log.

use super::fixture::{XSS_META, XSS_TEXT};
use super::*;
use serde_json::{json, Value};

pub(super) fn headers(c: &Ctx) {
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

pub(super) fn revoked_key_is_refused(c: &Ctx) {
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

pub(super) fn no_injection(c: &Ctx) {
    assert_eq!(c.b.dialog(), None, "no dialog opened");
    let v = c.b.js("return [document.querySelectorAll('main img, main script, main b').length, window.__xss === undefined];", json!([]));
    assert_eq!(v, json!([0, true]), "no element was injected");
}

pub(super) fn markup_renders_as_text(c: &Ctx) {
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
    // The source message holds the same markup; it is shown as text too.
    let sources = text_of(c, "#sources-table");
    assert!(sources.contains(XSS_TEXT), "{sources}");
    no_injection(c);
    c.shot("markup");
}

pub(super) fn inline_script_is_blocked(c: &Ctx) {
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

pub(super) fn bad_input_messages(c: &Ctx) {
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

/// Every `/v1` URL the page requested, replayed with bob's key: none names alice or answers
/// with her text.
pub(super) fn network_is_clean(c: &Ctx, urls: &[String]) {
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

pub(super) fn bob_sees_no_alice(c: &Ctx) {
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
        ("blocks", "#/blocks".into()),
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

/// A server started with `--no-auth` on loopback: the page continues without a key and shows
/// every scope, as the API does.
pub(super) fn no_key_server_shows_everything(c: &Ctx) {
    let open = TestServer::start_with(std::sync::Arc::new(mnemo_testkit::HashEmbedder), |cfg| {
        cfg.no_auth = true
    });
    open.seed("alice", "Alice likes tea");
    open.seed("bob", "Bob likes chess");
    c.b.goto(&format!("{}/ui/", open.url));
    c.b.js("sessionStorage.clear();", json!([]));
    c.b.goto(&format!("{}/ui/?nokey", open.url));
    c.b.wait("#signin:not([hidden]) #nokey");
    c.b.render("scopes", || c.b.click(&c.b.find("#nokey")));
    let t = text_of(c, "#scopes-table");
    assert!(
        t.contains("user_id=alice") && t.contains("user_id=bob"),
        "{t}"
    );
    assert!(text_of(c, "#who").contains("no key"));
    assert_eq!(
        c.b.js("return sessionStorage.getItem('mnemo.key');", json!([])),
        Value::Null
    );
}

/// An id taken from the URL goes into API paths percent-encoded: a crafted graph link whose id
/// holds `../` segments makes the page ask for that (invalid) memory id, never for another
/// route such as `/v1/keys/links` with the signed-in key.
pub(super) fn url_ids_are_encoded_into_api_paths(c: &Ctx) {
    // An admin key: the one whose requests to `/v1/keys` would be answered.
    sign_in(c, Some(&c.s.admin));
    c.b.network_log();
    go(c, "graph", "#/graph/..%2F..%2Fv1%2Fkeys");
    let urls = c.b.network_log();
    let api: Vec<&String> = urls.iter().filter(|u| u.contains("/v1/")).collect();
    assert!(
        api.iter()
            .any(|u| u.contains("/v1/memories/..%2F..%2Fv1%2Fkeys")),
        "the page asked for the id as given, encoded: {urls:?}"
    );
    for u in &api {
        let path = u.strip_prefix(&c.s.url).unwrap_or(u);
        assert!(
            !path.starts_with("/v1/keys"),
            "the crafted id reached another route: {u}"
        );
    }
}
