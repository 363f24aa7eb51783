//! Query-aware link expansion and the speaker-and-subject link rule, over the real SQLite
//! store with the scripted embedder.

use mnemo::core::*;
use mnemo::{AddInput, AddRequest, Memory, NoteConfig, NoteInput};
use mnemo_testkit::engines;
use mnemo_testkit::HashEmbedder;
use std::sync::Arc;

fn scope() -> Scope {
    Scope::user("lena").unwrap()
}

fn engine(cfg: NoteConfig) -> (Memory, engines::TestStore) {
    let dir = engines::fresh_store();
    let store = dir.store();
    let m = Memory::from_parts(store, Arc::new(HashEmbedder), RankParams::default())
        .unwrap()
        .with_note_config(cfg);
    (m, dir)
}

/// Only the links a test makes: the rules would link by similarity or names.
fn no_rule_links() -> NoteConfig {
    NoteConfig {
        link_similarity: 1.0,
        link_entity: 1.0,
        speaker_link_df: 0,
        ..NoteConfig::default()
    }
}

async fn add_note(m: &Memory, text: &str, speaker: Option<&str>) -> MemoryId {
    let mut req = AddRequest::note(scope(), text, NoteInput::default());
    if let Some(name) = speaker {
        req.input = AddInput::Messages(vec![InputMessage {
            role: Role::User,
            content: text.into(),
            name: Some(name.into()),
        }]);
    }
    let out = m.add(req).await.unwrap();
    assert_eq!(out.results.len(), 1, "{out:?}");
    out.results[0].id
}

/// A caller's `related` link at full strength.
fn caller_link(from: MemoryId, to: MemoryId) -> Link {
    Link {
        from,
        to,
        kind: LinkKind::Related,
        strength: 1.0,
        author: Author::Caller,
        created_at: chrono::Utc::now(),
        reason: None,
    }
}

async fn search(m: &Memory, q: &str, top_k: usize, expand: usize) -> Vec<Hit> {
    let mut req = SearchRequest::new(scope(), q, top_k);
    req.expand_links = expand;
    m.search(req).await.unwrap().results
}

#[tokio::test]
async fn linked_notes_are_scored_by_their_own_relevance_lifted_by_the_link() {
    let (m, _dir) = engine(no_rule_links());
    let hit = add_note(&m, "bought the ferry tickets for Gdansk", None).await;
    let relevant = add_note(&m, "the ferry to Gdansk leaves from the north pier", None).await;
    let unrelated = add_note(&m, "grandmother knits a blue scarf every winter", None).await;
    for filler in ["bread and coffee for breakfast", "a long meeting at work"] {
        add_note(&m, filler, None).await;
    }
    m.add_links(
        scope(),
        vec![caller_link(hit, relevant), caller_link(hit, unrelated)],
    )
    .await
    .unwrap();

    let direct = search(&m, "ferry tickets", 10, 0).await;
    assert_eq!(direct[0].memory.id, hit);
    let own = |id| direct.iter().find(|h| h.memory.id == id).unwrap().score;

    let expanded = search(&m, "ferry tickets", 1, 2).await;
    assert_eq!(expanded.len(), 3, "the hit, then both linked notes");
    assert_eq!(expanded[0].memory.id, hit);
    assert!(expanded[0].via.is_none());
    let linked = |id| expanded.iter().find(|h| h.memory.id == id).unwrap();
    for id in [relevant, unrelated] {
        let via = (linked(id).via.as_ref().and_then(mnemo_core::Via::link))
            .expect("a linked result is marked");
        assert_eq!(
            (via.memory_id, via.kind, via.strength),
            (hit, LinkKind::Related, 1.0)
        );
        // own × (1 + link_weight × parent score × strength)
        let want = linked_score(
            own(id),
            expanded[0].score,
            RankParams::default().link_weight,
        );
        assert!(
            (linked(id).score - want).abs() < 1e-5,
            "{want} {expanded:?}"
        );
    }
    // The same link lifts the relevant note above the unrelated one; neither outranks the hit.
    assert!(linked(relevant).score > linked(unrelated).score);
    assert!(linked(unrelated).score < expanded[0].score);
    // Merged by score and cut at two, the relevant linked note is what joins the hit.
    let mut merged = expanded.clone();
    merged.sort_by(|a, b| b.score.total_cmp(&a.score));
    assert_eq!(merged[1].memory.id, relevant);
}

#[test]
fn the_linked_score_needs_relevance_of_its_own() {
    assert_eq!(linked_score(0.0, 5.0, 0.3), 0.0, "no relevance, no lift");
    assert_eq!(linked_score(0.4, 0.0, 0.3), 0.4, "no activation, own score");
    assert!((linked_score(0.4, 1.0, 0.5) - 0.6).abs() < 1e-6);
    assert!(linked_score(0.4, 0.8, 0.3) > linked_score(0.4, 0.4, 0.3));
}

#[tokio::test]
async fn rules_link_one_speakers_notes_that_share_a_rare_word_and_nobody_elses() {
    let (m, _dir) = engine(NoteConfig {
        link_similarity: 1.0,
        link_entity: 1.0,
        ..NoteConfig::default()
    });
    let first = add_note(&m, "signed up for a pottery class yesterday", Some("Ana")).await;
    let other = add_note(&m, "pottery sounds like a calm hobby", Some("Ben")).await;
    for filler in [
        "the weather was grey all week",
        "a long meeting at work again",
    ] {
        add_note(&m, filler, Some("Ana")).await;
    }
    let later = add_note(
        &m,
        "my first pottery bowl came out of the kiln",
        Some("Ana"),
    )
    .await;
    let links = m.links(scope(), later).await.unwrap();
    let to_first = links
        .iter()
        .find(|l| l.to == first)
        .expect("linked to the same speaker's earlier note");
    assert_eq!(
        (to_first.from, to_first.kind, to_first.author),
        (later, LinkKind::Related, Author::Rule)
    );
    let reason = to_first.reason.as_deref().unwrap();
    assert!(
        reason.contains("same speaker") && reason.contains("potter"),
        "{reason}"
    );
    assert!(to_first.strength > 0.0 && to_first.strength <= 1.0);
    assert!(
        links.iter().all(|l| l.to != other),
        "another speaker's note is not linked by this rule: {links:?}"
    );
    // The filler notes share no rare word with it.
    assert_eq!(links.len(), 1, "{links:?}");

    // Off: no links.
    let (m, _dir) = engine(no_rule_links());
    add_note(&m, "signed up for a pottery class yesterday", Some("Ana")).await;
    let later = add_note(
        &m,
        "my first pottery bowl came out of the kiln",
        Some("Ana"),
    )
    .await;
    assert!(m.links(scope(), later).await.unwrap().is_empty());
}

fn spoken(scope: &Scope, text: &str, speaker: &str) -> AddRequest {
    let mut req = AddRequest::note(scope.clone(), text, NoteInput::default());
    req.input = AddInput::Messages(vec![InputMessage {
        role: Role::User,
        content: text.into(),
        name: Some(speaker.into()),
    }]);
    req
}

#[tokio::test]
async fn a_batch_of_note_adds_links_each_note_within_its_own_scope() {
    // The speaker rule loads the candidates of a whole batch at once (per scope): each note
    // must still link to its own scope's notes, as when added alone.
    let (m, _dir) = engine(NoteConfig {
        link_similarity: 1.0,
        link_entity: 1.0,
        ..NoteConfig::default()
    });
    let (lena, mika) = (scope(), Scope::user("mika").unwrap());
    let mut seeded = Vec::new();
    for s in [&lena, &mika] {
        let out = m
            .add_many(vec![
                spoken(s, "signed up for a pottery class yesterday", "Ana"),
                spoken(s, "the weather was grey all week", "Ana"),
                spoken(s, "pottery sounds like a calm hobby", "Ben"),
            ])
            .await
            .unwrap();
        seeded.push(out[0].results[0].id);
    }
    let text = "my first pottery bowl came out of the kiln";
    let out = m
        .add_many(vec![
            spoken(&lena, text, "Ana"),
            spoken(&mika, text, "Ana"),
            spoken(&mika, "the kiln at the studio broke", "Ben"),
        ])
        .await
        .unwrap();
    for (s, (outcome, first)) in [&lena, &mika].into_iter().zip(out.iter().zip(&seeded)) {
        let id = outcome.results[0].id;
        let links = m.links(s.clone(), id).await.unwrap();
        let to: Vec<MemoryId> = links.iter().map(|l| l.to).collect();
        assert_eq!(to, vec![*first], "{s:?}: {links:?}");
        assert!(links[0].reason.as_deref().unwrap().contains("same speaker"));
    }
}

#[tokio::test]
async fn a_query_naming_a_speaker_follows_only_that_speakers_links() {
    let (m, _dir) = engine(no_rule_links());
    let hit = add_note(&m, "Ana bought ferry tickets", Some("Ana")).await;
    let hers = add_note(&m, "boarding at the north pier starts early", Some("Ana")).await;
    let his = add_note(&m, "the boat was late again", Some("Ben")).await;
    let bens_hit = add_note(&m, "Ben bought ferry tickets", Some("Ben")).await;
    let bens_link = add_note(&m, "weekday fares are cheaper", Some("Ben")).await;
    let links = vec![
        caller_link(hit, hers),
        caller_link(hit, his),
        caller_link(bens_hit, bens_link),
    ];
    m.add_links(scope(), links).await.unwrap();
    // (direct hits, linked results), each sorted.
    let split = |hits: &[Hit]| -> (Vec<MemoryId>, Vec<MemoryId>) {
        let (mut direct, mut linked): (Vec<MemoryId>, Vec<MemoryId>) = (Vec::new(), Vec::new());
        for h in hits {
            match h.via {
                None => direct.push(h.memory.id),
                Some(_) => linked.push(h.memory.id),
            }
        }
        direct.sort();
        linked.sort();
        (direct, linked)
    };
    let sorted = |mut ids: Vec<MemoryId>| {
        ids.sort();
        ids
    };
    let hits = sorted(vec![hit, bens_hit]);

    // Names nobody: every link of the two hits is followed.
    let all = search(&m, "bought ferry tickets", 2, 5).await;
    let want = (hits.clone(), sorted(vec![hers, his, bens_link]));
    assert_eq!(split(&all), want, "{all:?}");

    // Names Ana: only links between Ana's notes carry; Ben's hit spreads nothing and Ben's
    // note linked from Ana's hit is not brought in.
    let ana = search(&m, "Ana bought ferry tickets", 2, 5).await;
    assert_eq!(split(&ana), (hits, vec![hers]), "{ana:?}");
    // The name is matched as a word, not as a part of one.
    let anagram = search(&m, "Anabel bought ferry tickets", 2, 5).await;
    assert_eq!(split(&anagram).1, want.1, "{anagram:?}");
}
