//! Inferred adds over the real SQLite store with scripted chat models: reconciliation,
//! supersession and lineage, invented ids, damaged JSON, provider failures, duplicates,
//! procedural summaries, entities, and all-or-nothing writes under injected failures.

use mnemo::core::pipeline::{shown_number, step_of};
use mnemo::core::*;
use mnemo::{AddInput, AddRequest, InferConfig, Memory, MemoryRecord};
use mnemo_testkit::engines;
use mnemo_testkit::{HashEmbedder, ScriptedChat};
use serde_json::{json, Value};
use std::sync::{Arc, Mutex};

type Reply = Box<dyn Fn(&ChatRequest) -> Result<String> + Send + Sync>;

/// A chat model answering each step with the next scripted reply for that step.
struct Steps {
    extract: Mutex<Vec<Reply>>,
    reconcile: Mutex<Vec<Reply>>,
    procedural: Mutex<Vec<Reply>>,
}

fn steps() -> Arc<Steps> {
    Arc::new(Steps {
        extract: Mutex::new(Vec::new()),
        reconcile: Mutex::new(Vec::new()),
        procedural: Mutex::new(Vec::new()),
    })
}

impl Steps {
    fn on(
        &self,
        step: &str,
        reply: impl Fn(&ChatRequest) -> Result<String> + Send + Sync + 'static,
    ) {
        let q = match step {
            "extract" => &self.extract,
            "reconcile" => &self.reconcile,
            _ => &self.procedural,
        };
        q.lock().unwrap().push(Box::new(reply));
    }

    fn text(&self, step: &str, body: &str) {
        let body = body.to_string();
        self.on(step, move |_| Ok(body.clone()));
    }

    fn facts(&self, facts: &[&str]) {
        let items: Vec<Value> = facts
            .iter()
            .map(|f| json!({"text": f, "sources": [1]}))
            .collect();
        self.text("extract", &json!({ "facts": items }).to_string());
    }
}

fn model(s: &Arc<Steps>) -> Arc<ScriptedChat> {
    let s = s.clone();
    Arc::new(ScriptedChat::new("scripted:test", move |req| {
        let step = step_of(req).expect("a pipeline prompt");
        let q = match step {
            "extract" => &s.extract,
            "reconcile" => &s.reconcile,
            _ => &s.procedural,
        };
        let mut q = q.lock().unwrap();
        assert!(!q.is_empty(), "unexpected {step} call");
        let reply = q.remove(0);
        reply(req)
    }))
}

struct Env {
    m: Memory,
    store: Arc<dyn Store>,
    chat: Arc<ScriptedChat>,
    steps: Arc<Steps>,
    test_store: engines::TestStore,
}

fn env_with(cfg: InferConfig) -> Env {
    let dir = engines::fresh_store();
    let store = dir.store();
    let steps = steps();
    let chat = model(&steps);
    let m = Memory::from_parts(store.clone(), Arc::new(HashEmbedder), RankParams::default())
        .unwrap()
        .with_chat(chat.clone(), cfg);
    Env {
        m,
        store,
        chat,
        steps,
        test_store: dir,
    }
}

fn env() -> Env {
    env_with(InferConfig::default())
}

fn alice() -> Scope {
    Scope::user("alice").unwrap()
}

fn said(text: &str) -> AddRequest {
    let mut r = AddRequest::text(alice(), text);
    r.infer = None;
    r
}

fn all(store: &Arc<dyn Store>, scope: &Scope) -> Vec<MemoryRecord> {
    engines::off_runtime(|| {
        store.list(&ListQuery::new(scope.clone(), 1000).with_read(ReadOptions {
            include_inactive: true,
            ..ReadOptions::default()
        }))
    })
    .unwrap()
    .results
}

fn active(store: &Arc<dyn Store>, scope: &Scope) -> Vec<String> {
    all(store, scope)
        .into_iter()
        .filter(|m| m.state == MemoryState::Active)
        .map(|m| m.text)
        .collect()
}

#[tokio::test]
async fn an_update_supersedes_the_old_fact_and_history_shows_the_lineage() {
    let e = env();
    e.steps.facts(&["Alice lives in Berlin"]);
    let first = e.m.add(said("I live in Berlin.")).await.unwrap();
    assert_eq!(first.results[0].event, HistoryKind::Add);
    let old_id = first.results[0].id;

    e.steps.facts(&["Alice lives in Lisbon"]);
    e.steps.on("reconcile", |req| {
        let n = shown_number(req, "Berlin").expect("the old fact is shown");
        Ok(json!({"decisions": [{"fact": 1, "event": "UPDATE", "id": n, "text": "Alice lives in Lisbon", "reason": "she moved"}]}).to_string())
    });
    let second = e.m.add(said("I moved to Lisbon last week!")).await.unwrap();
    let r = &second.results[0];
    assert_eq!(r.event, HistoryKind::Update);
    assert_eq!(r.previous_id, Some(old_id));
    assert_eq!(r.previous_memory.as_deref(), Some("Alice lives in Berlin"));
    assert_eq!(active(&e.store, &alice()), vec!["Alice lives in Lisbon"]);

    let old = all(&e.store, &alice())
        .into_iter()
        .find(|m| m.id == old_id)
        .unwrap();
    assert_eq!(old.state, MemoryState::Superseded);
    assert_eq!(
        old.text, "Alice lives in Berlin",
        "the old fact keeps its text"
    );
    assert!(old.valid_until.is_some());
    let get =
        e.m.get(mnemo::GetRequest {
            scope: alice(),
            id: old_id,
            include_expired: false,
        })
        .await;
    assert_eq!(
        get.unwrap_err().kind(),
        ErrorKind::NotFound,
        "superseded facts are hidden by default"
    );

    // Provenance: the new fact points at the message it came from, which is in the log.
    let new =
        e.m.get(mnemo::GetRequest {
            scope: alice(),
            id: r.id,
            include_expired: false,
        })
        .await
        .unwrap();
    let log = engines::off_runtime(|| e.store.messages(&alice(), None, 10)).unwrap();
    assert_eq!(new.sources.len(), 1);
    let src = log
        .iter()
        .find(|m| m.id == new.sources[0])
        .expect("source message is logged");
    assert_eq!(src.content, "I moved to Lisbon last week!");
    assert_eq!(log.len(), 2, "both adds' messages are kept");

    let lineage = e.m.history(alice(), r.id).await.unwrap();
    let shape: Vec<(MemoryId, HistoryKind)> =
        lineage.iter().map(|h| (h.memory_id, h.event)).collect();
    assert_eq!(
        shape,
        vec![
            (old_id, HistoryKind::Add),
            (old_id, HistoryKind::Supersede),
            (r.id, HistoryKind::Add)
        ]
    );
    assert_eq!(lineage[1].reason.as_deref(), Some("she moved"));
    assert_eq!(
        lineage[1].new_memory.as_deref(),
        Some("Alice lives in Lisbon")
    );
    let (links, _) = e.m.graph(alice(), r.id).await.unwrap();
    assert!(links
        .iter()
        .any(|l| l.kind == LinkKind::Supersedes && l.from == r.id && l.to == old_id));

    // Every model call of the add is reported with tokens and time.
    let purposes: Vec<&str> = second.usage.iter().map(|c| c.purpose.as_str()).collect();
    assert!(
        purposes.contains(&"extract")
            && purposes.contains(&"reconcile")
            && purposes.contains(&"embed")
    );
    assert!(second
        .usage
        .iter()
        .filter(|c| c.purpose != "embed")
        .all(|c| c.prompt_tokens > 0));
}

#[tokio::test]
async fn a_delete_retires_the_fact_softly_with_the_reason() {
    let e = env();
    e.steps.facts(&["Alice likes sushi"]);
    let id = e.m.add(said("I love sushi")).await.unwrap().results[0].id;
    e.steps.facts(&["Forget: Alice likes sushi"]);
    e.steps.on("reconcile", |req| {
        let n = shown_number(req, "sushi").unwrap();
        Ok(json!({"decisions": [{"fact": 1, "event": "DELETE", "id": n, "reason": "asked to forget"}]}).to_string())
    });
    let out =
        e.m.add(said("Please forget that I like sushi"))
            .await
            .unwrap();
    assert_eq!(out.results.len(), 1);
    assert_eq!(
        (out.results[0].id, out.results[0].event),
        (id, HistoryKind::Delete)
    );
    assert!(
        active(&e.store, &alice()).is_empty(),
        "the forget request is not stored as a fact"
    );
    let old = all(&e.store, &alice())
        .into_iter()
        .find(|m| m.id == id)
        .unwrap();
    assert_eq!(
        (old.state, old.text.as_str()),
        (MemoryState::Deleted, "Alice likes sushi")
    );
    let h = e.m.history(alice(), id).await.unwrap();
    assert_eq!(h.last().unwrap().event, HistoryKind::Delete);
    assert_eq!(h.last().unwrap().reason.as_deref(), Some("asked to forget"));
}

#[tokio::test]
async fn ids_the_model_invents_are_ignored_and_reported_never_a_crash() {
    let e = env();
    e.steps.facts(&["Alice works at Acme"]);
    e.m.add(said("I work at Acme")).await.unwrap();
    e.steps
        .facts(&["Alice works at Initech", "Alice has a cat"]);
    e.steps.text(
        "reconcile",
        r#"{"decisions": [{"fact": 1, "event": "UPDATE", "id": 42, "text": "Alice works at Initech"},
                          {"fact": 2, "event": "DELETE", "id": "7"}, {"fact": 9, "event": "ADD"}]}"#,
    );
    let out =
        e.m.add(said("I joined Initech, and I have a cat"))
            .await
            .unwrap();
    let events: Vec<HistoryKind> = out.results.iter().map(|r| r.event).collect();
    assert_eq!(
        events,
        vec![HistoryKind::Add],
        "UPDATE of an unknown id adds; DELETE of one does nothing"
    );
    let mut now = active(&e.store, &alice());
    now.sort();
    assert_eq!(now, vec!["Alice works at Acme", "Alice works at Initech"]);
    for needle in ["number 42", "number 7", "unknown fact 9"] {
        assert!(
            out.warnings.iter().any(|w| w.contains(needle)),
            "warning about {needle}: {:?}",
            out.warnings
        );
    }
}

#[tokio::test]
async fn damaged_json_is_repaired_in_every_common_form() {
    let variants = [
        "```json\n{\"facts\": [{\"text\": \"Alice plays chess\"}]}\n```",
        "Sure! Here are the facts: {\"facts\": [{\"text\": \"Alice plays chess\"}]} Let me know.",
        "{\"facts\": [{\"text\": \"Alice plays chess\",},],}",
        "{'facts': [{'text': 'Alice plays chess'}]}",
    ];
    for raw in variants {
        let e = env();
        e.steps.text("extract", raw);
        let out =
            e.m.add(said("I play chess"))
                .await
                .unwrap_or_else(|err| panic!("{raw}: {err}"));
        assert_eq!(out.results.len(), 1, "{raw}");
        assert_eq!(
            active(&e.store, &alice()),
            vec!["Alice plays chess"],
            "{raw}"
        );
    }
}

#[tokio::test]
async fn failures_are_typed_retryable_and_write_no_memory_but_keep_the_messages() {
    let e = env();
    // Output beyond repair.
    e.steps
        .text("extract", "I'm sorry, I can't help with that.");
    let err = e.m.add(said("I live in Oslo")).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::ModelOutput);
    assert!(err.kind().is_retryable());
    // Truncated output.
    e.steps
        .text("extract", "{\"facts\": [{\"text\": \"Alice li");
    assert_eq!(
        e.m.add(said("I live in Oslo")).await.unwrap_err().kind(),
        ErrorKind::ModelOutput
    );
    // The provider is down.
    e.steps.on("extract", |_| {
        Err(Error::Unavailable {
            component: "chat model".into(),
            reason: "connection refused".into(),
        })
    });
    let err = e.m.add(said("I live in Oslo")).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Unavailable);
    assert!(
        all(&e.store, &alice()).is_empty(),
        "no memory from a failed add"
    );
    assert_eq!(
        engines::off_runtime(|| e.store.messages(&alice(), None, 10))
            .unwrap()
            .len(),
        3,
        "what the user said is kept"
    );

    // A valid empty extraction is a success with zero memories: never confused with the above.
    e.steps.text("extract", r#"{"facts": []}"#);
    let ok = e.m.add(said("hi there")).await.unwrap();
    assert!(ok.results.is_empty());
    assert_eq!(
        ok.usage.iter().filter(|c| c.purpose == "extract").count(),
        1
    );
}

#[tokio::test]
async fn a_retried_failed_add_logs_its_messages_once() {
    let e = env();
    e.steps.text("extract", "not json");
    let mut req = said("I live in Oslo");
    req.idempotency_key = Some("k-1".into());
    assert!(e.m.add(req.clone()).await.is_err());
    e.steps.facts(&["Alice lives in Oslo"]);
    let ok = e.m.add(req.clone()).await.unwrap();
    assert_eq!(ok.results.len(), 1);
    assert_eq!(
        engines::off_runtime(|| e.store.messages(&alice(), None, 10))
            .unwrap()
            .len(),
        1
    );
    let again = e.m.add(req).await.unwrap();
    assert!(
        again.replayed,
        "the retry after success replays without model calls"
    );
}

#[tokio::test]
async fn a_failure_after_extraction_leaves_existing_memories_untouched() {
    let e = env();
    e.steps.facts(&["Alice lives in Berlin"]);
    e.m.add(said("I live in Berlin")).await.unwrap();
    e.steps.facts(&["Alice lives in Lisbon"]);
    e.steps.on("reconcile", |_| {
        Err(Error::Unavailable {
            component: "chat model".into(),
            reason: "timed out".into(),
        })
    });
    assert_eq!(
        e.m.add(said("I moved to Lisbon")).await.unwrap_err().kind(),
        ErrorKind::Unavailable
    );
    assert_eq!(active(&e.store, &alice()), vec!["Alice lives in Berlin"]);
    assert_eq!(all(&e.store, &alice()).len(), 1);
}

#[tokio::test]
async fn duplicates_anywhere_in_the_scope_are_dropped_before_reconciliation() {
    let e = env();
    let mut many: Vec<String> = (0..40)
        .map(|i| format!("Alice visited museum number {i}"))
        .collect();
    many.push("Alice owns a red bicycle".into());
    let refs: Vec<&str> = many.iter().map(String::as_str).collect();
    e.steps.facts(&refs);
    assert_eq!(
        e.m.add(said("my travel log")).await.unwrap().results.len(),
        41
    );
    // The same fact again (exact) and a near-repeat (same words): no reconcile call is needed.
    e.steps
        .facts(&["Alice owns a red bicycle", "alice owns a red bicycle."]);
    let calls_before = e.chat.requests().len();
    let out = e.m.add(said("I own a red bicycle")).await.unwrap();
    assert!(out.results.is_empty(), "{:?}", out.results);
    assert_eq!(
        e.chat.requests().len(),
        calls_before + 1,
        "only the extraction ran"
    );
    assert_eq!(out.warnings.len(), 2, "{:?}", out.warnings);
}

#[tokio::test]
async fn a_close_fact_with_another_date_goes_to_the_model_not_the_duplicate_filter() {
    // A low threshold makes the two dates "near" for the bag-of-words embedder, as they are
    // for MiniLM at the default threshold.
    let e = env_with(InferConfig {
        near_duplicate: 0.5,
        ..InferConfig::default()
    });
    e.steps.facts(&["The wedding is on 2024-06-14"]);
    e.m.add(said("The wedding is on June 14")).await.unwrap();
    e.steps.facts(&["The wedding is on 2024-06-21"]);
    e.steps.on("reconcile", |req| {
        let n = shown_number(req, "06-14").unwrap();
        Ok(json!({"decisions": [{"fact": 1, "event": "UPDATE", "id": n, "reason": "date corrected"}]}).to_string())
    });
    let out = e.m.add(said("Correction: June 21")).await.unwrap();
    assert_eq!(
        out.results[0].event,
        HistoryKind::Update,
        "{:?}",
        out.warnings
    );
    assert_eq!(
        active(&e.store, &alice()),
        vec!["The wedding is on 2024-06-21"]
    );
    // The same fact reworded without new particulars is still a duplicate.
    e.steps.facts(&["the wedding is on 2024-06-21!"]);
    let calls = e.chat.requests().len();
    assert!(e
        .m
        .add(said("it's the 21st"))
        .await
        .unwrap()
        .results
        .is_empty());
    assert_eq!(
        e.chat.requests().len(),
        calls + 1,
        "no reconciliation for a duplicate"
    );
}

#[tokio::test]
async fn additive_only_mode_never_retires_a_memory() {
    let e = env_with(InferConfig {
        additive_only: true,
        ..InferConfig::default()
    });
    e.steps.facts(&["Alice lives in Berlin"]);
    e.m.add(said("I live in Berlin")).await.unwrap();
    e.steps
        .facts(&["Alice lives in Lisbon", "Forget: Alice lives in Berlin"]);
    e.steps.on("reconcile", |req| {
        let n = shown_number(req, "Berlin").unwrap();
        Ok(json!({"decisions": [{"fact": 1, "event": "UPDATE", "id": n}, {"fact": 2, "event": "DELETE", "id": n}]}).to_string())
    });
    let out =
        e.m.add(said("I moved to Lisbon; forget Berlin"))
            .await
            .unwrap();
    assert_eq!(
        out.results.iter().map(|r| r.event).collect::<Vec<_>>(),
        vec![HistoryKind::Add]
    );
    let mut now = active(&e.store, &alice());
    now.sort();
    assert_eq!(now, vec!["Alice lives in Berlin", "Alice lives in Lisbon"]);
}

#[tokio::test]
async fn procedural_memory_keeps_every_output_verbatim() {
    let e = env();
    let scope = Scope::from_parts(Some("alice"), Some("travel-agent"), None).unwrap();
    let turns = [
        (Role::User, "Find me a flight to Oslo"),
        (
            Role::Assistant,
            "search_flights(OSL) -> 3 results: SK123 08:10 €120; DY45 12:00 €99; SK9 18:30 €150",
        ),
        (
            Role::Tool,
            "{\"booking\": \"DY45\", \"status\": \"held\", \"ref\": \"Q7XK\"}",
        ),
        (
            Role::Assistant,
            "Held DY45 (ref Q7XK); waiting for payment.",
        ),
    ];
    e.steps.text(
        "procedural",
        r#"{"task": "book a flight to Oslo", "progress": "a seat is held", "steps": [{"action": "searched flights", "source": 2}]}"#,
    );
    let mut req = AddRequest::text(scope.clone(), "");
    req.input = AddInput::Messages(
        turns
            .iter()
            .map(|(role, c)| InputMessage {
                role: *role,
                content: c.to_string(),
                name: None,
            })
            .collect(),
    );
    req.memory_type = Some(MemoryKind::Procedural);
    req.infer = None;
    let out = e.m.add(req.clone()).await.unwrap();
    assert_eq!(out.results.len(), 1);
    let mem =
        e.m.get(mnemo::GetRequest {
            scope: scope.clone(),
            id: out.results[0].id,
            include_expired: false,
        })
        .await
        .unwrap();
    assert_eq!(mem.kind, MemoryKind::Procedural);
    for (role, content) in &turns[1..] {
        assert!(
            mem.text.contains(content),
            "{role} output kept verbatim in {}",
            mem.text
        );
    }
    assert!(mem.text.contains("book a flight to Oslo"));
    assert_eq!(mem.sources.len(), 4);

    req.scope = alice();
    assert_eq!(
        e.m.add(req).await.unwrap_err().kind(),
        ErrorKind::InvalidInput,
        "needs an agent"
    );
}

#[tokio::test]
async fn without_a_chat_model_infer_is_a_clear_error_and_raw_still_works() {
    let dir = engines::fresh_store();
    let store = dir.store();
    let m = Memory::from_parts(store, Arc::new(HashEmbedder), RankParams::default()).unwrap();
    let mut req = said("I live in Oslo");
    req.infer = Some(true);
    let err = m.add(req.clone()).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidInput);
    assert!(err.to_string().contains("chat model"), "{err}");
    req.infer = None;
    let out = m.add(req).await.unwrap();
    assert_eq!(out.results.len(), 1, "no model: the default is a raw add");
    assert_eq!(out.usage.len(), 1, "the raw add reports its embedding call");
    assert_eq!(
        (out.usage[0].purpose.as_str(), out.usage[0].model.as_str()),
        ("embed", HashEmbedder::MODEL_ID)
    );
}

#[tokio::test]
async fn entities_link_merge_nearly_equal_names_and_add_search_candidates() {
    let e = env();
    let mut r = AddRequest::text(
        alice(),
        "Yesterday Melanie painted a sunrise over the lake.",
    );
    r.infer = Some(false);
    let painted = e.m.add(r).await.unwrap().results[0].id;
    let mut r = AddRequest::text(alice(), "Melanie's brother builds boats.");
    r.infer = Some(false);
    let boats = e.m.add(r).await.unwrap().results[0].id;
    for i in 0..20 {
        let mut r = AddRequest::text(
            alice(),
            format!("Unrelated note number {i} about groceries"),
        );
        r.infer = Some(false);
        e.m.add(r).await.unwrap();
    }
    let (_, a) = e.m.graph(alice(), painted).await.unwrap();
    let (_, b) = e.m.graph(alice(), boats).await.unwrap();
    let mel = |es: &[Entity]| es.iter().find(|x| x.normalized == "melanie").map(|x| x.id);
    assert!(
        mel(&a).is_some() && mel(&a) == mel(&b),
        "one entity for both mentions: {a:?} {b:?}"
    );

    // "Melenie" (a typo) shares no word or stem with either memory; the entity link finds them.
    let res =
        e.m.search(SearchRequest::new(alice(), "Melenie?", 3))
            .await
            .unwrap();
    let ids: Vec<MemoryId> = res.results.iter().map(|h| h.memory.id).collect();
    assert!(
        ids.contains(&painted) && ids.contains(&boats),
        "{:?}",
        res.results
    );
    let hit = res.results.iter().find(|h| h.memory.id == painted).unwrap();
    assert_eq!(hit.scores.bm25, 0.0);
    assert!(hit.scores.entity > 0.0);
    assert_eq!(res.usage[0].purpose, "embed");
}

#[tokio::test]
async fn a_failure_at_any_write_step_leaves_nothing_behind() {
    for &step in WriteStep::INFERRED_ADD {
        let e = env_with(InferConfig {
            log_messages_on_failure: false,
            ..InferConfig::default()
        });
        e.steps.facts(&["Alice lives in Berlin"]);
        e.m.add(said("I live in Berlin")).await.unwrap();
        let before = e.m.export().await.unwrap().len();
        let integrity_before = engines::off_runtime(|| e.store.integrity()).unwrap();
        let rows_before = e.test_store.row_counts();

        // An add that touches every step: message, change, memory, history, entity, link, key.
        e.steps.text("extract", r#"{"facts": [{"text": "Alice lives in Lisbon", "entities": [{"name": "Lisbon", "type": "place"}]}]}"#);
        e.steps.on("reconcile", |req| {
            let n = shown_number(req, "Berlin").unwrap();
            Ok(json!({"decisions": [{"fact": 1, "event": "UPDATE", "id": n}]}).to_string())
        });
        let mut req = said("I moved to Lisbon");
        req.idempotency_key = Some("move".into());
        e.test_store.fail_at(Some(step));
        let err = e.m.add(req.clone()).await.unwrap_err();
        assert!(err.to_string().contains(step.as_str()), "{step}: {err}");
        e.test_store.fail_at(None);

        assert_eq!(
            e.m.export().await.unwrap().len(),
            before,
            "{step}: nothing written"
        );
        assert_eq!(e.test_store.row_counts(), rows_before, "{step}");
        assert_eq!(
            active(&e.store, &alice()),
            vec!["Alice lives in Berlin"],
            "{step}"
        );
        assert_eq!(
            engines::off_runtime(|| e.store.integrity()).unwrap(),
            integrity_before,
            "{step}"
        );
        assert!(engines::off_runtime(|| e.store.integrity())
            .unwrap()
            .is_consistent());

        // The same request then succeeds in full: the key was not spent by the failure.
        e.steps.text("extract", r#"{"facts": [{"text": "Alice lives in Lisbon", "entities": [{"name": "Lisbon", "type": "place"}]}]}"#);
        e.steps.on("reconcile", |req| {
            let n = shown_number(req, "Berlin").unwrap();
            Ok(json!({"decisions": [{"fact": 1, "event": "UPDATE", "id": n}]}).to_string())
        });
        let ok = e.m.add(req).await.unwrap();
        assert_eq!(ok.results[0].event, HistoryKind::Update, "{step}");
        assert_eq!(
            active(&e.store, &alice()),
            vec!["Alice lives in Lisbon"],
            "{step}"
        );
    }
}

#[tokio::test]
async fn a_provider_that_never_answers_times_out_into_a_retryable_error() {
    // A server that accepts connections and never replies.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let held = Arc::new(Mutex::new(Vec::new()));
    let keep = held.clone();
    std::thread::spawn(move || {
        for s in listener.incoming().flatten() {
            keep.lock().unwrap().push(s);
        }
    });
    let mut cfg = mnemo_models::OpenAiConfig::new(format!("http://{addr}/v1"), "silent");
    cfg.timeout = std::time::Duration::from_millis(300);
    cfg.max_retries = 1;
    cfg.backoff = std::time::Duration::from_millis(10);
    let dir = engines::fresh_store();
    let store = dir.store();
    let m = Memory::from_parts(store.clone(), Arc::new(HashEmbedder), RankParams::default())
        .unwrap()
        .with_chat(
            Arc::new(mnemo_models::OpenAiChat::new(cfg).unwrap()),
            InferConfig::default(),
        );
    let err = m.add(said("I live in Oslo")).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Unavailable, "{err}");
    assert!(err.kind().is_retryable());
    assert!(all(&store, &alice()).is_empty());
    assert_eq!(
        engines::off_runtime(|| store.messages(&alice(), None, 5))
            .unwrap()
            .len(),
        1
    );
    assert_eq!(held.lock().unwrap().len(), 2, "first attempt and one retry");
}

/// A batch of inferred adds is one transaction. Before, each item committed on its own, so a
/// second item whose model output was unusable left the first item's facts written.
#[tokio::test]
async fn a_batch_of_inferred_adds_commits_all_or_nothing() {
    let e = env();
    e.steps.facts(&["Alice lives in Oslo"]);
    e.steps
        .text("extract", "I'm sorry, I can't help with that.");
    let err =
        e.m.add_many(vec![said("I live in Oslo"), said("I like tea")])
            .await
            .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::ModelOutput);
    assert!(
        all(&e.store, &alice()).is_empty(),
        "the first item was not written"
    );
    e.steps.facts(&["Alice lives in Oslo"]);
    e.steps.facts(&["Alice likes tea"]);
    let out =
        e.m.add_many(vec![said("I live in Oslo"), said("I like tea")])
            .await
            .unwrap();
    assert_eq!(out.len(), 2);
    let mut now = active(&e.store, &alice());
    now.sort();
    assert_eq!(now, ["Alice likes tea", "Alice lives in Oslo"]);
}
