//! The timeline view: a scope's events in the order they happened, each with its event time,
//! the words it was read from and the turn it was said in; paged by cursor.

use super::*;
use serde_json::json;

pub(super) fn events_in_the_order_they_happened(c: &Ctx) {
    for (text, ts) in [
        ("Tina opened her bakery yesterday", "2023-05-08T10:00:00Z"),
        ("Tina learned to bake in 2015", "2023-05-08T10:05:00Z"),
        ("Tina likes rye bread", "2023-05-08T10:10:00Z"),
    ] {
        let r = c.s.call(
            "POST",
            "/v1/memories",
            Some(&c.s.admin),
            Some(json!({"text": text, "user_id": "tina", "infer": false, "timestamp": ts})),
        );
        assert_eq!(r.status, 200, "{:?}", r.body);
    }
    use_scope(c, "tina");
    go(c, "timeline", "#/timeline");
    let rows: Vec<String> =
        c.b.find_all("#timeline-table tbody tr")
            .iter()
            .map(|e| c.b.text(e))
            .collect();
    assert_eq!(
        rows.len(),
        2,
        "the undated memory is not on the timeline: {rows:?}"
    );
    assert!(
        rows[0].contains("Tina learned to bake in 2015") && rows[0].contains("2015"),
        "{rows:?}"
    );
    assert!(
        rows[1].contains("Tina opened her bakery") && rows[1].contains("7 May 2023"),
        "{rows:?}"
    );
    assert!(
        rows[1].contains("yesterday"),
        "the phrase it was read from: {rows:?}"
    );
    go(c, "timeline", "#/timeline?limit=1");
    assert!(text_of(c, "#timeline-table").contains("2015"));
    let next = c.b.find("#timeline-next");
    c.b.render("timeline", || c.b.click(&next));
    assert!(text_of(c, "#timeline-table").contains("bakery"));
    c.shot("timeline");
}
