//! Contract cases for the conversation log: it is shown exactly as its memories are
//! (`mnemo_core::visible_messages`, the rule context packs, extraction context and profile
//! analysis read the log through), and erasing a raw memory erases its message.

use crate::*;
use mnemo_core::*;
use std::sync::Arc;

const SAID: [&str; 7] = [
    "Lena: I walk the dog at seven",
    "Lena: my locker code is 5521",
    "Lena: my bank PIN is 4417",
    "Lena: my passport is QX7741",
    "Lena: the dog is called Miso",
    "Lena: I moved to Porto in May",
    "Lena: I work at the harbour",
];

struct Conversation {
    scope: Scope,
    messages: Vec<Message>,
    /// Raw memories of messages 0..=4, in order.
    raws: Vec<MemoryId>,
    /// A fact from message 5 (deleted) and one from message 6 (erased without sources).
    facts: [MemoryId; 2],
    t0: Timestamp,
}

/// One session `s1` of seven turns a second apart: 0 kept, 1 expires in an hour, 2 deleted,
/// 3 erased (without `sources`), 4 kept; 5 and 6 have no raw memory, only facts (5's deleted,
/// 6's erased without `sources`). A second session `s2` of another scope says 2's words too.
fn conversation(store: &dyn Store) -> Conversation {
    let s = scope("lena");
    let t0 = chrono::Utc::now() - chrono::Duration::minutes(10);
    let messages: Vec<Message> = SAID
        .iter()
        .enumerate()
        .map(|(i, text)| {
            let mut m = Message::new(
                &s,
                Role::User,
                Some("Lena".into()),
                text.trim_start_matches("Lena: ").to_string(),
                t0 + chrono::Duration::seconds(i as i64),
            );
            m.session_id = Some("s1".into());
            m
        })
        .collect();
    let mut memories: Vec<NewMemory> = messages[..5]
        .iter()
        .enumerate()
        .map(|(i, m)| {
            let expires = (i == 1).then(|| chrono::Utc::now() + chrono::Duration::hours(1));
            let mut n = NewMemory::raw(
                m,
                &s,
                Metadata::new(),
                expires,
                HashEmbedder::vector(&m.content),
            );
            // Conversation neighbours, as the facade indexes them.
            let around: Vec<&str> = messages[i.saturating_sub(1)..(i + 2).min(messages.len())]
                .iter()
                .map(|m| m.content.as_str())
                .collect();
            n.index_text = Some(around.join("\n"));
            n
        })
        .collect();
    for (i, text) in [(5, "Lena lives in Porto"), (6, "Lena works at the harbour")] {
        let mut f = NewMemory::raw(
            &messages[i],
            &s,
            Metadata::new(),
            None,
            HashEmbedder::vector(text),
        );
        f.kind = MemoryKind::Fact;
        f.text = text.into();
        memories.push(f);
    }
    let out = store
        .write(vec![WriteBatch::new(s.clone(), messages.clone(), memories)])
        .expect("the conversation is written");
    let ids: Vec<MemoryId> = out[0].results.iter().map(|r| r.id).collect();
    let ctx = WritePlan::default();
    store
        .delete(&s, ids[2], DeleteMode::Soft, &ctx)
        .expect("delete");
    let raw = store
        .erase(&EraseMemory::new(&s, ids[3], false), &ctx)
        .expect("erase raw");
    assert_eq!(
        (raw.messages_erased, raw.messages_kept),
        (1, 0),
        "a raw memory's erase erases its message without being asked"
    );
    store
        .delete(&s, ids[5], DeleteMode::Soft, &ctx)
        .expect("delete fact");
    let fact = store
        .erase(&EraseMemory::new(&s, ids[6], false), &ctx)
        .expect("erase fact");
    assert_eq!(
        (fact.messages_erased, fact.messages_kept),
        (0, 1),
        "a fact's erase keeps its evidence unless asked, and says so"
    );
    // Another owner says the same words in a session of the same name.
    let other = scope("omar");
    let mut m = Message::new(&other, Role::User, None, SAID[2].into(), t0);
    m.session_id = Some("s1".into());
    let n = NewMemory::raw(
        &m,
        &other,
        Metadata::new(),
        None,
        HashEmbedder::vector(SAID[2]),
    );
    store
        .write(vec![WriteBatch::new(other, vec![m], vec![n])])
        .expect("other scope");
    Conversation {
        scope: s,
        messages,
        raws: ids[..5].to_vec(),
        facts: [ids[5], ids[6]],
        t0,
    }
}

fn visible(store: &dyn Store, c: &Conversation, read: &ReadOptions) -> Vec<usize> {
    let log = store
        .messages(&c.scope, Some("s1"), 100)
        .expect("the session's log");
    assert_eq!(log.len(), SAID.len(), "the log keeps every message's id");
    visible_messages(store, &c.scope, log, read)
        .expect("visibility")
        .iter()
        .map(|m| {
            c.messages
                .iter()
                .position(|x| x.id == m.id)
                .expect("a message of the conversation")
        })
        .collect()
}

/// The log under delete, expiry, as-of and erase, in a session with neighbours: a message is
/// shown exactly when its raw memory is (`ReadOptions::admits`), an erased one never (no empty
/// line), and the evidence of a deleted or erased-without-sources fact stays.
pub fn the_log_is_shown_as_its_memories_are(h: &dyn Harness) {
    let store = h.fresh();
    let c = conversation(store.as_ref());
    let now = chrono::Utc::now();
    let default = ReadOptions::default();
    assert_eq!(visible(store.as_ref(), &c, &default), vec![0, 1, 4, 5, 6]);
    let later = ReadOptions {
        now: now + chrono::Duration::hours(2),
        ..ReadOptions::default()
    };
    assert_eq!(
        visible(store.as_ref(), &c, &later),
        vec![0, 4, 5, 6],
        "an expired raw memory's message is hidden as the memory is"
    );
    let everything = ReadOptions {
        include_inactive: true,
        include_expired: true,
        ..ReadOptions::default()
    };
    assert_eq!(
        visible(store.as_ref(), &c, &everything),
        vec![0, 1, 2, 4, 5, 6],
        "a read of inactive memories sees the deleted turn; the erased one has no text left"
    );
    // As of just after turn 2 was said: nothing later, and each earlier turn as `admits` says
    // of its raw memory at that instant.
    let at = ReadOptions {
        as_of: Some(c.t0 + chrono::Duration::milliseconds(2500)),
        ..ReadOptions::default()
    };
    let expected: Vec<usize> = (0..3)
        .filter(|&i| {
            let m = store
                .get(&c.scope, c.raws[i], &everything)
                .expect("the raw memory");
            at.admits(&m.validity())
        })
        .collect();
    assert!(expected.contains(&0), "{expected:?}");
    assert_eq!(visible(store.as_ref(), &c, &at), expected);
    // The erased raw memory's message is blank in the store, not only hidden.
    let erased = store
        .messages_by_id(&c.scope, &[c.messages[3].id, c.messages[6].id])
        .expect("messages");
    assert_eq!(erased[0].content, "", "{erased:?}");
    assert!(erased[0].name.is_none());
    assert_eq!(erased[1].content, SAID[6].trim_start_matches("Lena: "));
    // Tenancy: another scope's raw memory of a message with the same words is never consulted.
    let ids: Vec<MessageId> = c.messages.iter().map(|m| m.id).collect();
    assert!(store
        .raw_of_messages(&scope("omar"), &ids)
        .expect("other scope")
        .is_empty());
    let raws = store.raw_of_messages(&c.scope, &ids).expect("raws");
    assert_eq!(raws.len(), 5, "raw memories in any state, facts not");
    assert!(raws.iter().all(|m| m.kind == MemoryKind::Raw));
    assert!(!raws.iter().any(|m| c.facts.contains(&m.id)));
    // An erase of an erased memory is refused, naming the field, and writes nothing.
    let before = store
        .history(&HistoryQuery::new(&c.scope, c.raws[3], everything))
        .expect("history");
    let again = store.erase(
        &EraseMemory::new(&c.scope, c.raws[3], true),
        &WritePlan::default(),
    );
    match again {
        Err(e) => {
            assert_eq!(e.kind(), ErrorKind::InvalidInput, "{e}");
            assert!(e.to_string().contains("id"), "{e}");
        }
        Ok(r) => panic!("a second erase succeeded: {r:?}"),
    }
    assert_eq!(
        store
            .history(&HistoryQuery::new(&c.scope, c.raws[3], everything))
            .expect("history")
            .len(),
        before.len()
    );
    assert!(store.integrity().expect("integrity").is_consistent());
}

/// The extraction context of an inferred add ("EARLIER messages") reads the log through the
/// same rule: deleted, erased and (later) expired turns are not shown to the model again.
pub fn extraction_context_follows_the_log_rule(h: &dyn Harness) {
    let store = h.fresh();
    let c = conversation(store.as_ref());
    let chat = Arc::new(ScriptedChat::new("scripted:log", |_| {
        Ok(r#"{"facts": []}"#.to_string())
    }));
    let mut new = Message::new(
        &c.scope,
        Role::User,
        Some("Lena".into()),
        "what did I tell you about my dog?".into(),
        chrono::Utc::now(),
    );
    new.session_id = Some("s1".into());
    let input = pipeline::InferInput {
        scope: &c.scope,
        messages: std::slice::from_ref(&new),
        metadata: &Metadata::new(),
        expires_at: None,
        instructions: None,
    };
    let mut log = pipeline::CallLog::default();
    pipeline::infer(
        store.as_ref(),
        &HashEmbedder,
        chat.as_ref(),
        &pipeline::InferConfig::default(),
        &RankParams::default(),
        &input,
        &mut log,
    )
    .expect("the add's inference");
    let requests = chat.requests();
    let prompt: String = requests[0]
        .messages
        .iter()
        .map(|m| m.content.as_str())
        .collect::<Vec<_>>()
        .join("\n");
    assert!(prompt.contains("EARLIER messages"), "{prompt}");
    for i in [0, 1, 4, 5, 6] {
        let text = SAID[i].trim_start_matches("Lena: ");
        assert!(prompt.contains(text), "turn {i} is context: {prompt}");
    }
    for secret in ["4417", "QX7741"] {
        assert!(!prompt.contains(secret), "{secret} shown again: {prompt}");
    }
    assert!(
        !prompt.contains("Lena: \n"),
        "no empty line for the erased turn: {prompt}"
    );
}

fn history_len(store: &dyn Store, s: &Scope, ids: &[MemoryId]) -> usize {
    let all = ReadOptions {
        include_inactive: true,
        include_expired: true,
        ..ReadOptions::default()
    };
    ids.iter()
        .map(|id| {
            store
                .history(&HistoryQuery::new(s, *id, all))
                .expect("history")
                .len()
        })
        .sum()
}

/// A session, then the whole scope, erased in one call each: every memory it covers (in any
/// state, facts derived from its turns included) erased with its `ERASE` event, every message
/// blank with its id kept; another session and another scope untouched. An unknown session, a
/// session of another scope and an empty name are `invalid_input` naming `session_id` and
/// write nothing.
pub fn a_session_or_a_scope_is_erased_in_one_call(h: &dyn Harness) {
    let store = h.fresh();
    let c = conversation(store.as_ref());
    let s = &c.scope;
    let mut other = Message::new(s, Role::User, None, "my locker is by the gym".into(), c.t0);
    other.session_id = Some("s2".into());
    let raw = NewMemory::raw(
        &other,
        s,
        Metadata::new(),
        None,
        HashEmbedder::vector("locker gym"),
    );
    let out = store
        .write(vec![WriteBatch::new(
            s.clone(),
            vec![other.clone()],
            vec![raw],
        )])
        .expect("s2");
    let s2_raw = out[0].results[0].id;
    let mut every = c.raws.clone();
    every.extend(c.facts);
    every.push(s2_raw);
    let before = history_len(store.as_ref(), s, &every);
    let ctx = WritePlan::default();
    for (who, session) in [(s.clone(), "nope"), (scope("omar"), "s2"), (s.clone(), " ")] {
        // A blank session is refused when the erase is asked for, before the store reads it.
        let erased = EraseLog::new(&who, EraseTarget::Session(session))
            .and_then(|log| store.erase_log(&log, &ctx));
        match erased {
            Err(e) => {
                assert_eq!(e.kind(), ErrorKind::InvalidInput, "{e}");
                assert!(e.to_string().contains("session_id"), "{e}");
            }
            Ok(r) => panic!("erased {session:?} of {who:?}: {r:?}"),
        }
    }
    assert_eq!(
        history_len(store.as_ref(), s, &every),
        before,
        "nothing written"
    );

    let r = store
        .erase_log(&EraseLog::new(s, EraseTarget::Session("s1")).unwrap(), &ctx)
        .expect("session erase");
    // Raw turns 0, 1, 2, 4 and the fact of turn 5; turn 3 and the fact of turn 6 were erased.
    assert_eq!(r.memories_erased, 5, "{r:?}");
    assert_eq!(r.messages_erased, 6, "{r:?}");
    let log = store.messages(s, Some("s1"), 100).expect("s1");
    assert_eq!(log.len(), SAID.len(), "ids and order kept");
    assert!(log.iter().all(|m| m.content.is_empty() && m.name.is_none()));
    let all = ReadOptions {
        include_inactive: true,
        include_expired: true,
        ..ReadOptions::default()
    };
    for id in c.raws.iter().chain(&c.facts) {
        let m = store.get(s, *id, &all).expect("the tombstone");
        assert_eq!((m.text.as_str(), m.state), ("", MemoryState::Deleted));
        let h = store
            .history(&HistoryQuery::new(s, *id, all))
            .expect("history");
        assert_eq!(
            h.iter().filter(|e| e.event == HistoryKind::Erase).count(),
            1,
            "one ERASE event each"
        );
    }
    let q = candidates(s, all);
    for word in ["4417", "5521", "porto", "harbour", "dog"] {
        assert!(
            store
                .lexical_candidates(&q, &[word.to_string()])
                .expect("lexical")
                .is_empty(),
            "{word} is still indexed"
        );
    }
    assert_eq!(
        store.get(s, s2_raw, &all).expect("s2").text,
        "my locker is by the gym",
        "another session is untouched"
    );
    let omar = scope("omar");
    let kept = store.messages(&omar, Some("s1"), 10).expect("omar");
    assert_eq!(kept[0].content, SAID[2], "another scope is untouched");

    // A second erase of the same session finds nothing left to erase.
    let again = store
        .erase_log(&EraseLog::new(s, EraseTarget::Session("s1")).unwrap(), &ctx)
        .expect("again");
    assert_eq!(again, EraseLogReport::default());

    let r = store
        .erase_log(&EraseLog::new(s, EraseTarget::Scope).unwrap(), &ctx)
        .expect("scope");
    assert_eq!((r.memories_erased, r.messages_erased), (1, 1), "{r:?}");
    assert!(store
        .messages(s, None, 100)
        .expect("log")
        .iter()
        .all(|m| m.content.is_empty()));
    assert_eq!(
        store.get(s, s2_raw, &all).expect("tombstone").text,
        "",
        "the scope's last text is gone"
    );
    assert_eq!(
        store.messages(&omar, None, 10).expect("omar")[0].content,
        SAID[2]
    );
    assert!(store.integrity().expect("integrity").is_consistent());
}
