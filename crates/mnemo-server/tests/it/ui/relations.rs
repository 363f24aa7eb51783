//! The entity graph view: an entity's neighbourhood drawn as SVG to depth 2 (the centre, what
//! one hop and two hops reach, each relation a labelled line, a closed one dashed), re-centred
//! by clicking a node, reachable from the navigation, and a key of another user sees none of it.

use super::*;
use serde_json::{json, Value};

fn said(c: &Ctx, user: &str, text: &str, at: &str) {
    let r = c.s.call(
        "POST",
        "/v1/memories",
        Some(&c.s.admin),
        Some(json!({"user_id": user, "infer": false, "timestamp": at,
            "messages": [{"role": "user", "name": "Cara", "content": text}]})),
    );
    assert_eq!(r.status, 200, "{:?}", r.body);
}

/// `[circles, lines, dashed lines, the drawing's text]` of the view's SVG.
fn drawing(c: &Ctx) -> Value {
    c.b.js(
        "const s = document.getElementById('relations-svg'); return [s.querySelectorAll('circle').length, s.querySelectorAll('line').length, s.querySelectorAll('line[stroke-dasharray]').length, s.textContent];",
        json!([]),
    )
}

pub(super) fn entity_neighbourhood(c: &Ctx) {
    said(
        c,
        "cara",
        "My sister Ana lives in Porto.",
        "2023-05-01T10:00:00Z",
    );
    said(
        c,
        "cara",
        "Ana lives in Lisbon now.",
        "2024-05-01T10:00:00Z",
    );
    said(c, "cara", "Ana works at Nokia.", "2024-05-02T10:00:00Z");
    said(c, "bob", "Ana lives in Oslo.", "2024-05-02T10:00:00Z");
    sign_in(c, Some(&c.s.admin));
    use_scope(c, "cara");
    // The navigation names the view.
    c.b.render("relations", || {
        c.b.click(&c.b.find("#nav a[href='#/relations']"))
    });
    assert!(text_of(c, "main").contains("Name an entity"));

    go(c, "relations", "#/relations?entity=Cara&depth=1");
    let one = drawing(c);
    assert_eq!(one[0], json!(2), "Cara and Ana: {one}");
    assert_eq!(one[1], json!(1), "{one}");
    assert!(one[3].as_str().unwrap().contains("sibling_of"), "{one}");

    go(c, "relations", "#/relations?entity=Cara&depth=2");
    let two = drawing(c);
    let text = two[3].as_str().unwrap();
    for name in ["Cara", "Ana", "Lisbon", "Nokia", "lives_in", "works_at"] {
        assert!(text.contains(name), "{name} missing: {two}");
    }
    assert!(!text.contains("Oslo"), "bob's edge in cara's graph: {two}");
    let table = text_of(c, "#relations-table");
    assert!(table.contains("Ana works at Nokia."), "{table}");
    c.shot("relations");

    // As of 2023 Ana lived in Porto; the closed edge is drawn dashed in the history.
    go(
        c,
        "relations",
        "#/relations?entity=Ana&depth=1&as_of=2023-12-01T00%3A00%3A00Z",
    );
    let then = drawing(c);
    assert!(then[3].as_str().unwrap().contains("Porto"), "{then}");
    assert!(!then[3].as_str().unwrap().contains("Lisbon"), "{then}");

    // Clicking a reached entity re-centres the view on it.
    go(c, "relations", "#/relations?entity=Cara&depth=1");
    c.b.render("relations", || {
        c.b.click(&c.b.find("#relations-svg a.node"))
    });
    assert!(text_of(c, "#relations-summary").starts_with("Ana"));

    // Bob's key: cara's entity answers as missing, bob's Ana shows only bob's edge.
    sign_in(c, Some(&c.seeded.bob_key));
    use_scope(c, "cara");
    go(c, "relations", "#/relations?entity=Cara&depth=2");
    let refused = notice(c);
    assert!(
        !refused.contains("Porto") && !refused.contains("Lisbon"),
        "{refused}"
    );
    assert!(c.b.find_all("#relations-svg").is_empty());
    use_scope(c, "bob");
    go(c, "relations", "#/relations?entity=Ana&depth=2");
    let bobs = drawing(c);
    let text = bobs[3].as_str().unwrap();
    assert!(
        text.contains("Oslo") && !text.contains("Lisbon") && !text.contains("Nokia"),
        "{bobs}"
    );
}
