//! The store contract for moving a store: an export imported into an empty store exports again
//! byte for byte — memories with their index texts, usage counters and metadata types, messages,
//! history (updates, supersessions, deletions), links, entity links, segments, pages and
//! idempotency results. Re-exported by `contract`.

use crate::contract_tier_fixtures::{new_segment, page_batch, tier_batch};
use crate::*;
use mnemo_core::tier::{Eviction, PageMove, SegmentWrite};
use mnemo_core::*;
use serde_json::json;

/// Every record of `store`'s export, one JSON line each.
pub fn export_lines(store: &dyn Store) -> Vec<String> {
    let mut lines = Vec::new();
    store
        .export(&mut |r| {
            lines.push(serde_json::to_string(&r).expect("records serialise"));
            Ok(())
        })
        .expect("export");
    lines
}

/// Parses export lines and gives each record the vector an importer would compute with the
/// scripted embedder (index text, enriched note text or text; a page's text).
pub fn with_vectors(lines: &[String]) -> Vec<(ExportRecord, Option<Vec<f32>>)> {
    let records: Vec<ExportRecord> = lines
        .iter()
        .map(|l| serde_json::from_str(l).expect("records parse"))
        .collect();
    let index: std::collections::HashMap<MemoryId, String> = records
        .iter()
        .filter_map(|r| match r {
            ExportRecord::IndexText {
                memory_id,
                index_text,
            } => Some((*memory_id, index_text.clone())),
            _ => None,
        })
        .collect();
    records
        .into_iter()
        .map(|r| {
            let v = match &r {
                ExportRecord::Memory(m) if m.state != MemoryState::Deleted => {
                    let text = match (&m.note, index.get(&m.id)) {
                        (Some(n), _) => note::enriched_text(&m.text, n),
                        (None, Some(t)) => text::collapse_repeated_lines(t),
                        (None, None) => m.text.clone(),
                    };
                    Some(HashEmbedder::vector(&text))
                }
                ExportRecord::Page(p) => Some(HashEmbedder::vector(&p.text)),
                _ => None,
            };
            (r, v)
        })
        .collect()
}

pub fn export_is_lossless_through_import(h: &dyn Harness) {
    let src = h.fresh();
    let s = Scope::from_parts(Some("lossless"), Some("bot"), None).expect("scope");
    let other = scope("lossless-other");
    let (turn, old) = fill_every_kind(src.as_ref(), &s, &other);

    let lines = export_lines(src.as_ref());
    for kind in [
        "\"memory\"",
        "\"message\"",
        "\"link\"",
        "\"index_text\"",
        "\"history\"",
        "\"entity\"",
        "\"segment\"",
        "\"page\"",
        "\"idempotency\"",
    ] {
        assert!(
            lines
                .iter()
                .any(|l| l.contains(&format!("\"type\":{kind}"))),
            "the export has {kind} records"
        );
    }
    let dst = h.fresh();
    let written = dst.import(with_vectors(&lines)).expect("import");
    assert!(written > 0);
    assert_eq!(
        export_lines(dst.as_ref()),
        lines,
        "export → import → export is identical"
    );
    assert_eq!(
        dst.import(with_vectors(&lines)).expect("second import"),
        0,
        "importing twice writes nothing"
    );
    assert_eq!(export_lines(dst.as_ref()), lines);
    assert!(dst.integrity().expect("integrity").is_consistent());
    imported_store_answers(dst.as_ref(), &s, turn, old);
}

/// Writes a record of every kind an export has into `src`: a turn with a context window, an
/// entity and an idempotency result, a supersession with its reason, a link, a soft-deleted
/// memory, a read counter, a note (in `other`) and a hierarchy. Returns the turn's id and the
/// superseded memory's.
fn fill_every_kind(src: &dyn Store, s: &Scope, other: &Scope) -> (MemoryId, MemoryId) {
    // A conversation turn with a context window and an entity, in a session's window.
    let (mut b, first_page) = page_batch(s, Some("s1"), "Ines moved to Porto in May");
    b.memories[0].index_text =
        Some("Ines moved to Porto in May\nInes moved to Porto in May\nshe loves the river".into());
    b.memories[0].entities = vec![EntityMention::new("Porto", "place")];
    b.memories[0].metadata = json!({"zip": "0012", "n": 12, "flag": true})
        .as_object()
        .cloned()
        .expect("object");
    b.idempotency = Some(Idempotency {
        key: "turn-1".into(),
        request_hash: "h1".into(),
    });
    let turn = src.write(vec![b]).expect("write")[0].results[0].id;
    // A second fact that supersedes a third: UPDATE history with a reason and a link.
    let old = put(src, s, "Ines lives in Lisbon", json!({}));
    let mut upd = batch(s, "Ines lives in Porto", json!({}));
    upd.changes = vec![Supersession {
        old,
        by: Some(upd.memories[0].id),
        state: MemoryState::Superseded,
        valid_until: chrono::Utc::now(),
        reason: Some("she moved".into()),
    }];
    let new = src.write(vec![upd]).expect("update")[0].results[0].id;
    // A caller's link, a soft-deleted memory, a read counter, a note.
    src.add_links(
        s,
        &[Link {
            from: turn,
            to: new,
            kind: LinkKind::Related,
            strength: 0.7,
            author: Author::Caller,
            created_at: chrono::Utc::now(),
            reason: Some("same move".into()),
        }],
    )
    .expect("link");
    let gone = put(src, s, "a passing remark", json!({}));
    src.delete(s, gone, DeleteMode::Soft, &WritePlan::default())
        .expect("delete");
    src.touch(s, &[turn, turn], chrono::Utc::now())
        .expect("touch");
    crate::contract_notes::put_note(
        src,
        other,
        "Pack the tent",
        NoteFields {
            keywords: vec!["tent".into()],
            tags: vec!["trip".into()],
            context: "camping plans".into(),
        },
    );
    fill_hierarchy(src, s, first_page);
    (turn, old)
}

/// The hierarchy: `first_page` and another moved into two segments, one of them evicted, and a
/// visit to the other.
fn fill_hierarchy(src: &dyn Store, s: &Scope, first_page: PageId) {
    // The hierarchy: one page moved into a segment, another segment evicted, a visit.
    let second_page = {
        let (b, id) = page_batch(s, Some("s1"), "the river walk was lovely");
        src.write(vec![b]).expect("page");
        id
    };
    let kept = new_segment(s, "moving to Porto");
    let cold = new_segment(s, "an old topic");
    src.write(vec![tier_batch(
        s,
        TierWrite {
            segments: vec![
                SegmentWrite {
                    segment: kept.clone(),
                    expected_version: None,
                },
                SegmentWrite {
                    segment: cold.clone(),
                    expected_version: None,
                },
            ],
            moves: vec![
                PageMove {
                    page: first_page,
                    segment: kept.id,
                    continues: None,
                },
                PageMove {
                    page: second_page,
                    segment: cold.id,
                    continues: Some(first_page),
                },
            ],
            ..TierWrite::default()
        },
    )])
    .expect("move");
    src.write(vec![tier_batch(
        s,
        TierWrite {
            evictions: vec![Eviction {
                segment: cold.id,
                expected_version: 1,
                reason: "coldest".into(),
            }],
            ..TierWrite::default()
        },
    )])
    .expect("evict");
    src.record_visits(&Visits::new(s.clone(), vec![(kept.id, 3)], chrono::Utc::now()).unwrap())
        .expect("visits");
}

/// What a store imported from `export_is_lossless_through_import`'s records answers: the
/// stored idempotency result, the supersession's reason, the entity, the index text, the
/// segment's visits and vector.
fn imported_store_answers(dst: &dyn Store, s: &Scope, turn: MemoryId, old: MemoryId) {
    let replay = dst
        .replay(
            s,
            &Idempotency {
                key: "turn-1".into(),
                request_hash: "h1".into(),
            },
        )
        .expect("replay")
        .expect("the stored result replays");
    assert_eq!(replay.results[0].id, turn);
    let hist = dst
        .history(&HistoryQuery::new(s, old, ReadOptions::default()))
        .expect("history");
    assert!(hist
        .iter()
        .any(|e| e.reason.as_deref() == Some("she moved")));
    let ents = dst.entities_of(s, turn).expect("entities");
    assert_eq!(ents.len(), 1);
    // The read counter of the turn (touched twice) comes across with its last read.
    let read = dst.get(s, turn, &ReadOptions::default()).expect("get");
    assert_eq!(read.access_count, 2);
    assert!(read.last_accessed_at.is_some());
    let q = CandidateQuery {
        scope: s,
        kinds: None,
        filter: None,
        read: ReadOptions::default(),
        limit: 5,
    };
    let lexical = dst
        .lexical_candidates(&q, &["river".to_string()])
        .expect("lexical");
    assert!(!lexical.is_empty(), "the imported index text is searchable");
    let segs = dst.segments(s, true, false).expect("segments");
    assert_eq!(segs.len(), 1);
    assert_eq!(segs[0].visits, 3);
    assert_eq!(segs[0].vector, {
        let v = HashEmbedder::vector("user: Ines moved to Porto in May");
        let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        v.iter().map(|x| x / n).collect::<Vec<f32>>()
    });
}

/// An import checks what an add would: a memory's sources must be messages of its own scope
/// (of the import or of the store) — else a later erase with its sources would empty another
/// scope's message — and texts must be ones an add takes. A refused import writes nothing.
pub fn import_refuses_foreign_sources_and_texts_no_add_takes(h: &dyn Harness) {
    let store = h.fresh();
    let ana = scope("import-ana");
    store
        .write(vec![batch(&ana, "Ana's private note", json!({}))])
        .expect("write");
    let lines = export_lines(store.as_ref());
    let records: Vec<ExportRecord> = lines
        .iter()
        .map(|l| serde_json::from_str(l).expect("parse"))
        .collect();
    let message = records
        .iter()
        .find_map(|r| match r {
            ExportRecord::Message(m) => Some((**m).clone()),
            _ => None,
        })
        .expect("the export has ana's message");
    let template = records
        .iter()
        .find_map(|r| match r {
            ExportRecord::Memory(m) => Some((**m).clone()),
            _ => None,
        })
        .expect("the export has ana's memory");
    let eve_memory = |text: &str, sources: Vec<MessageId>| {
        let mut m = template.clone();
        m.id = MemoryId::new();
        m.user_id = Some("import-eve".into());
        m.text = text.into();
        m.sources = sources;
        ExportRecord::Memory(Box::new(m))
    };
    let with_vector = |r: ExportRecord| {
        let v = match &r {
            ExportRecord::Memory(m) => Some(HashEmbedder::vector(&m.text)),
            _ => None,
        };
        (r, v)
    };
    let refused = |records: Vec<ExportRecord>, needle: &str| {
        let e = store
            .import(records.into_iter().map(with_vector).collect())
            .expect_err("the import is refused");
        assert_eq!(e.kind(), ErrorKind::InvalidInput, "{e}");
        assert!(e.to_string().contains(needle), "{needle}: {e}");
        assert_eq!(export_lines(store.as_ref()), lines, "nothing was written");
    };
    // A source naming a message the store holds in ana's scope.
    refused(
        vec![eve_memory("Eve's note", vec![message.id])],
        "sources[0]",
    );
    // A source naming a message of another scope carried by the same import.
    let mut carried = message.clone();
    carried.id = MessageId::new();
    refused(
        vec![
            eve_memory("Eve's note", vec![carried.id]),
            ExportRecord::Message(Box::new(carried.clone())),
        ],
        "sources[0]",
    );
    // Texts no add takes.
    let long = "x".repeat(limits::MAX_TEXT_CHARS + 1);
    refused(vec![eve_memory(&long, Vec::new())], "text");
    refused(vec![eve_memory("   ", Vec::new())], "text");
    let mut blank = carried.clone();
    blank.content = "  \n ".into();
    refused(vec![ExportRecord::Message(Box::new(blank))], "content");
    let mut huge = carried.clone();
    huge.content = long.clone();
    refused(vec![ExportRecord::Message(Box::new(huge))], "content");
    // What an erase leaves (an empty message) and a source of the memory's own scope import.
    let mut own = carried;
    own.user_id = Some("import-eve".into());
    let mut erased = own.clone();
    erased.id = MessageId::new();
    erased.content = String::new();
    let written = store
        .import(
            vec![
                ExportRecord::Message(Box::new(own.clone())),
                ExportRecord::Message(Box::new(erased)),
                eve_memory("Eve's own note", vec![own.id]),
            ]
            .into_iter()
            .map(with_vector)
            .collect(),
        )
        .expect("an import of one scope is taken");
    assert_eq!(written, 3);
}
