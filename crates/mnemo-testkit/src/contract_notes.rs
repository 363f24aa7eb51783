//! The store contract for notes: links (create, list both ways, remove, scope isolation,
//! restart, export/import, bad input), note evolution and the index after it, link expansion
//! under the visibility rule, erased ends. Re-exported by `contract`.

use crate::*;
use mnemo_core::*;
use serde_json::json;

fn read() -> ReadOptions {
    ReadOptions::default()
}

fn fields(keywords: &[&str], tags: &[&str], context: &str) -> NoteFields {
    NoteFields {
        keywords: keywords.iter().map(|s| s.to_string()).collect(),
        tags: tags.iter().map(|s| s.to_string()).collect(),
        context: context.to_string(),
    }
}

/// A one-note batch: the text, its fields, enriched index text and vector.
pub fn note_batch(scope: &Scope, text: &str, note: NoteFields) -> WriteBatch {
    let mut b = batch(scope, text, json!({}));
    let enriched = mnemo_core::note::enriched_text(text, &note);
    let m = &mut b.memories[0];
    m.kind = MemoryKind::Note;
    m.vector = HashEmbedder::vector(&enriched);
    m.index_text = Some(enriched);
    m.note = Some(note);
    b
}

/// Writes one note and returns its id.
pub fn put_note(store: &dyn Store, scope: &Scope, text: &str, note: NoteFields) -> MemoryId {
    store
        .write(vec![note_batch(scope, text, note)])
        .expect("write succeeds")[0]
        .results[0]
        .id
}

fn link(from: MemoryId, to: MemoryId, strength: f32) -> Link {
    Link {
        from,
        to,
        kind: LinkKind::Related,
        strength,
        author: Author::Caller,
        created_at: chrono::Utc::now(),
        reason: Some("same trip".into()),
    }
}

fn linked_ids(
    store: &dyn Store,
    scope: &Scope,
    ids: &[MemoryId],
    read: ReadOptions,
) -> Vec<MemoryId> {
    let q = CandidateQuery {
        read,
        ..candidates(scope, read)
    };
    store
        .linked(&LinkedQuery {
            query: q,
            ids,
            kinds: &[LinkKind::Related],
        })
        .expect("linked succeeds")
        .into_iter()
        .map(|l| l.memory.id)
        .collect()
}

pub fn links_are_created_listed_both_ways_and_removed(h: &dyn Harness) {
    let store = h.fresh();
    let s = scope("lena");
    let a = put_note(
        store.as_ref(),
        &s,
        "Lena booked a flight to Kyoto",
        fields(&["Kyoto"], &[], ""),
    );
    let b = put_note(
        store.as_ref(),
        &s,
        "Lena wants to see temples",
        fields(&["temples"], &[], ""),
    );
    store.add_links(&s, &[link(a, b, 0.7)]).unwrap();
    for end in [a, b] {
        let ls = store.links(&s, end).unwrap();
        assert_eq!(ls.len(), 1, "listed from {end}");
        let l = &ls[0];
        assert_eq!(
            (l.from, l.to, l.kind, l.author),
            (a, b, LinkKind::Related, Author::Caller)
        );
        assert!((l.strength - 0.7).abs() < 1e-6);
        assert_eq!(l.reason.as_deref(), Some("same trip"));
    }
    // Adding the same link again replaces it rather than duplicating it.
    store.add_links(&s, &[link(a, b, 0.9)]).unwrap();
    assert_eq!(store.links(&s, a).unwrap().len(), 1);
    assert!((store.links(&s, b).unwrap()[0].strength - 0.9).abs() < 1e-6);
    assert_eq!(linked_ids(store.as_ref(), &s, &[a], read()), vec![b]);
    assert_eq!(
        linked_ids(store.as_ref(), &s, &[b], read()),
        vec![a],
        "reached from its target too"
    );

    let ab = LinkKey {
        from: a,
        to: b,
        kind: LinkKind::Related,
    };
    assert!(store.remove_link(&s, &ab).unwrap());
    assert!(store.links(&s, a).unwrap().is_empty());
    assert!(store.links(&s, b).unwrap().is_empty());
    assert!(
        !store.remove_link(&s, &ab).unwrap(),
        "nothing left to remove"
    );
    assert!(store.integrity().unwrap().is_consistent());
}

pub fn links_are_isolated_by_scope(h: &dyn Harness) {
    let store = h.fresh();
    let (s, other) = (scope("lena"), scope("mallory"));
    let a = put_note(
        store.as_ref(),
        &s,
        "Lena's passport number is in the drawer",
        fields(&[], &[], ""),
    );
    let b = put_note(
        store.as_ref(),
        &s,
        "Lena renews her passport in May",
        fields(&[], &[], ""),
    );
    let m = put_note(
        store.as_ref(),
        &other,
        "Mallory's note",
        fields(&[], &[], ""),
    );
    store.add_links(&s, &[link(a, b, 0.8)]).unwrap();

    assert_eq!(
        store.links(&other, a).unwrap_err().kind(),
        ErrorKind::NotFound
    );
    assert!(
        linked_ids(store.as_ref(), &other, &[a], read()).is_empty(),
        "linked leaked"
    );
    assert_eq!(
        store
            .remove_link(
                &other,
                &LinkKey {
                    from: a,
                    to: b,
                    kind: LinkKind::Related
                }
            )
            .unwrap_err()
            .kind(),
        ErrorKind::NotFound
    );
    // Another scope can neither link nor be linked to.
    let e = store.add_links(&other, &[link(a, m, 0.5)]).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidInput);
    assert!(e.to_string().contains("from"), "{e}");
    let e = store.add_links(&s, &[link(a, m, 0.5)]).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidInput);
    assert!(e.to_string().contains("to"), "{e}");
    // A scope covering both owners still may not join them: a link stays inside one scope.
    let u = Scope::from_parts(Some("lena"), Some("bot"), None).unwrap();
    let c = put_note(
        store.as_ref(),
        &u,
        "Lena asked the bot about visas",
        fields(&[], &[], ""),
    );
    let e = store.add_links(&s, &[link(a, c, 0.5)]).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidInput);
    assert!(e.to_string().contains("scope"), "{e}");
    assert_eq!(
        store.links(&s, a).unwrap().len(),
        1,
        "still only the first link"
    );
    assert!(store.links(&other, m).unwrap().is_empty());
}

pub fn bad_links_are_invalid_input_and_write_nothing(h: &dyn Harness) {
    let store = h.fresh();
    let s = scope("lena");
    let a = put_note(store.as_ref(), &s, "first", fields(&[], &[], ""));
    let b = put_note(store.as_ref(), &s, "second", fields(&[], &[], ""));
    let cases: Vec<(Link, &str)> = vec![
        (link(a, MemoryId::new(), 0.5), "to"),
        (link(MemoryId::new(), a, 0.5), "from"),
        (link(a, a, 0.5), "to"),
        (link(a, b, -0.1), "strength"),
        (link(a, b, 1.5), "strength"),
        (link(a, b, f32::NAN), "strength"),
    ];
    for (bad, field) in cases {
        // The bad link comes second: the good one before it must not be written either.
        let e = store.add_links(&s, &[link(b, a, 0.4), bad]).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidInput, "{field}: {e}");
        assert!(e.to_string().contains(field), "{field}: {e}");
        assert!(
            store.links(&s, a).unwrap().is_empty(),
            "{field}: nothing written"
        );
    }
    // The same checks hold for links carried by an add.
    let mut add = note_batch(&s, "third", fields(&[], &[], ""));
    let new = add.memories[0].id;
    add.links = vec![link(new, a, 0.6), link(new, MemoryId::new(), 0.6)];
    let e = store.write(vec![add]).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidInput, "{e}");
    assert_not_found_memory(store.as_ref(), &s, new);
    assert!(store.links(&s, a).unwrap().is_empty());
}

fn assert_not_found_memory(store: &dyn Store, s: &Scope, id: MemoryId) {
    assert_eq!(
        store.get(s, id, &read()).unwrap_err().kind(),
        ErrorKind::NotFound,
        "the batch's memory was not written"
    );
}

pub fn links_survive_reopen_and_round_trip_through_export(h: &dyn Harness) {
    let store = h.fresh();
    let s = scope("lena");
    let a = put_note(
        store.as_ref(),
        &s,
        "Lena plays the cello",
        fields(&["cello"], &["music"], "said by Lena"),
    );
    let mut add = note_batch(
        &s,
        "Lena has a concert on Friday",
        fields(&["concert"], &[], ""),
    );
    let b = add.memories[0].id;
    add.links = vec![Link {
        author: Author::Rule,
        reason: Some("shares a rare name".into()),
        ..link(b, a, 0.66)
    }];
    store.write(vec![add]).unwrap();
    let before = store.links(&s, a).unwrap();
    assert_eq!(before.len(), 1);
    let store = h.reopen(store);
    assert_eq!(
        store.links(&s, a).unwrap(),
        before,
        "links survive a restart"
    );
    let note = store.get(&s, a, &read()).unwrap().note;
    assert_eq!(note, Some(fields(&["cello"], &["music"], "said by Lena")));

    let mut records = Vec::new();
    store
        .export(&mut |r| {
            records.push(r);
            Ok(())
        })
        .unwrap();
    assert!(records.iter().any(|r| matches!(r, ExportRecord::Link(_))));
    let parsed: Vec<(ExportRecord, Option<Vec<f32>>)> = records
        .iter()
        .map(|r| {
            let r: ExportRecord = serde_json::from_str(&serde_json::to_string(r).unwrap()).unwrap();
            let v = match &r {
                ExportRecord::Memory(m) => Some(HashEmbedder::vector(&match &m.note {
                    Some(n) => mnemo_core::note::enriched_text(&m.text, n),
                    None => m.text.clone(),
                })),
                _ => None,
            };
            (r, v)
        })
        .collect();
    let dst = h.fresh();
    assert_eq!(
        dst.import(parsed.clone()).unwrap(),
        9,
        "two messages, two notes, one link, and each note's index text and ADD event"
    );
    assert_eq!(
        dst.import(parsed).unwrap(),
        0,
        "importing twice writes nothing"
    );
    assert_eq!(dst.links(&s, b).unwrap(), before);
    assert_eq!(
        dst.get(&s, a, &read()).unwrap(),
        store.get(&s, a, &read()).unwrap()
    );
    // The imported note is indexed by its enriched text, as the original was.
    let hits = search(dst.as_ref(), &s, "music", read());
    assert_eq!(hits.first().map(|h| h.memory.id), Some(a));
    assert!(dst.integrity().unwrap().is_consistent());

    // A link whose end is missing is refused, and the import writes nothing.
    let orphan = ExportRecord::Link(Box::new(link(a, MemoryId::new(), 0.5)));
    let e = h.fresh().import(vec![(orphan, None)]).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidInput, "{e}");
}

pub fn evolution_rewrites_fields_index_and_history_together(h: &dyn Harness) {
    let store = h.fresh();
    let s = scope("lena");
    let old = fields(&["seeds"], &["gardening"], "said by Lena");
    let a = put_note(
        store.as_ref(),
        &s,
        "Lena planted seeds on the balcony",
        old.clone(),
    );
    assert_eq!(
        search(store.as_ref(), &s, "gardening", read())[0].memory.id,
        a
    );

    let mut add = note_batch(
        &s,
        "The tomatoes on Lena's balcony are ripe",
        fields(&["tomatoes"], &[], ""),
    );
    let new = fields(
        &["seeds"],
        &["harvest"],
        "said by Lena; the seeds became tomatoes",
    );
    let enriched = mnemo_core::note::enriched_text("Lena planted seeds on the balcony", &new);
    add.evolutions = vec![Evolution {
        id: a,
        note: new.clone(),
        vector: HashEmbedder::vector(&enriched),
        index_text: enriched,
        reason: Some("the planting led to a harvest".into()),
    }];
    store.write(vec![add]).unwrap();

    let m = store.get(&s, a, &read()).unwrap();
    assert_eq!(
        m.text, "Lena planted seeds on the balcony",
        "the text never evolves"
    );
    assert_eq!(m.note, Some(new.clone()));
    let hist = store.history(&HistoryQuery::new(&s, a, read())).unwrap();
    let ev = hist
        .iter()
        .find(|e| e.event == HistoryKind::Evolve)
        .expect("an EVOLVE event");
    assert_eq!(ev.old_note, Some(old));
    assert_eq!(ev.new_note, Some(new));
    assert_eq!(ev.reason.as_deref(), Some("the planting led to a harvest"));
    // The index describes the note as the record does: found by the new tag, not the old.
    let lexical = |term: &str| -> Vec<MemoryId> {
        let q = candidates(&s, read());
        let keys: Vec<i64> = store
            .lexical_candidates(&q, &[term.to_string()])
            .unwrap()
            .iter()
            .map(|c| c.key)
            .collect();
        store
            .fetch(&q, &keys)
            .unwrap()
            .into_iter()
            .map(|(_, m)| m.id)
            .collect()
    };
    assert_eq!(lexical("harvest"), vec![a]);
    assert!(
        lexical("gardening").is_empty(),
        "the old tag is gone from the index"
    );
    let q = candidates(&s, read());
    let top = store
        .dense_candidates(
            &q,
            &HashEmbedder::vector(&mnemo_core::note::enriched_text(
                &m.text,
                m.note.as_ref().unwrap(),
            )),
        )
        .unwrap();
    let top_ids: Vec<MemoryId> = store
        .fetch(&q, &[top[0].key])
        .unwrap()
        .into_iter()
        .map(|(_, m)| m.id)
        .collect();
    assert_eq!(top_ids, vec![a], "the vector is the new enriched text's");
    assert!(store.integrity().unwrap().is_consistent());

    // Evolving a memory that is not an active note of the scope fails the whole batch.
    let fact = put(store.as_ref(), &s, "a plain fact", json!({}));
    let mut add = note_batch(&s, "another note", fields(&[], &[], ""));
    let id = add.memories[0].id;
    add.evolutions = vec![Evolution {
        id: fact,
        note: fields(&[], &["x"], ""),
        index_text: "a plain fact\ntags: x".into(),
        vector: HashEmbedder::vector("a plain fact\ntags: x"),
        reason: None,
    }];
    assert!(store.write(vec![add]).is_err());
    assert_not_found_memory(store.as_ref(), &s, id);
    assert!(store
        .history(&HistoryQuery::new(&s, fact, read()))
        .unwrap()
        .iter()
        .all(|e| e.event != HistoryKind::Evolve));
}

pub fn linked_memories_obey_scope_expiry_and_supersession(h: &dyn Harness) {
    let store = h.fresh();
    let s = Scope::from_parts(Some("lena"), Some("bot"), None).unwrap();
    let hub = put_note(
        store.as_ref(),
        &s,
        "Lena's trip to Oslo",
        fields(&[], &[], ""),
    );
    let live = put_note(
        store.as_ref(),
        &s,
        "Lena packed a warm coat",
        fields(&[], &[], ""),
    );
    let mut exp = note_batch(&s, "Lena's hotel code is 4411", fields(&[], &[], ""));
    exp.memories[0].expires_at = Some(chrono::Utc::now() + chrono::Duration::milliseconds(300));
    let expiring = store.write(vec![exp]).unwrap()[0].results[0].id;
    let old = put_note(
        store.as_ref(),
        &s,
        "Lena flies on Monday",
        fields(&[], &[], ""),
    );
    store
        .add_links(
            &s,
            &[
                link(hub, live, 0.9),
                link(hub, expiring, 0.8),
                link(hub, old, 0.7),
            ],
        )
        .unwrap();
    // Supersede `old` through a batch that replaces it.
    let mut upd = note_batch(&s, "Lena flies on Tuesday", fields(&[], &[], ""));
    upd.changes = vec![Supersession {
        old,
        by: Some(upd.memories[0].id),
        state: MemoryState::Superseded,
        valid_until: chrono::Utc::now(),
        reason: Some("moved".into()),
    }];
    store.write(vec![upd]).unwrap();
    let later = ReadOptions {
        now: chrono::Utc::now() + chrono::Duration::seconds(5),
        ..read()
    };
    assert_eq!(
        linked_ids(store.as_ref(), &s, &[hub], later),
        vec![live],
        "expired and superseded are hidden"
    );
    let with_expired = ReadOptions {
        include_expired: true,
        ..later
    };
    assert_eq!(
        linked_ids(store.as_ref(), &s, &[hub], with_expired),
        vec![live, expiring]
    );
    let with_inactive = ReadOptions {
        include_inactive: true,
        ..later
    };
    assert_eq!(
        linked_ids(store.as_ref(), &s, &[hub], with_inactive),
        vec![live, old]
    );
    // Scope: a query scope that does not cover the owner sees none of them.
    let narrower = Scope::from_parts(Some("lena"), Some("other-bot"), None).unwrap();
    assert!(linked_ids(store.as_ref(), &narrower, &[hub], with_inactive).is_empty());
    let wider = scope("lena");
    assert_eq!(
        linked_ids(store.as_ref(), &wider, &[hub], later),
        vec![live],
        "a covering scope sees them"
    );
}

/// A link to or from an erased tombstone is refused naming the end (it would store new text,
/// the link's reason, on a memory whose texts are gone); nothing is written. An erased memory
/// outside the scope is answered as a missing one.
pub fn erased_memories_take_no_new_links(h: &dyn Harness) {
    let store = h.fresh();
    let (s, other) = (scope("lena"), scope("mallory"));
    let a = put_note(
        store.as_ref(),
        &s,
        "Lena keeps a spare key",
        fields(&[], &[], ""),
    );
    let b = put_note(
        store.as_ref(),
        &s,
        "Lena's door code is 4417",
        fields(&[], &[], ""),
    );
    let m = put_note(
        store.as_ref(),
        &other,
        "Mallory's note",
        fields(&[], &[], ""),
    );
    store
        .erase(&EraseMemory::new(&s, b, false), &WritePlan::default())
        .unwrap();
    store
        .erase(&EraseMemory::new(&other, m, false), &WritePlan::default())
        .unwrap();
    let mut reasoned = link(a, b, 0.6);
    reasoned.reason = Some("the door code again".into());
    let e = store.add_links(&s, &[reasoned]).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidInput);
    assert!(
        e.to_string().contains("to") && e.to_string().contains("erased"),
        "{e}"
    );
    let e = store.add_links(&s, &[link(b, a, 0.6)]).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidInput);
    assert!(
        e.to_string().contains("from") && e.to_string().contains("erased"),
        "{e}"
    );
    // Another scope's tombstone looks like any memory the scope cannot see.
    let e = store.add_links(&s, &[link(a, m, 0.6)]).unwrap_err();
    assert!(!e.to_string().contains("erased"), "{e}");
    assert!(
        store.links(&s, a).unwrap().is_empty(),
        "a refused link was written"
    );
}
