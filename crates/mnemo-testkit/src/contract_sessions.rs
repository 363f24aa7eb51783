//! Contract cases for the log by session: listing a scope's sessions with their times and
//! sizes, paging through a session's messages, the memories a session is the source of, and
//! the typed errors for unknown sessions, foreign sessions and stale cursors. Re-exported by
//! `contract`.

use crate::contract_tier_fixtures::put_page;
use crate::*;
use mnemo_core::*;

/// Writes `n` turns (each a message, its raw memory and a page) into `session` of `scope`.
fn turns(store: &dyn Store, scope: &Scope, session: &str, n: usize) {
    for i in 0..n {
        put_page(
            store,
            scope,
            Some(session),
            &format!("{session} turn number {i}"),
        );
    }
}

fn q<'a>(after: Option<&'a str>, only: Option<&'a str>, limit: usize) -> SessionQuery<'a> {
    SessionQuery { after, only, limit }
}

/// Sessions are listed by id with first and last times, message and page counts, a page at a
/// time; only the scope's own sessions, and none for messages without a session.
pub fn sessions_are_listed_with_their_sizes(h: &dyn Harness) {
    let store = h.fresh();
    let ana = scope("ana");
    turns(store.as_ref(), &ana, "s-b", 3);
    turns(store.as_ref(), &ana, "s-a", 2);
    turns(store.as_ref(), &ana, "s-c", 1);
    put(
        store.as_ref(),
        &ana,
        "no session here",
        serde_json::json!({}),
    );
    turns(store.as_ref(), &scope("bob"), "s-secret", 2);

    let all = store
        .sessions(&ana, &q(None, None, 100))
        .expect("sessions listed");
    let ids: Vec<&str> = all.iter().map(|s| s.session_id.as_str()).collect();
    assert_eq!(
        ids,
        ["s-a", "s-b", "s-c"],
        "ordered by id, bob's not listed"
    );
    let b = &all[1];
    assert_eq!((b.messages, b.pages), (3, 3), "{b:?}");
    assert!(b.first_at <= b.last_at);
    assert_eq!((all[0].messages, all[0].pages), (2, 2));

    let first = store.sessions(&ana, &q(None, None, 2)).expect("first page");
    assert_eq!(first.len(), 2);
    let rest = store
        .sessions(&ana, &q(Some(&first[1].session_id), None, 2))
        .expect("second page");
    assert_eq!(rest.len(), 1);
    assert_eq!(rest[0].session_id, "s-c");

    let bobs = store
        .sessions(&scope("bob"), &q(None, None, 100))
        .expect("bob's");
    assert_eq!(bobs.len(), 1);
    assert!(store
        .sessions(&scope("nobody"), &q(None, None, 10))
        .unwrap()
        .is_empty());
    let one = store.sessions(&ana, &q(None, Some("s-b"), 10)).unwrap();
    assert_eq!(one, vec![b.clone()], "only picks one session");
    let foreign = store
        .sessions(&ana, &q(None, Some("s-secret"), 10))
        .unwrap();
    assert!(foreign.is_empty(), "bob's session is not ana's");
}

/// A session's messages come in log order, after a cursor message, at most `limit`; an
/// unknown session or one of another scope is invalid input naming `session_id`, a cursor
/// that is not a message of the session names `cursor`.
pub fn session_messages_page_in_log_order(h: &dyn Harness) {
    let store = h.fresh();
    let ana = scope("ana");
    turns(store.as_ref(), &ana, "s1", 5);
    turns(store.as_ref(), &ana, "s2", 1);
    turns(store.as_ref(), &scope("bob"), "s-bob", 1);

    let all = store
        .session_messages(&SessionLogQuery {
            scope: &ana,
            session: "s1",
            after: None,
            limit: 100,
        })
        .unwrap();
    let texts: Vec<&str> = all.iter().map(|m| m.content.as_str()).collect();
    assert_eq!(
        texts,
        (0..5)
            .map(|i| format!("s1 turn number {i}"))
            .collect::<Vec<_>>()
    );
    let page = store
        .session_messages(&SessionLogQuery {
            scope: &ana,
            session: "s1",
            after: None,
            limit: 2,
        })
        .unwrap();
    assert_eq!(page.len(), 2);
    let next = store
        .session_messages(&SessionLogQuery {
            scope: &ana,
            session: "s1",
            after: Some(page[1].id),
            limit: 2,
        })
        .unwrap();
    assert_eq!(next[0].id, all[2].id);
    assert_eq!(next[1].id, all[3].id);
    let last = store
        .session_messages(&SessionLogQuery {
            scope: &ana,
            session: "s1",
            after: Some(all[4].id),
            limit: 2,
        })
        .unwrap();
    assert!(last.is_empty());

    for (who, session) in [(&ana, "s-none"), (&ana, "s-bob"), (&scope("bob"), "s1")] {
        let e = store
            .session_messages(&SessionLogQuery {
                scope: who,
                session,
                after: None,
                limit: 10,
            })
            .unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidInput, "{e}");
        assert!(e.to_string().contains("session_id"), "{e}");
    }
    let s2 = store
        .session_messages(&SessionLogQuery {
            scope: &ana,
            session: "s2",
            after: None,
            limit: 1,
        })
        .unwrap();
    let e = store
        .session_messages(&SessionLogQuery {
            scope: &ana,
            session: "s1",
            after: Some(s2[0].id),
            limit: 10,
        })
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidInput, "{e}");
    assert!(e.to_string().contains("cursor"), "{e}");
}

/// The memories of a session are its active memories with a source message in it, of the
/// scope only; deleted ones drop out; an unknown session names `session_id`.
pub fn session_memories_are_its_active_sources(h: &dyn Harness) {
    let store = h.fresh();
    let ana = scope("ana");
    turns(store.as_ref(), &ana, "s1", 3);
    turns(store.as_ref(), &ana, "s2", 2);
    let ids = store.session_memories(&ana, "s1").unwrap();
    assert_eq!(ids.len(), 3);
    let other = store.session_memories(&ana, "s2").unwrap();
    assert!(ids.iter().all(|i| !other.contains(i)));
    store
        .delete(&ana, ids[0], DeleteMode::Soft, &WritePlan::default())
        .unwrap();
    assert_eq!(
        store.session_memories(&ana, "s1").unwrap(),
        ids[1..].to_vec()
    );
    for (who, session) in [(&ana, "nope"), (&scope("bob"), "s1")] {
        let e = store.session_memories(who, session).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidInput, "{e}");
        assert!(e.to_string().contains("session_id"), "{e}");
    }
}

/// An ADD event names who asked (the batch's actor) when the batch says, else the memory's
/// speaker, with the speaker's role.
pub fn add_events_name_the_requester_or_the_speaker(h: &dyn Harness) {
    let store = h.fresh();
    let ana = scope("ana");
    let spoken = |ctx: WritePlan| {
        let mut b = batch(&ana, "I like figs", serde_json::json!({}));
        b.messages[0].name = Some("Ana".into());
        b.memories[0].actor = Some("Ana".into());
        b.context = ctx;
        let out = store.write(vec![b]).expect("write");
        out[0].results[0].id
    };
    let by_speaker = spoken(WritePlan::default());
    let by_key = spoken(WritePlan {
        actor: Some("api-key:k1".into()),
        ..WritePlan::default()
    });
    let add = |id| {
        store
            .history(&HistoryQuery::new(&ana, id, ReadOptions::default()))
            .unwrap()
            .into_iter()
            .find(|e| e.event == HistoryKind::Add)
            .expect("an ADD event")
    };
    let e = add(by_speaker);
    assert_eq!(e.actor.as_deref(), Some("Ana"));
    assert_eq!(e.role, Some(Role::User));
    let e = add(by_key);
    assert_eq!(e.actor.as_deref(), Some("api-key:k1"));
    assert_eq!(e.role, Some(Role::User));
}
