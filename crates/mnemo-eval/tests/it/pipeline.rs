//! The whole evaluation on a small hand-made conversation, with the scripted embedder and a
//! scripted chat model: ingestion, scoring through provenance, baselines, QA, report, charts.

use mnemo::WindowIndexing;
use mnemo_core::{ChatRequest, Error, RankParams};
use mnemo_eval::qa::QaModels;
use mnemo_eval::report::QaSection;
use mnemo_eval::{run_locomo, EvalMode, EvalOptions};
use mnemo_testkit::{HashEmbedder, ScriptedChat};
use std::path::Path;
use std::sync::Arc;

fn dataset(dir: &Path) -> std::path::PathBuf {
    let path = dir.join("tiny.json");
    std::fs::write(&path, mnemo_testkit::locomo_tiny().to_string()).unwrap();
    path
}

fn options(dir: &Path, qa: Option<QaModels>) -> EvalOptions {
    EvalOptions {
        data: dataset(dir),
        mode: EvalMode::Raw,
        top_k: 5,
        work_dir: dir.join("work"),
        embedder: Arc::new(HashEmbedder),
        rank: RankParams::default(),
        indexing: WindowIndexing::default(),
        qa,
        progress: false,
        max_questions: None,
        infer_model: None,
        max_conversations: None,
        baselines: true,
        notes: None,
        note_config: mnemo::NoteConfig::default(),
        pack_budgets: Vec::new(),
        pack_tuning: mnemo::ContextTuning::default(),
        store_url: None,
        compare_store: None,
        graph: false,
    }
}

fn answering_model() -> Arc<ScriptedChat> {
    Arc::new(ScriptedChat::new("scripted-answer", |req: &ChatRequest| {
        let prompt = &req.messages.last().unwrap().content;
        // Decide by the question, not the memories shown above it.
        let question = prompt.rsplit("Question:").next().unwrap_or("");
        Ok(if prompt.contains("Verdict:") {
            "CORRECT".to_string()
        } else if question.contains("greyhound") {
            "Biscuit".to_string()
        } else if question.contains("Which city") {
            "Lisbon, river view".to_string()
        } else {
            "No information available".to_string()
        })
    }))
}

#[tokio::test]
async fn scores_retrieval_baselines_and_qa() {
    let dir = tempfile::tempdir().unwrap();
    let model = answering_model();
    let qa = QaModels {
        answer: model.clone(),
        judge: model.clone(),
    };
    let report = run_locomo(&options(dir.path(), Some(qa))).await.unwrap();

    assert_eq!(report.counts.conversations, 1);
    assert_eq!(report.counts.sessions, 2);
    assert_eq!(report.counts.turns, 7);
    assert_eq!(report.counts.memories, 7, "raw mode: one memory per turn");
    assert_eq!(report.counts.questions, 3);
    assert_eq!(report.counts.questions_with_evidence, 2);
    assert_eq!(report.counts.questions_without_evidence, 1);
    assert_eq!(report.retrieval.len(), 9);
    // Seven turns and five results: the single-evidence question must be found by rank 5.
    assert_eq!(report.per_category["4"]["recall@5"], 1.0);
    assert_eq!(report.per_category["4"]["recall@20"], 1.0);
    assert_eq!(
        report.retrieval["recall@20"], 1.0,
        "every turn is returned at 20"
    );
    assert!(
        !report.per_category.contains_key("5"),
        "no evidence, no recall"
    );
    assert_eq!(report.context.mean_evidence_turns_per_memory, 1.0);
    assert!(report.context.mean_tokens_returned > 0.0);
    for name in ["bm25", "dense"] {
        assert_eq!(report.baselines[name].retrieval.len(), 9, "{name}");
    }

    let QaSection::Scored(qa) = &report.qa else {
        panic!("QA should have run")
    };
    assert_eq!(qa.questions, 3);
    assert_eq!(qa.overall["f1"], 1.0);
    assert_eq!(qa.overall["judge_accuracy"], 1.0);
    assert_eq!(qa.adversarial["declined"], 1.0);
    assert!(qa.mean_prompt_tokens > 0.0);
    // The answer prompt carries the retrieved memories with their session dates.
    let prompts = model.requests();
    let first = &prompts[0].messages.last().unwrap().content;
    assert!(first.contains("greyhound named Biscuit"), "{first}");
    assert!(first.contains("3 March 2024"), "{first}");

    let json = serde_json::to_value(&report).unwrap();
    for key in [
        "retrieval",
        "per_category",
        "baselines",
        "latency_ms",
        "counts",
        "config",
        "qa",
        "context",
    ] {
        assert!(json.get(key).is_some(), "{key}");
    }
    assert!(json["latency_ms"]["search"]["p95"].as_f64().unwrap() > 0.0);

    let md = report.to_markdown(&["plots/recall_at_k.svg".into()]);
    assert!(md.contains("| mnemo (hybrid) |"));
    assert!(md.contains("![plots/recall_at_k.svg](plots/recall_at_k.svg)"));
    let written = mnemo_eval::plots::write_all(&report, &dir.path().join("plots")).unwrap();
    // SVG always; a PNG beside each with the `png` feature (scripts/test.sh turns it on).
    assert_eq!(written.len(), if cfg!(feature = "png") { 6 } else { 3 });
    for p in &written {
        let bytes = std::fs::read(p).unwrap();
        if p.extension().unwrap() == "png" {
            assert_eq!(&bytes[1..4], b"PNG", "{}", p.display());
        } else {
            let text = String::from_utf8(bytes).unwrap();
            assert!(text.starts_with("<svg") && text.ends_with("</svg>"));
        }
    }
}

#[tokio::test]
async fn qa_is_skipped_without_a_model_and_a_failing_model_fails_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let report = run_locomo(&options(dir.path(), None)).await.unwrap();
    assert!(report.qa_skipped());
    let md = report.to_markdown(&[]);
    assert!(md.contains("Skipped: no answer model configured"));

    let dir = tempfile::tempdir().unwrap();
    let broken = Arc::new(ScriptedChat::new("down", |_: &ChatRequest| {
        Err(Error::Unavailable {
            component: "chat model".into(),
            reason: "connection refused".into(),
        })
    }));
    let qa = QaModels {
        answer: broken.clone(),
        judge: broken,
    };
    let err = run_locomo(&options(dir.path(), Some(qa)))
        .await
        .unwrap_err();
    assert!(format!("{err:#}").contains("connection refused"), "{err:#}");
}

#[tokio::test]
async fn infer_mode_without_a_chat_model_is_a_clear_error_and_work_dirs_must_be_fresh() {
    let dir = tempfile::tempdir().unwrap();
    let mut opts = options(dir.path(), None);
    opts.mode = EvalMode::Infer;
    let err = run_locomo(&opts).await.unwrap_err();
    assert!(format!("{err:#}").contains("chat model"), "{err:#}");

    let dir = tempfile::tempdir().unwrap();
    let opts = options(dir.path(), None);
    std::fs::create_dir_all(opts.work_dir.join("leftover")).unwrap();
    let err = run_locomo(&opts).await.unwrap_err();
    assert!(err.to_string().contains("not empty"), "{err}");
}

#[tokio::test]
async fn infer_mode_scores_extracted_facts_through_their_sources_and_counts_failed_adds() {
    let dir = tempfile::tempdir().unwrap();
    // Session 1: the model answers prose (a model-output error). Session 2: one fact citing the
    // message about the flat.
    let model = Arc::new(ScriptedChat::new(
        "scripted-extractor",
        |req: &ChatRequest| {
            let user = &req.messages.last().unwrap().content;
            Ok(if user.contains("balcony") {
                let n = user
                    .lines()
                    .find(|l| l.contains("balcony"))
                    .and_then(|l| l.strip_prefix('[')?.split(']').next()?.parse::<u64>().ok())
                    .unwrap();
                serde_json::json!({"facts": [{"text": "Ines's flat in Lisbon has a balcony with a river view", "sources": [n]}]}).to_string()
            } else {
                "Sorry, I can only chat.".to_string()
            })
        },
    ));
    let mut opts = options(dir.path(), None);
    opts.mode = EvalMode::Infer;
    opts.baselines = false;
    opts.infer_model = Some(model);
    let report = run_locomo(&opts).await.unwrap();
    assert_eq!(report.counts.failed_adds, 1);
    assert_eq!(report.counts.memories, 1, "{:?}", report.counts);
    // The Lisbon question's evidence is D1:3 and D2:2; the one fact covers D2:2 only.
    assert!(
        (report.per_category["1"]["recall@5"] - 0.5).abs() < 1e-9,
        "{:?}",
        report.per_category
    );
    assert_eq!(
        report.per_category["4"]["recall@5"], 0.0,
        "the failed session remembered nothing"
    );

    opts.infer_model = None;
    opts.work_dir = dir.path().join("work2");
    let err = run_locomo(&opts).await.unwrap_err();
    assert!(err.to_string().contains("chat model"), "{err}");
}

#[tokio::test]
async fn an_unattributed_fact_earns_no_evidence_credit() {
    let dir = tempfile::tempdir().unwrap();
    // The fact that answers the Lisbon question, but without the message it came from: it is
    // retrieved, yet covers no evidence turn (it used to be credited with the whole session).
    let model = Arc::new(ScriptedChat::new(
        "scripted-extractor",
        |req: &ChatRequest| {
            let user = &req.messages.last().unwrap().content;
            Ok(if user.contains("balcony") {
                serde_json::json!({"facts": [{"text": "Ines's flat in Lisbon has a balcony with a river view"}]}).to_string()
            } else {
                serde_json::json!({"facts": []}).to_string()
            })
        },
    ));
    let mut opts = options(dir.path(), None);
    opts.mode = EvalMode::Infer;
    opts.baselines = false;
    opts.infer_model = Some(model);
    let report = run_locomo(&opts).await.unwrap();
    assert_eq!(report.counts.memories, 1, "{:?}", report.counts);
    assert_eq!(
        report.per_category["1"]["recall@5"], 0.0,
        "{:?}",
        report.per_category
    );
}

#[tokio::test]
async fn notes_are_scored_without_and_with_link_expansion_in_the_same_run() {
    let dir = tempfile::tempdir().unwrap();
    let mut opts = options(dir.path(), None);
    opts.notes = Some(2);
    let report = run_locomo(&opts).await.unwrap();
    let notes = report.notes.as_ref().expect("a notes section");
    assert_eq!(notes.expand_links, 2);
    // The same questions, the same categories, in both rankings.
    let cats = |s: &mnemo_eval::metrics::RetrievalSummary| {
        s.per_category.keys().cloned().collect::<Vec<_>>()
    };
    assert_eq!(
        cats(&notes.notes),
        report.per_category.keys().cloned().collect::<Vec<_>>()
    );
    assert_eq!(cats(&notes.expanded), cats(&notes.notes));
    // Seven notes, twenty slots: every turn is reachable at 20 either way.
    assert_eq!(notes.notes.retrieval["recall@20"], 1.0);
    assert_eq!(notes.expanded.retrieval["recall@20"], 1.0);
    assert_eq!(cats(&notes.per_request), cats(&notes.notes));
    // With seven notes every candidate pool holds them all, so a search for k ranks them as
    // the one search for top_k does: the control is the notes row at every k.
    assert_eq!(notes.per_request.retrieval, notes.notes.retrieval);
    assert!(notes.mean_linked_in_top_k <= opts.top_k as f64);
    let md = report.to_markdown(&[]);
    assert!(md.contains("notes + links, overall"), "{md}");
    assert!(md.contains("notes, top_k = k, overall"), "{md}");
    assert!(md.contains("notes, 1 multi-hop"), "{md}");
    let json: serde_json::Value = serde_json::to_value(&report).unwrap();
    assert_eq!(json["config"]["notes_expand_links"], 2);
    assert!(json["notes"]["expanded"]["per_category"]["1"]["recall@10"].is_number());
}

#[test]
fn the_expanded_ranking_is_one_list_by_score_cut_at_the_depth() {
    let hit = |text: &str, score: f32, linked: bool| {
        let mut m: mnemo_core::Memory = serde_json::from_value(serde_json::json!({
            "id": mnemo_core::MemoryId::new(), "memory": text, "kind": "note", "state": "active",
            "user_id": "u", "agent_id": null, "run_id": null, "metadata": {}, "hash": "",
            "created_at": "2024-01-01T00:00:00Z", "updated_at": "2024-01-01T00:00:00Z",
            "expires_at": null, "valid_from": null, "valid_until": null, "actor": null,
            "role": null, "sources": [], "access_count": 0, "last_accessed_at": null}))
        .unwrap();
        m.text = text.into();
        mnemo_core::Hit {
            via: linked.then_some(mnemo_core::Via::Link(mnemo_core::LinkVia {
                memory_id: m.id,
                kind: mnemo_core::LinkKind::Related,
                strength: 0.9,
            })),
            memory: m,
            score,
            scores: Default::default(),
        }
    };
    let hits = vec![
        hit("a", 0.9, false),
        hit("b", 0.5, false),
        hit("c", 0.3, false),
        hit("a1", 0.8, true),
    ];
    let merged = mnemo_eval::run::merged_by_score(hits, 3);
    let texts: Vec<&str> = merged.iter().map(|h| h.memory.text.as_str()).collect();
    assert_eq!(
        texts,
        vec!["a", "a1", "b"],
        "a linked result takes the place its score earns"
    );
}

#[tokio::test]
async fn packs_and_cut_search_are_scored_per_budget_in_the_same_run() {
    let dir = tempfile::tempdir().unwrap();
    let mut opts = options(dir.path(), None);
    opts.baselines = false;
    opts.pack_budgets = vec![10, 60, 2000];
    let report = run_locomo(&opts).await.unwrap();
    let pack = report
        .pack
        .as_ref()
        .expect("pack section with --pack-budgets");
    assert_eq!(pack.tokenizer, "cl100k_base");
    assert_eq!(pack.session, "none");
    assert_eq!(pack.questions, 2, "questions with evidence");
    let budgets: Vec<u32> = pack.budgets.iter().map(|r| r.budget_tokens).collect();
    assert_eq!(budgets, vec![10, 60, 2000]);
    for r in &pack.budgets {
        assert!(r.pack_mean_tokens <= f64::from(r.budget_tokens), "{r:?}");
        assert!(r.search_mean_tokens <= f64::from(r.budget_tokens), "{r:?}");
        assert!((0.0..=1.0).contains(&r.pack_recall), "{r:?}");
    }
    // 2,000 tokens hold the whole seven-turn conversation either way.
    let wide = &pack.budgets[2];
    assert_eq!(wide.pack_recall, 1.0, "{wide:?}");
    assert_eq!(wide.search_recall, 1.0, "{wide:?}");
    // 10 tokens hold a header at most: nothing to score.
    assert_eq!(pack.budgets[0].search_recall, 0.0);
    let json = serde_json::to_value(&report).unwrap();
    assert!(json["pack"]["budgets"][1]["pack_recall"].is_number());
    let md = report.to_markdown(&[]);
    assert!(md.contains("Context packs vs plain search"), "{md}");
    let written = mnemo_eval::plots::write_all(&report, &dir.path().join("plots")).unwrap();
    let svg = written
        .iter()
        .find(|p| p.ends_with("pack_vs_search.svg"))
        .expect("the pack chart");
    let svg = std::fs::read_to_string(svg).unwrap();
    assert_eq!(svg.matches("<polyline").count(), 2, "pack and search lines");
    assert!(svg.contains(">2000<"), "budgets on the x axis");
}
