//! `mnemo search --graph` and `mnemo graph` over a real store: the flag turns graph search on
//! for one query (the answer lists the relations used and marks the hits it reached), and the
//! same query without it is the plain search; the graph read answers in the user's scope only.

use crate::*;

fn add(d: &std::path::Path, user: &str, text: &str) {
    run_ok(mnemo(d).args(["add", "--user-id", user, "--infer", "false", text]));
}

#[test]
fn search_graph_flag_turns_graph_search_on_for_one_query() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    add(d, "cara", "Ana lives in Porto.");
    add(d, "cara", "We had dinner by the river yesterday.");
    add(d, "bob", "Ana lives in Oslo.");

    let plain = run_ok(mnemo(d).args(["search", "--user-id", "cara", "Where does Ana live?"]));
    assert!(plain.get("relations").is_none(), "{plain}");
    assert!(
        (plain["results"].as_array().unwrap().iter()).all(|h| h.get("via").is_none()),
        "{plain}"
    );

    let graph = run_ok(mnemo(d).args([
        "search",
        "--user-id",
        "cara",
        "--graph",
        "Where does Ana live?",
    ]));
    let relations = graph["relations"]
        .as_array()
        .expect("relations with --graph");
    assert!(
        relations
            .iter()
            .any(|r| r["predicate"] == "lives_in" && r["object"]["name"] == "Porto"),
        "{graph}"
    );
    assert!(
        !graph.to_string().contains("Oslo"),
        "graph search crossed scopes: {graph}"
    );
    let hits = graph["results"].as_array().unwrap();
    let porto = hits
        .iter()
        .find(|h| h["memory"] == "Ana lives in Porto.")
        .expect("the stating memory is a hit");
    assert_eq!(porto["via"]["predicate"], "lives_in", "{porto}");

    // The graph read of the same entity, in each user's own scope.
    let n = run_ok(mnemo(d).args(["graph", "--user-id", "bob", "--entity", "Ana"]));
    let objects: Vec<&str> = (n["relations"].as_array().unwrap().iter())
        .map(|r| r["object"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(objects, ["Oslo"], "{n}");
}
