//! Long-term memory over the real SQLite store with a scripted chat model: the profile created
//! and superseded with history and reasons, dimensions with mapped message ids, knowledge with
//! provenance and without repeats, assistant knowledge in the agent's scope, failing and
//! malformed models that write nothing, no model at all, and the automatic trigger.
//!
//! Pages are written straight through the store (messages and their page in one batch), so
//! these tests do not depend on how adds cut conversations into pages.

use mnemo::core::tier::{HeatWeights, NewPage, PageMove, PageQuery, Segment, SegmentWrite};
use mnemo::core::*;
use mnemo::{AddRequest, InferConfig, Memory, ProfileOptions};
use mnemo_testkit::engines;
use mnemo_testkit::{HashEmbedder, ScriptedChat};
use serde_json::{json, Value};
use std::sync::{Arc, Mutex};

type Replies = Arc<Mutex<Vec<Box<dyn Fn(&ChatRequest) -> Result<String> + Send + Sync>>>>;

struct Env {
    m: Memory,
    store: Arc<dyn Store>,
    chat: Arc<ScriptedChat>,
    replies: Replies,
    _test_store: engines::TestStore,
}

/// An engine whose chat model answers each profile call with the next queued reply.
fn env() -> Env {
    let dir = engines::fresh_store();
    let store = dir.store();
    let replies: Replies = Arc::default();
    let q = replies.clone();
    let chat = Arc::new(ScriptedChat::new("scripted:profile", move |req| {
        assert_eq!(
            pipeline::step_of(req),
            Some("profile"),
            "only profile calls"
        );
        let mut q = q.lock().unwrap();
        assert!(!q.is_empty(), "unexpected profile call");
        let reply = q.remove(0);
        reply(req)
    }));
    let m = Memory::from_parts(store.clone(), Arc::new(HashEmbedder), RankParams::default())
        .unwrap()
        .with_chat(chat.clone(), InferConfig::default());
    Env {
        m,
        store,
        chat,
        replies,
        _test_store: dir,
    }
}

impl Env {
    fn reply(&self, f: impl Fn(&ChatRequest) -> Result<String> + Send + Sync + 'static) {
        self.replies.lock().unwrap().push(Box::new(f));
    }

    /// One exchange (a user turn and the reply) logged with its page in the short-term window.
    fn exchange(&self, scope: &Scope, said: &str, answered: &str) -> (PageId, Vec<MessageId>) {
        let now = chrono::Utc::now();
        let mut user = Message::new(scope, Role::User, Some("Ann".into()), said.into(), now);
        let mut reply = Message::new(
            scope,
            Role::Assistant,
            None,
            answered.into(),
            now + chrono::Duration::milliseconds(1),
        );
        user.session_id = Some("s1".into());
        reply.session_id = Some("s1".into());
        let page = NewPage {
            id: PageId::new(),
            scope: scope.clone(),
            session_id: Some("s1".into()),
            message_ids: vec![user.id, reply.id],
            text: format!("Ann: {said}\nassistant: {answered}"),
            tokens: 20,
            at: now,
            vector: HashEmbedder.embed(&[said]).unwrap().remove(0),
            keywords: Vec::new(),
        };
        let ids = vec![user.id, reply.id];
        let mut batch = WriteBatch::new(scope.clone(), vec![user, reply], Vec::new());
        batch.tiers.pages.push(page.clone());
        engines::off_runtime(|| self.store.write(vec![batch])).unwrap();
        (page.id, ids)
    }

    fn unanalysed(&self, user: &str) -> usize {
        engines::off_runtime(|| {
            engines::off_runtime(|| {
                engines::off_runtime(|| {
                    self.store.pages(&PageQuery {
                        scope: Some(Scope::user(user).unwrap()),
                        analysed: Some(false),
                        ..PageQuery::default()
                    })
                })
            })
        })
        .unwrap()
        .len()
    }

    /// Every profile and knowledge memory of the user, any state.
    fn long_term(&self, user: &str) -> Vec<Memory_> {
        engines::off_runtime(|| {
            engines::off_runtime(|| {
                engines::off_runtime(|| {
                    self.store.list(
                        &ListQuery::new(Scope::user(user).unwrap(), 100)
                            .with_kinds(vec![MemoryKind::Profile, MemoryKind::Knowledge])
                            .with_read(ReadOptions {
                                include_inactive: true,
                                ..ReadOptions::default()
                            }),
                    )
                })
            })
        })
        .unwrap()
        .results
    }
}

type Memory_ = mnemo::MemoryRecord;

/// The number the prompt shows for the message containing `needle`.
fn num(req: &ChatRequest, needle: &str) -> u64 {
    let user = &req.messages[1].content;
    user.lines()
        .find(|l| l.starts_with('[') && l.contains(needle))
        .and_then(|l| l[1..].split(']').next()?.parse().ok())
        .unwrap_or_else(|| panic!("no numbered message with {needle:?} in\n{user}"))
}

/// The `K` number the prompt shows for the known statement containing `needle`.
fn known(req: &ChatRequest, needle: &str) -> String {
    let user = &req.messages[1].content;
    user.lines()
        .find(|l| l.starts_with('K') && l.contains(needle))
        .and_then(|l| l.split_whitespace().next())
        .map(str::to_string)
        .unwrap_or_else(|| panic!("no known statement with {needle:?} in\n{user}"))
}

fn answer(profile: Value, user: Value, assistant: Value) -> String {
    json!({"profile": profile, "user_knowledge": user, "assistant_knowledge": assistant})
        .to_string()
}

fn user_scope() -> Scope {
    Scope::user("ann").unwrap()
}

#[tokio::test]
async fn a_profile_is_created_then_superseded_with_history_and_the_models_reason() {
    let e = env();
    let scope = user_scope();
    let (_, first) = e.exchange(&scope, "I love hiking in the Alps", "Lovely! Any trail?");
    e.reply(|req| {
        let n = num(req, "hiking");
        Ok(answer(
            json!({"dimensions": [{"name": "hobbies", "value": "hiking in the Alps", "messages": [n]}], "reason": "first things learned"}),
            json!([]),
            json!([]),
        ))
    });
    let out =
        e.m.refresh_profile(scope.clone(), ProfileOptions::default())
            .await
            .unwrap();
    assert_eq!(out.pages_analysed, 1);
    assert_eq!(out.results.len(), 1);
    assert_eq!(out.results[0].event, HistoryKind::Add);
    let v1 =
        e.m.profile(scope.clone())
            .await
            .unwrap()
            .expect("a profile");
    assert_eq!(v1.kind, MemoryKind::Profile);
    assert_eq!(v1.text, "hobbies: hiking in the Alps");
    assert_eq!(v1.scope().unwrap(), scope);
    assert_eq!(
        v1.sources,
        vec![first[0]],
        "the dimension rests on the user's turn"
    );
    assert_eq!(
        v1.metadata["dimensions"][0]["message_ids"],
        json!([first[0].to_string()])
    );
    assert_eq!(e.unanalysed("ann"), 0);

    let (_, second) = e.exchange(&scope, "I took up chess last month", "Great game!");
    e.reply(|req| {
        assert!(
            req.messages[1]
                .content
                .contains("CURRENT profile:\n- hobbies: hiking in the Alps"),
            "the model sees the current profile"
        );
        let n = num(req, "chess");
        Ok(answer(
            json!({"dimensions": [{"name": "Hobbies", "value": "hiking in the Alps, chess", "messages": [n]}], "reason": "took up chess"}),
            json!([]),
            json!([]),
        ))
    });
    let out =
        e.m.refresh_profile(scope.clone(), ProfileOptions::default())
            .await
            .unwrap();
    let r = &out.results[0];
    assert_eq!(r.event, HistoryKind::Update);
    assert_eq!(r.previous_id, Some(v1.id));
    assert_eq!(r.reason.as_deref(), Some("took up chess"));
    let v2 = out.profile.clone().expect("the new profile");
    assert_eq!(v2.id, r.id);
    assert_eq!(v2.text, "hobbies: hiking in the Alps, chess");
    assert_eq!(
        v2.sources,
        vec![first[0], second[0]],
        "earlier evidence kept"
    );
    assert_eq!(e.m.profile(scope.clone()).await.unwrap().unwrap().id, v2.id);

    // The old version is kept, superseded, with the reason in its history.
    let read_all = ReadOptions {
        include_inactive: true,
        ..ReadOptions::default()
    };
    let old = engines::off_runtime(|| e.store.get(&scope, v1.id, &read_all)).unwrap();
    assert_eq!(old.state, MemoryState::Superseded);
    assert_eq!(old.text, "hobbies: hiking in the Alps");
    let history = e.m.history(scope.clone(), v1.id).await.unwrap();
    let sup = history
        .iter()
        .find(|h| h.event == HistoryKind::Supersede)
        .expect("a SUPERSEDE event");
    assert_eq!(sup.reason.as_deref(), Some("took up chess"));

    // Nothing left to analyse: no model call, nothing written.
    let calls = e.chat.requests().len();
    let out =
        e.m.refresh_profile(scope.clone(), ProfileOptions::default())
            .await
            .unwrap();
    assert_eq!((out.pages_analysed, out.results.len()), (0, 0));
    assert_eq!(e.chat.requests().len(), calls);
}

#[tokio::test]
async fn invented_message_and_knowledge_numbers_are_dropped_with_warnings() {
    let e = env();
    let scope = user_scope();
    let (_, ids) = e.exchange(&scope, "I am a nurse in Lyon", "Thanks for telling me.");
    e.reply(|req| {
        let n = num(req, "nurse");
        Ok(answer(
            json!({"dimensions": [{"name": "work", "value": "nurse in Lyon", "messages": [n, 42]}]}),
            json!([{"text": "Ann works in Lyon", "messages": [n, "[77]"], "replaces": "K9"}]),
            json!([]),
        ))
    });
    let out =
        e.m.refresh_profile(scope.clone(), ProfileOptions::default())
            .await
            .unwrap();
    let profile = out.profile.unwrap();
    assert_eq!(
        profile.sources,
        vec![ids[0]],
        "only the shown message is kept"
    );
    assert!(
        out.warnings.iter().any(|w| w.contains("message 42")),
        "{:?}",
        out.warnings
    );
    assert!(
        out.warnings.iter().any(|w| w.contains("[77]")),
        "{:?}",
        out.warnings
    );
    assert!(
        out.warnings.iter().any(|w| w.contains("K9")),
        "{:?}",
        out.warnings
    );
    let knowledge: Vec<_> = out
        .results
        .iter()
        .filter(|r| r.memory == "Ann works in Lyon")
        .collect();
    assert_eq!(knowledge.len(), 1);
    assert_eq!(
        knowledge[0].event,
        HistoryKind::Add,
        "an invented K number adds"
    );
}

#[tokio::test]
async fn knowledge_has_provenance_lives_in_its_scope_and_is_not_written_twice() {
    let e = env();
    let scope = user_scope();
    // The conversation is the agent's with the user: its messages and pages are theirs.
    let with_agent = Scope::from_parts(Some("ann"), Some("guide"), None).unwrap();
    let (_, ids) = e.exchange(
        &with_agent,
        "My sister Mia lives in Porto",
        "I suggested visiting the Livraria Lello when you go.",
    );
    let reply = |req: &ChatRequest| {
        let (u, a) = (num(req, "Mia"), num(req, "Lello"));
        Ok(answer(
            json!({"dimensions": []}),
            json!([{"text": "Ann's sister Mia lives in Porto", "messages": [u]}]),
            json!([{"text": "The assistant suggested the Livraria Lello in Porto", "messages": [a]}]),
        ))
    };
    e.reply(reply);
    let out =
        e.m.refresh_profile(with_agent.clone(), ProfileOptions::default())
            .await
            .unwrap();
    assert!(out.profile.is_none(), "no dimensions, no profile");
    assert_eq!(out.results.len(), 2, "{:?}", out.results);
    let stored = e.long_term("ann");
    let user_k = stored
        .iter()
        .find(|m| m.text.starts_with("Ann's sister"))
        .unwrap();
    assert_eq!(user_k.kind, MemoryKind::Knowledge);
    assert_eq!(user_k.scope().unwrap(), scope);
    assert_eq!(user_k.sources, vec![ids[0]]);
    assert_eq!(user_k.metadata["knowledge"], "user");
    let assistant_k = stored
        .iter()
        .find(|m| m.text.starts_with("The assistant"))
        .unwrap();
    assert_eq!(
        assistant_k.scope().unwrap(),
        with_agent,
        "the agent's scope"
    );
    assert_eq!(assistant_k.sources, vec![ids[1]]);
    assert_eq!(assistant_k.role, Some(Role::Assistant));
    assert_eq!(assistant_k.metadata["knowledge"], "assistant");
    // Provenance resolves to the source messages.
    let detail =
        e.m.inspect(with_agent.clone(), assistant_k.id)
            .await
            .unwrap();
    assert_eq!(detail.source_messages.len(), 1);
    assert!(detail.source_messages[0].content.contains("Lello"));

    // The same statements from a later page are recognised and skipped; the model sees them.
    e.exchange(
        &scope,
        "Mia says hi, by the way",
        "Say hi back! Enjoy the Lello.",
    );
    e.reply(move |req| {
        known(req, "Mia lives in Porto");
        Ok(answer(
            json!({"dimensions": []}),
            json!([{"text": "Ann's sister Mia lives in Porto", "messages": [num(req, "Mia says")]}]),
            json!([{"text": "The assistant suggested the Livraria Lello in Porto", "messages": [num(req, "Enjoy")]}]),
        ))
    });
    let out =
        e.m.refresh_profile(with_agent.clone(), ProfileOptions::default())
            .await
            .unwrap();
    assert!(out.results.is_empty(), "{:?}", out.results);
    assert_eq!(
        out.warnings
            .iter()
            .filter(|w| w.contains("already stored"))
            .count(),
        2,
        "{:?}",
        out.warnings
    );
    assert_eq!(e.long_term("ann").len(), 2);
    assert_eq!(e.unanalysed("ann"), 0);
}

#[tokio::test]
async fn a_replaced_statement_is_superseded_and_without_an_agent_assistant_knowledge_stays_with_the_user(
) {
    let e = env();
    let scope = user_scope();
    e.exchange(&scope, "I live in Berlin", "Noted.");
    e.reply(|req| {
        Ok(answer(
            json!(null),
            json!([{"text": "Ann lives in Berlin", "messages": [num(req, "Berlin")]}]),
            json!([{"text": "The assistant noted where Ann lives", "messages": [num(req, "Noted")]}]),
        ))
    });
    e.m.refresh_profile(scope.clone(), ProfileOptions::default())
        .await
        .unwrap();
    let assistant_k = e
        .long_term("ann")
        .into_iter()
        .find(|m| m.text.starts_with("The assistant"))
        .unwrap();
    assert_eq!(assistant_k.scope().unwrap(), scope);
    assert_eq!(assistant_k.metadata["knowledge"], "assistant");

    e.exchange(&scope, "We moved to Lisbon!", "Congratulations!");
    e.reply(|req| {
        Ok(answer(
            json!(null),
            json!([{"text": "Ann lives in Lisbon", "messages": [num(req, "Lisbon")], "replaces": known(req, "Berlin"), "reason": "moved"}]),
            json!([]),
        ))
    });
    let out =
        e.m.refresh_profile(scope.clone(), ProfileOptions::default())
            .await
            .unwrap();
    assert_eq!(out.results.len(), 1);
    assert_eq!(out.results[0].event, HistoryKind::Update);
    assert_eq!(
        out.results[0].previous_memory.as_deref(),
        Some("Ann lives in Berlin")
    );
    let states: Vec<(String, MemoryState)> = e
        .long_term("ann")
        .into_iter()
        .filter(|m| m.text.starts_with("Ann lives"))
        .map(|m| (m.text, m.state))
        .collect();
    assert!(states.contains(&("Ann lives in Berlin".into(), MemoryState::Superseded)));
    assert!(states.contains(&("Ann lives in Lisbon".into(), MemoryState::Active)));
}

#[tokio::test]
async fn a_failing_or_malformed_model_writes_nothing_and_marks_nothing_analysed() {
    let e = env();
    let scope = user_scope();
    e.exchange(&scope, "I love hiking", "Nice!");
    e.reply(|_| {
        Err(Error::Unavailable {
            component: "chat".into(),
            reason: "connection refused".into(),
        })
    });
    e.reply(|_| Ok("I think the user likes hiking.".into()));
    e.reply(|_| Ok(json!({"profile": "likes hiking"}).to_string()));
    e.reply(|_| Ok(json!({"profile": {"dimensions": [{"value": "hiking"}]}}).to_string()));
    for expected in [
        ErrorKind::Unavailable,
        ErrorKind::ModelOutput,
        ErrorKind::ModelOutput,
        ErrorKind::ModelOutput,
    ] {
        let err =
            e.m.refresh_profile(scope.clone(), ProfileOptions::default())
                .await
                .unwrap_err();
        assert_eq!(err.kind(), expected, "{err}");
        assert_eq!(e.unanalysed("ann"), 1, "the page stays unanalysed");
        assert!(e.long_term("ann").is_empty(), "nothing written");
    }
    // The next good answer analyses the same page.
    e.reply(|req| {
        Ok(answer(
            json!({"dimensions": [{"name": "hobbies", "value": "hiking", "messages": [num(req, "hiking")]}]}),
            json!([]),
            json!([]),
        ))
    });
    let out =
        e.m.refresh_profile(scope.clone(), ProfileOptions::default())
            .await
            .unwrap();
    assert_eq!(out.pages_analysed, 1);
    assert_eq!(e.unanalysed("ann"), 0);
}

#[tokio::test]
async fn without_a_chat_model_refresh_is_invalid_input_naming_the_model_and_nothing_else_breaks() {
    let dir = engines::fresh_store();
    let store = dir.store();
    let m =
        Memory::from_parts(store.clone(), Arc::new(HashEmbedder), RankParams::default()).unwrap();
    let scope = user_scope();
    m.add(mnemo::AddRequest::text(scope.clone(), "I love hiking"))
        .await
        .unwrap();
    let err = m
        .refresh_profile(scope.clone(), ProfileOptions::default())
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidInput);
    let text = err.to_string();
    assert!(
        text.contains("llm") && text.contains("chat model"),
        "{text}"
    );
    assert!(m.profile(scope.clone()).await.unwrap().is_none());
    let (warnings, usage) = m
        .profile_after_add(&scope, Some(0.1), &HeatWeights::default())
        .await;
    assert!(warnings.is_empty() && usage.is_empty());
    let hits = m
        .search(SearchRequest::new(scope, "hiking", 5))
        .await
        .unwrap();
    assert_eq!(hits.results.len(), 1, "search still works");
}

#[tokio::test]
async fn a_refresh_needs_a_user_and_refuses_a_run() {
    let e = env();
    let agent_only = Scope::from_parts(None, Some("guide"), None).unwrap();
    let err =
        e.m.refresh_profile(agent_only, ProfileOptions::default())
            .await
            .unwrap_err();
    assert!(err.to_string().contains("user_id"), "{err}");
    let with_run = Scope::from_parts(Some("ann"), None, Some("r1")).unwrap();
    let err =
        e.m.refresh_profile(with_run, ProfileOptions::default())
            .await
            .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidInput);
    assert!(err.to_string().contains("run_id"), "{err}");
}

/// Contract-style: every version of a profile stays reachable — the chain of `supersedes`
/// links, each old version's validity ending where the next begins, and an as-of read.
#[tokio::test]
async fn profile_supersession_keeps_lineage() {
    let e = env();
    let scope = user_scope();
    let mut versions = Vec::new();
    for (said, value) in [
        ("I like tea", "tea"),
        ("I now prefer coffee", "coffee"),
        ("Actually, matcha", "matcha"),
    ] {
        e.exchange(&scope, said, "Noted.");
        let value = value.to_string();
        let said = said.to_string();
        e.reply(move |req| {
            Ok(answer(
                json!({"dimensions": [{"name": "drinks", "value": value, "messages": [num(req, &said)]}], "reason": format!("now {value}")}),
                json!([]),
                json!([]),
            ))
        });
        let out =
            e.m.refresh_profile(scope.clone(), ProfileOptions::default())
                .await
                .unwrap();
        versions.push(out.profile.unwrap());
    }
    let all = e.long_term("ann");
    assert_eq!(all.len(), 3);
    assert_eq!(
        all.iter()
            .filter(|m| m.state == MemoryState::Active)
            .count(),
        1
    );
    for pair in versions.windows(2) {
        let (old, new) = (&pair[0], &pair[1]);
        let links = e.m.links(scope.clone(), new.id).await.unwrap();
        assert!(
            links
                .iter()
                .any(|l| l.kind == LinkKind::Supersedes && l.from == new.id && l.to == old.id),
            "{links:?}"
        );
        let stored_old = all.iter().find(|m| m.id == old.id).unwrap();
        assert_eq!(stored_old.valid_until, new.valid_from);
        // What the profile said while the old version held.
        let page = engines::off_runtime(|| {
            engines::off_runtime(|| {
                e.store.list(
                    &ListQuery::new(scope.clone(), 10)
                        .with_kinds(vec![MemoryKind::Profile])
                        .with_read(ReadOptions {
                            as_of: old.valid_from,
                            ..ReadOptions::default()
                        }),
                )
            })
        })
        .unwrap();
        assert_eq!(page.results.len(), 1);
        assert_eq!(page.results[0].id, old.id);
    }
    assert_eq!(versions[2].text, "drinks: matcha");
}

/// The automatic trigger: a hot segment's unanalysed pages are analysed; a failure is a
/// warning and the pages wait for the next attempt; a cold segment is left alone.
#[tokio::test]
async fn hot_segments_are_analysed_after_an_add_and_failures_only_warn() {
    let e = env();
    let scope = user_scope();
    let (page, _) = e.exchange(&scope, "I play the cello", "Beautiful instrument.");
    let now = chrono::Utc::now();
    let segment = Segment {
        id: SegmentId::new(),
        scope: scope.clone(),
        summary: "music".into(),
        summary_author: Author::Rule,
        keywords: vec!["cello".into()],
        vector: HashEmbedder.embed(&["cello"]).unwrap().remove(0),
        page_count: 1,
        length_tokens: 20,
        visits: 3,
        last_visit_at: now,
        created_at: now,
        updated_at: now,
        evicted_at: None,
        version: 0,
        event_time: None,
    };
    let mut batch = WriteBatch::new(scope.clone(), Vec::new(), Vec::new());
    batch.tiers.segments.push(SegmentWrite {
        segment: segment.clone(),
        expected_version: None,
    });
    batch.tiers.moves.push(PageMove {
        page,
        segment: segment.id,
        continues: None,
    });
    engines::off_runtime(|| e.store.write(vec![batch])).unwrap();
    let weights = HeatWeights::default();

    // Cold by this threshold: nothing happens (no model call is queued; one would panic).
    let (w, usage) = e.m.profile_after_add(&scope, Some(1000.0), &weights).await;
    assert!(w.is_empty() && usage.is_empty());

    e.reply(|_| {
        Err(Error::Unavailable {
            component: "chat".into(),
            reason: "timeout".into(),
        })
    });
    let (w, _) = e.m.profile_after_add(&scope, Some(1.0), &weights).await;
    assert_eq!(w.len(), 1, "{w:?}");
    assert!(w[0].contains("retried"), "{w:?}");
    assert_eq!(e.unanalysed("ann"), 1);

    e.reply(|req| {
        Ok(answer(
            json!({"dimensions": [{"name": "music", "value": "plays the cello", "messages": [num(req, "cello")]}]}),
            json!([]),
            json!([]),
        ))
    });
    let (w, usage) = e.m.profile_after_add(&scope, Some(1.0), &weights).await;
    assert!(w.is_empty(), "{w:?}");
    assert!(usage.iter().any(|c| c.purpose == "profile"), "{usage:?}");
    assert_eq!(e.unanalysed("ann"), 0);
    let p = e.m.profile(scope).await.unwrap().unwrap();
    assert_eq!(p.text, "music: plays the cello");
}

/// The trigger runs on its own after an add: with a short window, the second exchange of a
/// session pushes the first into a new segment, which is hot enough at this threshold, so the
/// add's outcome carries the profile call and the profile exists.
#[tokio::test]
async fn an_add_that_heats_a_segment_updates_the_profile() {
    let e = env();
    let m = e.m.clone().with_tier_config(TierConfig {
        short_term_capacity: 1,
        profile_heat_threshold: Some(0.5),
        ..TierConfig::default()
    });
    let scope = user_scope();
    let add = |text: &str| {
        let mut r = AddRequest::text(scope.clone(), text);
        r.session_id = Some("s1".into());
        r
    };
    let first = m.add(add("I play the cello")).await.unwrap();
    assert!(
        first.usage.iter().all(|c| c.purpose != "profile"),
        "{first:?}"
    );
    e.reply(|req| {
        Ok(answer(
            json!({"dimensions": [{"name": "music", "value": "plays the cello", "messages": [num(req, "cello")]}]}),
            json!([]),
            json!([]),
        ))
    });
    let second = m.add(add("I also sing")).await.unwrap();
    assert!(
        second.usage.iter().any(|c| c.purpose == "profile"),
        "{second:?}"
    );
    let p = m.profile(scope).await.unwrap().unwrap();
    assert_eq!(p.text, "music: plays the cello");
}

/// Profile analysis reads the log through its visibility rule: the turns of an erased session
/// never reach the model, while what was said after the erase does.
#[tokio::test]
async fn erased_turns_never_reach_the_profile_model() {
    let e = env();
    let scope = user_scope();
    e.exchange(&scope, "My locker code is 4417", "Noted, I will keep it.");
    let report =
        e.m.erase_session(scope.clone(), "s1".into(), WritePlan::default())
            .await
            .unwrap();
    assert!(report.messages_erased >= 2, "{report:?}");
    e.exchange(&scope, "I love hiking in the Alps", "Lovely! Any trail?");
    e.reply(|req| {
        let n = num(req, "hiking");
        Ok(answer(
            json!({"dimensions": [{"name": "hobbies", "value": "hiking in the Alps", "messages": [n]}], "reason": "learned"}),
            json!([]),
            json!([]),
        ))
    });
    let out =
        e.m.refresh_profile(scope.clone(), ProfileOptions::default())
            .await
            .unwrap();
    assert_eq!(out.results.len(), 1, "the profile was written");
    let prompts = e.chat.requests();
    assert!(!prompts.is_empty(), "the model was asked");
    for req in &prompts {
        let all: String = req.messages.iter().map(|m| m.content.as_str()).collect();
        assert!(all.contains("hiking"), "the kept turn is shown");
        assert!(
            !all.contains("4417") && !all.contains("locker"),
            "an erased turn reached the model:\n{all}"
        );
    }
}
