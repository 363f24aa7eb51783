//! Scopes, the memory list and its filters, search scores, one memory's lineage, and edits made
//! through the page (text, metadata, links, delete, erase) showing in the history.

use super::fixture::ALICE_SECRET;
use super::*;
use serde_json::{json, Value};

pub(super) fn sign_in_shows_scopes(c: &Ctx) {
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

pub(super) fn added_memory_is_listed(c: &Ctx) {
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

pub(super) fn search_shows_scores(c: &Ctx) {
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

pub(super) fn edit_shows_in_history(c: &Ctx) {
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

/// Opens the memory whose text contains `needle` from the list of the current scope.
pub(super) fn open_listed(c: &Ctx, needle: &str) -> String {
    go(c, "memories", "#/memories");
    let link =
        c.b.find_all("#memory-table a.mem-link")
            .into_iter()
            .find(|a| c.b.text(a).contains(needle))
            .unwrap();
    c.b.render("memory", || c.b.click(&link));
    c.b.js("return location.hash.split('/').pop();", json!([]))
        .as_str()
        .unwrap()
        .to_string()
}

pub(super) fn click_then_confirm(c: &Ctx, label: &str, view: &str) {
    let b =
        c.b.find_all("main button.danger")
            .into_iter()
            .find(|b| c.b.text(b) == label)
            .unwrap();
    c.b.click(&b);
    let confirm = c.b.wait_until("the confirmation button", || {
        c.b.find_all("main button.danger")
            .into_iter()
            .find(|b| c.b.text(b) == format!("Confirm: {}", label.to_lowercase()))
    });
    c.b.render(view, || c.b.click(&confirm));
}

pub(super) fn page_edits(c: &Ctx) {
    let id = open_listed(c, "Cervejaria Ramiro");
    // Add a link to another memory of the scope, with a reason; then remove it.
    c.b.type_into(&c.b.find("#link-to"), &c.seeded.secret_id);
    c.b.type_into(
        &c.b.find("#link-form input[name=reason]"),
        "both are about places",
    );
    c.b.render("memory", || {
        c.b.click(&c.b.find("#link-form button[type=submit]"))
    });
    let links = text_of(c, "#links-table");
    assert!(
        links.contains("both are about places")
            && links.contains("caller")
            && links.contains("related"),
        "{links}"
    );
    let remove = c.b.find("#links-table tr.link button");
    c.b.render("memory", || c.b.click(&remove));
    assert!(c.b.find_all("#links-table").is_empty(), "the link is gone");
    // Metadata with types, through the edit form.
    let meta = c.b.find("#edit-metadata");
    c.b.clear(&meta);
    c.b.type_into(&meta, r#"{"party": 4, "place": "Lisbon", "zip": "0012"}"#);
    c.b.render("memory", || c.b.click(&c.b.find("#save")));
    let m = text_of(c, "#metadata-table");
    assert!(
        m.contains("party 4 integer") && m.contains("zip 0012 string"),
        "{m}"
    );
    let r = c.s.call(
        "GET",
        &format!("/v1/memories/{id}?user_id=alice"),
        Some(&c.s.admin),
        None,
    );
    assert_eq!(
        r.body["metadata"],
        json!({"party": 4, "place": "Lisbon", "zip": "0012"})
    );
    // Malformed metadata is refused in the page and changes nothing.
    let meta = c.b.find("#edit-metadata");
    c.b.clear(&meta);
    c.b.type_into(&meta, "{nope");
    c.b.click(&c.b.find("#save"));
    let msg = c.b.wait_until("the metadata message", || {
        let t = text_of(c, "#edit-status");
        (!t.is_empty()).then_some(t)
    });
    assert!(msg.contains("metadata is not JSON"), "{msg}");
    // Delete (two steps): gone from reads, DELETE in the history.
    click_then_confirm(c, "Delete", "memories");
    let r = c.s.call(
        "GET",
        &format!("/v1/memories/{id}?user_id=alice"),
        Some(&c.s.admin),
        None,
    );
    assert_eq!(r.status, 404);
    let h = c.s.call(
        "GET",
        &format!("/v1/memories/{id}/history?user_id=alice"),
        Some(&c.s.admin),
        None,
    );
    assert!(h.body.to_string().contains("\"DELETE\""), "{:?}", h.body);
    // Erase: the text leaves the store; the tombstone event says why.
    let r = c.s.call(
        "POST",
        "/v1/memories",
        Some(&c.s.admin),
        Some(json!({"text": "Alice's old phone is 555-0199", "user_id": "alice", "infer": false})),
    );
    let gone = r.body["results"][0]["id"].as_str().unwrap().to_string();
    go(c, "memory", &format!("#/memory/{gone}"));
    click_then_confirm(c, "Erase", "memories");
    let record =
        c.s.snapshot()
            .lines()
            .map(|l| serde_json::from_str::<Value>(l).unwrap())
            .find(|v| v["type"] == "memory" && v["id"] == gone.as_str())
            .unwrap();
    assert!(
        !record.to_string().contains("555-0199"),
        "the erased memory keeps no text: {record}"
    );
    let h = c.s.call(
        "GET",
        &format!("/v1/memories/{gone}/history?user_id=alice"),
        Some(&c.s.admin),
        None,
    );
    assert!(
        h.body.to_string().contains("erased from the inspector"),
        "{:?}",
        h.body
    );
}

pub(super) fn list_filters(c: &Ctx) {
    go(c, "memories", "#/memories?kind=note");
    let t = text_of(c, "#memory-table");
    assert!(
        t.contains("flights booked") && !t.contains(ALICE_SECRET),
        "{t}"
    );
    // As of March 2025 Alice lived in Berlin; the Lisbon fact came later.
    go(c, "memories", "#/memories?as_of=2025-03-01T00%3A00");
    let t = text_of(c, "#memory-table");
    assert!(
        t.contains("Alice lives in Berlin") && !t.contains("Alice lives in Lisbon"),
        "{t}"
    );
    // Created before 2025-12-31: only the two imported facts.
    go(c, "memories", "#/memories?to=2025-12-31T00%3A00&state=any");
    let rows = c.b.find_all("#memory-table tbody tr").len();
    assert_eq!(rows, 2);
    // A metadata expression.
    go(
        c,
        "memories",
        "#/memories?filter=%7B%22topic%22%3A%22home%22%7D",
    );
    let t = text_of(c, "#memory-table");
    assert!(
        t.contains("Alice lives in Lisbon") && !t.contains("flights booked"),
        "{t}"
    );
    // Cursor paging: two per page, then the next page.
    go(c, "memories", "#/memories?limit=2");
    assert_eq!(c.b.find_all("#memory-table tbody tr").len(), 2);
    let first = text_of(c, "#memory-table");
    let next = c.b.find("#next-page");
    c.b.render("memories", || c.b.click(&next));
    assert_ne!(first, text_of(c, "#memory-table"));
}

pub(super) fn superseded_shows_successor(c: &Ctx) {
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
