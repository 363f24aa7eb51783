//! Notes over the real SQLite store: rule-made fields and links, caller fields kept, the
//! enriched index, link-expanded search, usage counters, bad input, and — with a scripted chat
//! model — enrichment, evolution with history, invented ids, failed calls and all-or-nothing
//! writes under injected failures.

use mnemo::core::pipeline::step_of;
use mnemo::core::*;
use mnemo::{AddRequest, GetRequest, InferConfig, Memory, NoteConfig, NoteInput};
use mnemo_testkit::engines;
use mnemo_testkit::{HashEmbedder, ScriptedChat};
use serde_json::json;
use std::sync::{Arc, Mutex};

type Reply = Box<dyn Fn(&ChatRequest) -> Result<String> + Send + Sync>;

struct Env {
    m: Memory,
    store: Arc<dyn Store>,
    replies: Arc<Mutex<Vec<(&'static str, Reply)>>>,
    test_store: engines::TestStore,
}

/// An engine; with `chat`, a scripted model answering each call with the next queued reply for
/// its step (a call nobody queued a reply for fails the test).
fn env(chat: bool) -> Env {
    let dir = engines::fresh_store();
    let store = dir.store();
    let m = Memory::from_parts(store.clone(), Arc::new(HashEmbedder), RankParams::default())
        .unwrap()
        .with_note_config(NoteConfig {
            link_similarity: 0.6,
            link_entity: 0.5,
            ..NoteConfig::default()
        });
    let replies: Arc<Mutex<Vec<(&'static str, Reply)>>> = Arc::default();
    let m = if chat {
        let r = replies.clone();
        let model = ScriptedChat::new("scripted:notes", move |req| {
            let step = step_of(req).expect("a pipeline prompt");
            let mut q = r.lock().unwrap();
            let at = q
                .iter()
                .position(|(s, _)| *s == step)
                .unwrap_or_else(|| panic!("unexpected {step} call"));
            let (_, reply) = q.remove(at);
            reply(req)
        });
        m.with_chat(
            Arc::new(model),
            InferConfig {
                log_messages_on_failure: false,
                ..InferConfig::default()
            },
        )
    } else {
        m
    };
    Env {
        m,
        store,
        replies,
        test_store: dir,
    }
}

impl Env {
    fn on(
        &self,
        step: &'static str,
        reply: impl Fn(&ChatRequest) -> Result<String> + Send + Sync + 'static,
    ) {
        self.replies.lock().unwrap().push((step, Box::new(reply)));
    }
    fn text(&self, step: &'static str, body: serde_json::Value) {
        let body = body.to_string();
        self.on(step, move |_| Ok(body.clone()));
    }
}

fn lena() -> Scope {
    Scope::user("lena").unwrap()
}

fn note(text: &str) -> AddRequest {
    AddRequest::note(lena(), text, NoteInput::default())
}

fn given(keywords: &[&str], tags: &[&str], context: &str) -> NoteInput {
    NoteInput {
        keywords: Some(keywords.iter().map(|s| s.to_string()).collect()),
        tags: Some(tags.iter().map(|s| s.to_string()).collect()),
        context: Some(context.to_string()),
    }
}

async fn add(m: &Memory, req: AddRequest) -> MemoryId {
    let out = m.add(req).await.unwrap();
    assert_eq!(out.results.len(), 1, "{out:?}");
    out.results[0].id
}

fn get(store: &Arc<dyn Store>, id: MemoryId) -> mnemo::MemoryRecord {
    engines::off_runtime(|| store.get(&lena(), id, &ReadOptions::default())).unwrap()
}

async fn search(m: &Memory, q: &str, top_k: usize, expand: usize) -> Vec<Hit> {
    let mut req = SearchRequest::new(lena(), q, top_k);
    req.expand_links = expand;
    m.search(req).await.unwrap().results
}

#[tokio::test]
async fn rules_write_keywords_and_context_but_no_tags_and_keep_the_text() {
    let e = env(false);
    let mut req = note("Maria adopted a greyhound from the shelter in Porto");
    req.input = mnemo::AddInput::Messages(vec![InputMessage {
        role: Role::User,
        content: "Maria adopted a greyhound from the shelter in Porto".into(),
        name: Some("Maria".into()),
    }]);
    req.session_id = Some("7".into());
    req.timestamp = Some("2024-03-02T10:00:00Z".parse().unwrap());
    let id = add(&e.m, req).await;
    let m = get(&e.store, id);
    assert_eq!(m.kind, MemoryKind::Note);
    assert_eq!(
        m.text,
        "Maria adopted a greyhound from the shelter in Porto"
    );
    let n = m.note.expect("note fields");
    assert_eq!(n.context, "said by Maria; session 7; 2024-03-02");
    assert!(n.tags.is_empty(), "rules invent no tags: {n:?}");
    assert_eq!(&n.keywords[..2], &["Maria", "Porto"]);
    assert!(n.keywords.iter().any(|k| k == "greyhound"), "{n:?}");
    // The context is indexed (the enriched text) but the returned text is the original.
    let hits = search(&e.m, "session 7", 5, 0).await;
    assert_eq!(hits[0].memory.id, id);
    assert_eq!(
        hits[0].memory.text,
        "Maria adopted a greyhound from the shelter in Porto"
    );
}

#[tokio::test]
async fn caller_fields_are_kept_as_given_and_found_by_search() {
    let e = env(false);
    let id = add(
        &e.m,
        AddRequest::note(
            lena(),
            "Look at Jupiter tonight",
            given(&["planet"], &["astronomy", "hobby"], "a reminder"),
        ),
    )
    .await;
    let n = get(&e.store, id).note.unwrap();
    assert_eq!(n.keywords, vec!["planet"]);
    assert_eq!(n.tags, vec!["astronomy", "hobby"]);
    assert_eq!(n.context, "a reminder");
    assert_eq!(search(&e.m, "astronomy", 5, 0).await[0].memory.id, id);
    // Empty lists given are kept empty, not filled by rules.
    let bare = add(
        &e.m,
        AddRequest::note(lena(), "Jupiter has moons", given(&[], &[], "")),
    )
    .await;
    assert_eq!(get(&e.store, bare).note.unwrap(), NoteFields::default());
}

#[tokio::test]
async fn bad_note_input_is_invalid_input_naming_the_field_and_writes_nothing() {
    let e = env(false);
    let cases: Vec<(NoteInput, &str)> = vec![
        (
            NoteInput {
                keywords: Some(vec!["ok".into(), " ".into()]),
                ..NoteInput::default()
            },
            "keywords",
        ),
        (
            NoteInput {
                tags: Some(vec!["a\nb".into()]),
                ..NoteInput::default()
            },
            "tags",
        ),
        (
            NoteInput {
                tags: Some((0..40).map(|i| format!("t{i}")).collect()),
                ..NoteInput::default()
            },
            "tags",
        ),
        (
            NoteInput {
                context: Some("x".repeat(3000)),
                ..NoteInput::default()
            },
            "context",
        ),
    ];
    for (bad, field) in cases {
        let err =
            e.m.add(AddRequest::note(lena(), "some note", bad))
                .await
                .unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidInput, "{field}: {err}");
        assert!(err.to_string().contains(field), "{field}: {err}");
    }
    // Fields without memory_type=note are refused rather than dropped.
    let mut req = AddRequest::text(lena(), "plain");
    req.note = given(&["x"], &[], "");
    assert_eq!(
        e.m.add(req).await.unwrap_err().kind(),
        ErrorKind::InvalidInput
    );
    assert!(e.m.export().await.unwrap().is_empty(), "nothing written");
}

#[tokio::test]
async fn rules_link_notes_that_share_a_rare_name_and_search_expands_along_them() {
    let e = env(false);
    let plan = add(&e.m, note("Ines is planning a trip to Gdansk in June")).await;
    for filler in [
        "the weather was grey",
        "bread and coffee for breakfast",
        "a long meeting at work",
        "the train was late again",
        "watched a film about whales",
    ] {
        add(&e.m, note(filler)).await;
    }
    let ticket = add(&e.m, note("bought the ferry tickets for Gdansk")).await;
    let links = e.m.links(lena(), ticket).await.unwrap();
    let l = links
        .iter()
        .find(|l| l.to == plan)
        .expect("linked by the shared rare name");
    assert_eq!(
        (l.from, l.kind, l.author),
        (ticket, LinkKind::Related, Author::Rule)
    );
    assert!(l.reason.as_deref().unwrap().contains("rare name"), "{l:?}");
    assert!(l.strength > 0.0 && l.strength <= 1.0);

    // "ferry tickets" finds the ticket note directly; expansion adds the plan through the link.
    let direct = search(&e.m, "ferry tickets", 1, 0).await;
    assert_eq!(direct.len(), 1);
    assert_eq!(direct[0].memory.id, ticket);
    let expanded = search(&e.m, "ferry tickets", 1, 2).await;
    assert_eq!(expanded[0].memory.id, ticket, "direct hits come first");
    assert!(expanded[0].via.is_none());
    let linked = expanded
        .iter()
        .find(|h| h.memory.id == plan)
        .expect("the linked plan");
    let via = linked.via.as_ref().and_then(mnemo_core::Via::link).unwrap();
    assert_eq!((via.memory_id, via.kind), (ticket, LinkKind::Related));
    // Its own score for the query, lifted by the hit's score through the link.
    let own = search(&e.m, "ferry tickets", 10, 0)
        .await
        .into_iter()
        .find(|h| h.memory.id == plan)
        .expect("a candidate of the query")
        .score;
    let want = linked_score(
        own,
        expanded[0].score * via.strength,
        RankParams::default().link_weight,
    );
    assert!((linked.score - want).abs() < 1e-5);
    // Expansion adds to the top_k; it never pushes a direct hit out.
    let direct5 = search(&e.m, "the ticket", 5, 0).await;
    let expanded5 = search(&e.m, "the ticket", 5, 3).await;
    let ids = |hs: &[Hit]| hs.iter().map(|h| h.memory.id).collect::<Vec<_>>();
    assert_eq!(ids(&expanded5[..direct5.len()]), ids(&direct5));
    assert!(expanded5[direct5.len()..].iter().all(|h| h.via.is_some()));
}

#[tokio::test]
async fn linked_results_obey_expiry_and_supersession_in_search() {
    let e = env(false);
    let a = add(
        &e.m,
        AddRequest::note(lena(), "kayak rental by the fjord", given(&[], &[], "")),
    )
    .await;
    let b = add(
        &e.m,
        AddRequest::note(
            lena(),
            "the hut key hides under the stone",
            given(&[], &[], ""),
        ),
    )
    .await;
    let c = add(
        &e.m,
        AddRequest::note(lena(), "the boat leaves at nine", given(&[], &[], "")),
    )
    .await;
    let link = |to| Link {
        from: a,
        to,
        kind: LinkKind::Related,
        strength: 0.5,
        author: Author::Caller,
        created_at: chrono::Utc::now(),
        reason: None,
    };
    e.m.add_links(lena(), vec![link(b), link(c)]).await.unwrap();
    let expanded = |hits: Vec<Hit>| {
        let mut v: Vec<MemoryId> = hits
            .iter()
            .filter(|h| h.via.is_some())
            .map(|h| h.memory.id)
            .collect();
        v.sort();
        v
    };
    let mut both = vec![b, c];
    both.sort();
    let first = search(&e.m, "kayak fjord", 1, 5).await;
    assert_eq!(expanded(first), both);
    // Expired: b's expiry is moved into the past through the store's own update path.
    engines::off_runtime(|| {
        engines::off_runtime(|| {
            engines::off_runtime(|| {
                e.store.update(
                    &lena(),
                    b,
                    MemoryPatch {
                        expires_at: Some(Some(
                            chrono::Utc::now() + chrono::Duration::milliseconds(1),
                        )),
                        ..MemoryPatch::default()
                    },
                    &WritePlan::default(),
                )
            })
        })
    })
    .unwrap();
    let mut req = SearchRequest::new(lena(), "kayak fjord", 1);
    req.expand_links = 5;
    req.read.now = chrono::Utc::now() + chrono::Duration::seconds(10);
    let hits = e.m.search(req.clone()).await.unwrap().results;
    assert_eq!(
        expanded(hits),
        vec![c],
        "an expired note is not expanded to"
    );
    // Superseded: c is retired by a batch that replaces it.
    e.m.delete(lena(), c, DeleteMode::Soft, WritePlan::default())
        .await
        .unwrap();
    let hits = e.m.search(req).await.unwrap().results;
    assert!(
        expanded(hits).is_empty(),
        "a deleted note is not expanded to"
    );
}

#[tokio::test]
async fn reads_that_return_notes_count_usage_after_answering() {
    let e = env(false);
    let id = add(&e.m, note("the spare key is with Ola")).await;
    let raw =
        e.m.add(AddRequest::text(lena(), "the spare key is blue"))
            .await
            .unwrap()
            .results[0]
            .id;
    assert_eq!(get(&e.store, id).access_count, 0);
    let hits = search(&e.m, "spare key", 5, 0).await;
    assert_eq!(hits.len(), 2);
    e.m.get(GetRequest {
        scope: lena(),
        id,
        include_expired: false,
    })
    .await
    .unwrap();
    // The background flush may have taken some of them already; this returns after it.
    e.m.flush_usage().await.unwrap();
    let n = get(&e.store, id);
    assert_eq!(n.access_count, 2, "one search and one get");
    assert!(n.last_accessed_at.is_some());
    assert_eq!(
        get(&e.store, raw).access_count,
        1,
        "every kind is counted: the raw memory was returned by the search"
    );
}

fn link_to_all(req: &ChatRequest) -> Result<String> {
    let _ = req;
    Ok(json!({"links": [{"id": 1, "strength": 0.9, "reason": "same garden"}, {"id": 7, "strength": 0.5}],
              "updates": [{"id": 1, "tags": ["harvest"], "context": "the seeds grew into tomatoes", "reason": "the planting paid off"},
                          {"id": 42, "tags": ["x"]}]}).to_string())
}

#[tokio::test]
async fn the_model_links_and_evolves_neighbours_with_history_and_ignores_invented_ids() {
    let e = env(true);
    e.text("enrich", json!({"notes": [{"note": 1, "keywords": ["seeds", "balcony"], "tags": ["gardening"], "context": "Lena on her balcony"}]}));
    let seeds = add(&e.m, note("Lena planted tomato seeds on the balcony")).await;
    let n = get(&e.store, seeds).note.unwrap();
    assert_eq!(n.tags, vec!["gardening"]);
    assert_eq!(search(&e.m, "gardening", 1, 0).await[0].memory.id, seeds);

    e.text("enrich", json!({"notes": [{"note": 1, "keywords": ["tomatoes"], "tags": ["food"], "context": "Lena's harvest"}]}));
    e.on("evolve", link_to_all);
    let out =
        e.m.add(note("The balcony tomatoes are ripe"))
            .await
            .unwrap();
    let ripe = out.results[0].id;
    assert!(
        out.warnings.iter().any(|w| w.contains("unknown note 7")),
        "{:?}",
        out.warnings
    );
    assert!(
        out.warnings.iter().any(|w| w.contains("unknown note 42")),
        "{:?}",
        out.warnings
    );
    assert!(out.usage.iter().any(|c| c.purpose == "evolve"));

    let links = e.m.links(lena(), ripe).await.unwrap();
    assert_eq!(
        links.len(),
        1,
        "only the shown neighbour is linked: {links:?}"
    );
    assert_eq!((links[0].to, links[0].author), (seeds, Author::Model));
    assert_eq!(links[0].reason.as_deref(), Some("same garden"));

    let evolved = get(&e.store, seeds);
    assert_eq!(evolved.text, "Lena planted tomato seeds on the balcony");
    let n = evolved.note.unwrap();
    assert_eq!(n.tags, vec!["harvest"]);
    assert_eq!(n.context, "the seeds grew into tomatoes");
    assert_eq!(
        n.keywords,
        vec!["seeds", "balcony"],
        "keywords are not evolved"
    );
    let history = e.m.history(lena(), seeds).await.unwrap();
    let ev = history
        .iter()
        .find(|h| h.event == HistoryKind::Evolve)
        .expect("EVOLVE event");
    assert_eq!(ev.old_note.as_ref().unwrap().tags, vec!["gardening"]);
    assert_eq!(ev.new_note.as_ref().unwrap().tags, vec!["harvest"]);
    assert_eq!(ev.reason.as_deref(), Some("the planting paid off"));
    // The index follows: the new tag finds the neighbour, the old one no longer does.
    let by_new = search(&e.m, "harvest", 2, 0).await;
    assert!(by_new.iter().any(|h| h.memory.id == seeds));
    let mut req = SearchRequest::new(lena(), "gardening", 5);
    req.mode = SearchMode::Lexical;
    assert!(
        e.m.search(req).await.unwrap().results.is_empty(),
        "the old tag is gone"
    );
    assert!(engines::off_runtime(|| e.store.integrity())
        .unwrap()
        .is_consistent());
}

#[tokio::test]
async fn a_failed_evolution_call_writes_neither_the_note_nor_any_change() {
    let e = env(true);
    e.text("enrich", json!({"notes": [{"note": 1, "keywords": ["seeds"], "tags": ["gardening"], "context": "c"}]}));
    let seeds = add(&e.m, note("Lena planted seeds")).await;
    let before = e.m.export().await.unwrap().len();
    let history_before = e.m.history(lena(), seeds).await.unwrap();

    e.text(
        "enrich",
        json!({"notes": [{"note": 1, "keywords": ["seeds"], "tags": ["x"], "context": "c"}]}),
    );
    e.on("evolve", |_| {
        Err(Error::Unavailable {
            component: "chat".into(),
            reason: "provider down".into(),
        })
    });
    let err = e.m.add(note("the seeds sprouted")).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Unavailable);

    e.text(
        "enrich",
        json!({"notes": [{"note": 1, "keywords": ["seeds"], "tags": ["x"], "context": "c"}]}),
    );
    e.text("evolve", json!("this is not the object asked for"));
    let err = e.m.add(note("the seeds sprouted")).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::ModelOutput, "{err}");

    assert_eq!(e.m.export().await.unwrap().len(), before, "nothing written");
    assert_eq!(e.m.history(lena(), seeds).await.unwrap(), history_before);
    assert_eq!(get(&e.store, seeds).note.unwrap().tags, vec!["gardening"]);
}

#[tokio::test]
async fn a_failure_at_any_note_write_step_changes_nothing() {
    for &step in WriteStep::NOTE_ADD {
        let e = env(true);
        e.text("enrich", json!({"notes": [{"note": 1, "keywords": ["seeds"], "tags": ["gardening"], "context": "Lena on her balcony"}]}));
        let seeds = add(&e.m, note("Lena planted tomato seeds on the balcony")).await;
        let rows = e.test_store.row_counts();
        let integrity = engines::off_runtime(|| e.store.integrity()).unwrap();
        let record = get(&e.store, seeds);

        // Touches every step: message, memory, history, entity (Lena), link, evolve, key.
        let queue = || {
            (
                json!({"notes": [{"note": 1, "keywords": ["tomatoes"], "tags": ["food"], "context": "Lena's harvest"}]}),
                json!({"links": [{"id": 1, "strength": 0.9, "reason": "same garden"}],
                       "updates": [{"id": 1, "tags": ["harvest"], "reason": "grown"}]}),
            )
        };
        let (enrich, evolve) = queue();
        e.text("enrich", enrich);
        e.text("evolve", evolve);
        let mut req = note("Lena's balcony tomatoes are ripe");
        req.idempotency_key = Some("ripe".into());
        e.test_store.fail_at(Some(step));
        let err = e.m.add(req.clone()).await.unwrap_err();
        e.test_store.fail_at(None);
        assert!(err.to_string().contains(step.as_str()), "{step}: {err}");
        assert_eq!(e.test_store.row_counts(), rows, "{step}");
        assert_eq!(
            engines::off_runtime(|| e.store.integrity()).unwrap(),
            integrity,
            "{step}"
        );
        assert_eq!(
            get(&e.store, seeds),
            record,
            "{step}: the neighbour is untouched"
        );

        // The same request then succeeds in full.
        let (enrich, evolve) = queue();
        e.text("enrich", enrich);
        e.text("evolve", evolve);
        let ok = e.m.add(req).await.unwrap();
        assert_eq!(ok.results.len(), 1, "{step}");
        assert_eq!(
            get(&e.store, seeds).note.unwrap().tags,
            vec!["harvest"],
            "{step}"
        );
        assert!(
            engines::off_runtime(|| e.store.integrity())
                .unwrap()
                .is_consistent(),
            "{step}"
        );
    }
}

#[tokio::test]
async fn a_batch_mixing_notes_and_raw_adds_keeps_its_order_and_embeds_notes_once() {
    let e = env(false);
    let reqs = vec![
        note("first note about sailing"),
        AddRequest::text(lena(), "a raw line"),
        note("second note about sailing"),
    ];
    let out = e.m.add_many(reqs).await.unwrap();
    let texts: Vec<&str> = out.iter().map(|o| o.results[0].memory.as_str()).collect();
    assert_eq!(
        texts,
        vec![
            "first note about sailing",
            "a raw line",
            "second note about sailing"
        ]
    );
    let kinds: Vec<MemoryKind> = out
        .iter()
        .map(|o| get(&e.store, o.results[0].id).kind)
        .collect();
    assert_eq!(
        kinds,
        vec![MemoryKind::Note, MemoryKind::Raw, MemoryKind::Note]
    );
    // Both notes' enriched texts went to the embedder in one call.
    let embeds = |o: &AddOutcome| o.usage.iter().filter(|c| c.purpose == "embed").count();
    assert_eq!((embeds(&out[0]), embeds(&out[2])), (1, 1));
    assert_eq!(out[0].usage, out[2].usage, "one shared call");
}

#[tokio::test]
async fn conversation_notes_are_found_through_their_turns_by_words_and_by_meaning() {
    let e = env(false);
    let mut req = note("");
    req.input = mnemo::AddInput::Messages(vec![
        InputMessage {
            role: Role::User,
            content: "Did you ever try kayaking on the fjord?".into(),
            name: Some("Ana".into()),
        },
        InputMessage {
            role: Role::User,
            content: "Yes, last summer with my cousin!".into(),
            name: Some("Ben".into()),
        },
    ]);
    req.session_id = Some("s1".into());
    let out = e.m.add(req).await.unwrap();
    let answer = out.results[1].id;
    // "kayaking" is only in the question before it: the answer's lexical entry holds that turn.
    let mut lexical = SearchRequest::new(lena(), "kayaking", 5);
    lexical.mode = SearchMode::Lexical;
    let found: Vec<MemoryId> =
        e.m.search(lexical)
            .await
            .unwrap()
            .results
            .iter()
            .map(|h| h.memory.id)
            .collect();
    assert!(found.contains(&answer), "{found:?}");
    assert_eq!(
        get(&e.store, answer).text,
        "Yes, last summer with my cousin!",
        "the record is the turn"
    );
    // Its vector holds the window too: the question's words reach it by meaning alone.
    let q = CandidateQuery {
        scope: &lena(),
        kinds: None,
        filter: None,
        read: ReadOptions::default(),
        limit: 5,
    };
    let by_meaning = engines::off_runtime(|| {
        engines::off_runtime(|| {
            e.store
                .dense_candidates(&q, &HashEmbedder::vector("kayaking fjord"))
        })
    })
    .unwrap();
    let keys: Vec<i64> = by_meaning
        .iter()
        .filter(|c| c.score > 0.0)
        .map(|c| c.key)
        .collect();
    let ids: Vec<MemoryId> = engines::off_runtime(|| e.store.fetch(&q, &keys))
        .unwrap()
        .into_iter()
        .map(|(_, m)| m.id)
        .collect();
    assert!(ids.contains(&answer), "{by_meaning:?}");
}

#[tokio::test]
async fn evolution_keeps_a_conversation_notes_window_in_its_index() {
    let e = env(true);
    let mut req = note("");
    req.input = mnemo::AddInput::Messages(vec![
        InputMessage {
            role: Role::User,
            content: "Any plans for the marathon?".into(),
            name: Some("Ana".into()),
        },
        InputMessage {
            role: Role::User,
            content: "Training every morning now".into(),
            name: Some("Ben".into()),
        },
    ]);
    req.session_id = Some("s1".into());
    e.text("enrich", json!({"notes": [{"note": 1, "keywords": ["plans"], "tags": ["sport"], "context": "c"},
                                      {"note": 2, "keywords": ["training"], "tags": ["sport"], "context": "c"}]}));
    // No evolve call: the store holds no notes yet to show the model.
    let training = e.m.add(req).await.unwrap().results[1].id;
    e.text(
        "enrich",
        json!({"notes": [{"note": 1, "keywords": ["race"], "tags": ["sport"], "context": "c"}]}),
    );
    e.on("evolve", |req| {
        let n = req.messages[1].content.lines().find_map(|l| {
            let (n, t) = l.split_once(": ")?;
            t.contains("Training every morning").then(|| n.trim().parse::<usize>().ok()).flatten()
        });
        Ok(json!({"updates": [{"id": n.expect("the training note is shown"), "tags": ["running"], "reason": "it is for a race"}]}).to_string())
    });
    e.m.add(note("Ben finished the race in Berlin"))
        .await
        .unwrap();
    assert_eq!(get(&e.store, training).note.unwrap().tags, vec!["running"]);
    let lexical = |q: &str| {
        let mut r = SearchRequest::new(lena(), q, 10);
        r.mode = SearchMode::Lexical;
        r
    };
    for (q, found) in [("running", true), ("marathon", true), ("sport", false)] {
        let hits = e.m.search(lexical(q)).await.unwrap().results;
        assert_eq!(hits.iter().any(|h| h.memory.id == training), found, "{q}");
    }
}

#[tokio::test]
async fn note_settings_outside_their_range_are_refused_at_open() {
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = mnemo::MemoryConfig::new(dir.path());
    cfg.notes.link_entity = 1.5;
    let err = Memory::open(cfg).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidInput);
    assert!(err.to_string().contains("notes.link_entity"), "{err}");
    assert!(!dir.path().join("mnemo.db").exists(), "nothing created");
}

/// A conversation note is indexed with the earlier turns of its session as the log shows them:
/// a turn erased before the note was added is not part of its index text.
#[tokio::test]
async fn an_erased_turn_is_not_context_for_a_later_note_of_its_session() {
    let e = env(false);
    let turn = |who: &str, text: &str| InputMessage {
        role: Role::User,
        content: text.into(),
        name: Some(who.into()),
    };
    let mut first = note("");
    first.input = mnemo::AddInput::Messages(vec![turn("Ana", "Any plans for the marathon?")]);
    first.session_id = Some("s1".into());
    e.m.add(first).await.unwrap();
    let report =
        e.m.erase_session(lena(), "s1".into(), WritePlan::default())
            .await
            .unwrap();
    assert!(report.messages_erased >= 1, "{report:?}");
    let mut later = note("");
    later.input = mnemo::AddInput::Messages(vec![turn("Ben", "Training every morning now")]);
    later.session_id = Some("s1".into());
    let id = e.m.add(later).await.unwrap().results[0].id;
    let lexical = |q: &str| {
        let mut r = SearchRequest::new(lena(), q, 10);
        r.mode = SearchMode::Lexical;
        r
    };
    let training = e.m.search(lexical("training")).await.unwrap().results;
    assert!(training.iter().any(|h| h.memory.id == id));
    let marathon = e.m.search(lexical("marathon")).await.unwrap().results;
    assert!(
        !marathon.iter().any(|h| h.memory.id == id),
        "the erased turn was indexed as the note's context"
    );
}
