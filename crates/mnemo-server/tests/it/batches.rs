//! Batch routes commit all items or none.

use crate::TestServer;
use serde_json::json;

/// Before: a batch update applied its items one transaction at a time, so an item refused
/// midway (here an empty text) left the items before it changed. Now nothing changes.
#[test]
fn a_batch_update_with_a_bad_item_changes_nothing() {
    let s = TestServer::start();
    let k = s.user_key("tess");
    let a = s.seed("tess", "Tess drinks tea");
    let b = s.seed("tess", "Tess lives in Oslo");
    let before = s.snapshot();
    let r = s.call(
        "PUT",
        "/v1/memories/batch",
        Some(&k),
        Some(json!({"items": [
            {"memory_id": a, "text": "Tess drinks coffee"},
            {"memory_id": b, "text": "   "}
        ]})),
    );
    assert_eq!(r.status, 400, "{:?}", r.body);
    assert_eq!(s.snapshot(), before, "the first item was not applied");
    // A repeated id is refused rather than silently letting the last one win.
    let r = s.call(
        "PUT",
        "/v1/memories/batch",
        Some(&k),
        Some(json!({"items": [
            {"memory_id": a, "text": "one"}, {"memory_id": a, "text": "two"}
        ]})),
    );
    assert_eq!(r.status, 400, "{:?}", r.body);
    let r = s.call(
        "PUT",
        "/v1/memories/batch",
        Some(&k),
        Some(json!({"items": [
            {"memory_id": a, "text": "Tess drinks coffee"},
            {"memory_id": b, "text": "Tess lives in Bergen"}
        ]})),
    );
    assert_eq!(r.status, 200, "{:?}", r.body);
    let r = s.call(
        "DELETE",
        "/v1/memories/batch",
        Some(&k),
        Some(json!({"memory_ids": [a, b, a]})),
    );
    assert_eq!(r.status, 200, "{:?}", r.body);
    let r = s.call("GET", "/v1/memories?user_id=tess", Some(&k), None);
    assert!(r.body["results"].as_array().unwrap().is_empty(), "{:?}", r.body);
}
