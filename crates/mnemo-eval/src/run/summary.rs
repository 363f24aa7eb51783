//! Step 4: the report of a run, from what the steps tallied, and the settings it ran with.

use super::{EvalOptions, Tally};
use crate::metrics::percentile;
use crate::qa::summarize;
use crate::report::{ContextCost, Latency, Percentiles, QaSection, Report};

/// The report of a run; `tokenizer` names the pack budgets' tokenizer.
pub(super) fn report(opts: &EvalOptions, tally: Tally, tokenizer: &str) -> Report {
    let mnemo = tally.mnemo.summary();
    let compare_store = opts.compare_store.is_some().then(|| {
        let store = tally.compare.summary();
        let at10 = |r: &std::collections::BTreeMap<String, f64>| {
            r.get("recall@10").copied().unwrap_or(0.0)
        };
        crate::report::CompareSection {
            backend: "postgresql".into(),
            recall_at_10_difference: at10(&store.retrieval) - at10(&mnemo.retrieval),
            store,
            latency_ms: Latency {
                add: Percentiles {
                    p50: percentile(&tally.compare_add_ms, 0.5),
                    p95: percentile(&tally.compare_add_ms, 0.95),
                },
                search: Percentiles {
                    p50: percentile(&tally.compare_search_ms, 0.5),
                    p95: percentile(&tally.compare_search_ms, 0.95),
                },
            },
        }
    });
    let qa = match &opts.qa {
        Some(models) => QaSection::Scored(Box::new(summarize(models, &tally.qa))),
        None => QaSection::Skipped {
            skipped: "no answer model configured (pass --answer-model and --answer-base-url)"
                .into(),
        },
    };
    Report {
        retrieval: mnemo.retrieval,
        per_category: mnemo.per_category,
        baselines: if opts.baselines {
            [
                ("bm25".to_string(), tally.bm25.summary()),
                ("dense".to_string(), tally.dense.summary()),
            ]
            .into_iter()
            .collect()
        } else {
            Default::default()
        },
        latency_ms: Latency {
            add: Percentiles {
                p50: percentile(&tally.add_ms, 0.5),
                p95: percentile(&tally.add_ms, 0.95),
            },
            search: Percentiles {
                p50: percentile(&tally.search_ms, 0.5),
                p95: percentile(&tally.search_ms, 0.95),
            },
        },
        notes: opts.notes.map(|expand| crate::report::NotesSection {
            expand_links: expand,
            notes: tally.notes.summary(),
            expanded: tally.expanded.summary(),
            per_request: tally.per_request.summary(),
            mean_linked_in_top_k: tally.linked_in_top as f64
                / tally.expanded_questions.max(1) as f64,
            add: Percentiles {
                p50: percentile(&tally.notes_add_ms, 0.5),
                p95: percentile(&tally.notes_add_ms, 0.95),
            },
        }),
        pack: (!opts.pack_budgets.is_empty()).then(|| tally.pack.summary(tokenizer)),
        compare_store,
        temporal_off: tally.temporal_off.summary(),
        counts: tally.counts,
        context: ContextCost {
            top_k: opts.top_k,
            mean_memories_returned: tally.returned as f64 / tally.returned_total.max(1) as f64,
            mean_tokens_returned: tally.tokens as f64 / tally.returned_total.max(1) as f64,
            mean_evidence_turns_per_memory: tally.covered_turns as f64
                / tally.returned.max(1) as f64,
        },
        qa,
        config: config(opts),
        search_samples_ms: tally.search_ms,
    }
}

/// The settings of the run, as the report records them.
fn config(opts: &EvalOptions) -> serde_json::Value {
    serde_json::json!({
        "data": opts.data.display().to_string(),
        "mode": opts.mode.as_str(),
        "store": if opts.store_url.is_some() { "postgresql" } else { "sqlite" },
        "top_k": opts.top_k,
        "embedder": opts.embedder.model_id(),
        "rank": {
            "dense_weight": opts.rank.dense_weight,
            "lexical_weight": opts.rank.lexical_weight,
            "candidate_factor": opts.rank.candidate_factor,
            "min_candidates": opts.rank.min_candidates,
        },
        "indexing": {
            "before": opts.indexing.before,
            "after": opts.indexing.after,
            "embed_before": opts.indexing.embed_before,
            "embed_after": opts.indexing.embed_after,
            "speaker": opts.indexing.speaker,
            "own_weight": opts.indexing.own_weight,
        },
        "max_questions": opts.max_questions,
        "max_conversations": opts.max_conversations,
        "notes_expand_links": opts.notes,
        "link_weight": opts.rank.link_weight,
        "temporal_weight": opts.rank.temporal_weight,
        "note_config": {
            "neighbours": opts.note_config.neighbours,
            "link_similarity": opts.note_config.link_similarity,
            "link_entity": opts.note_config.link_entity,
            "max_rule_links": opts.note_config.max_rule_links,
            "speaker_link_df": opts.note_config.speaker_link_df,
            "speaker_link_pool": opts.note_config.speaker_link_pool,
        },
        "pack_budgets": opts.pack_budgets,
        "pack_tuning": {
            "neighbours": opts.pack_tuning.neighbours,
            "neighbour_decay": opts.pack_tuning.neighbour_decay,
            "summary_weight": opts.pack_tuning.summary_weight,
            "tokens_per_candidate": opts.pack_tuning.tokens_per_candidate,
            "excerpt_words": opts.pack_tuning.excerpt_words,
            "clip": opts.pack_tuning.clip,
            "size_exponent": opts.pack_tuning.pack.size_exponent,
        },
        "infer_model": opts.infer_model.as_ref().map(|m| m.model_id().to_string()),
        "mnemo_version": env!("CARGO_PKG_VERSION"),
    })
}
