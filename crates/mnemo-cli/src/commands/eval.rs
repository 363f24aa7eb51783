//! `mnemo eval locomo`: builds the evaluation from CLI flags, runs it, writes the report JSON,
//! the Markdown and the charts. `mnemo eval correctness` and `mnemo eval temporal` (the tagger
//! on the temporal questions; no store, no model) and `mnemo eval relations` (the rule relation
//! extractor against hand labels) write their reports.

use crate::args::{CorrectnessArgs, LocomoArgs, RelationsArgs, TemporalArgs};
use crate::io::outln;
use anyhow::{bail, Context};
use mnemo::MemoryConfig;
use mnemo_core::{CachedEmbedder, ChatModel, Embedder};
use mnemo_eval::qa::QaModels;
use mnemo_eval::{EvalMode, EvalOptions};
use mnemo_models::{OpenAiChat, OpenAiConfig};
use std::io::IsTerminal;
use std::sync::Arc;

fn chat(
    model: &str,
    base_url: Option<&str>,
    key_env: Option<&str>,
) -> anyhow::Result<Arc<dyn ChatModel>> {
    let Some(base_url) = base_url else {
        bail!("a base URL is required with a model name (an OpenAI-compatible endpoint, e.g. http://127.0.0.1:11434/v1): --answer-base-url / --base-url");
    };
    let mut cfg = OpenAiConfig::new(base_url, model);
    cfg.api_key_env = key_env.map(str::to_string);
    Ok(Arc::new(OpenAiChat::new(cfg)?))
}

fn qa_models(a: &LocomoArgs) -> anyhow::Result<Option<QaModels>> {
    let Some(model) = &a.answer_model else {
        if a.judge_model.is_some() {
            bail!("--judge-model needs --answer-model");
        }
        return Ok(None);
    };
    let answer = chat(
        model,
        a.answer_base_url.as_deref(),
        a.answer_api_key_env.as_deref(),
    )?;
    let judge = match &a.judge_model {
        Some(j) => chat(
            j,
            a.judge_base_url.as_deref().or(a.answer_base_url.as_deref()),
            a.judge_api_key_env
                .as_deref()
                .or(a.answer_api_key_env.as_deref()),
        )?,
        None => answer.clone(),
    };
    Ok(Some(QaModels { answer, judge }))
}

async fn build_chat(llm: &mnemo::ChatConfig) -> anyhow::Result<Arc<dyn ChatModel>> {
    let llm = llm.clone();
    Ok(tokio::task::spawn_blocking(move || llm.build()).await??)
}

async fn load_embedder(cfg: &MemoryConfig) -> anyhow::Result<Arc<dyn Embedder>> {
    let embedder_cfg = cfg.embedder.clone();
    Ok(tokio::task::spawn_blocking(move || {
        mnemo_models::load_embedder(&embedder_cfg)
            .map(|e| Arc::new(CachedEmbedder::new(e, 100_000)) as Arc<dyn Embedder>)
    })
    .await??)
}

/// `mnemo eval correctness`: the scenarios with their scripts, or scored against a real model
/// (`--model` with `--base-url`, else the globally configured `--llm-*` model when given).
pub(super) async fn correctness(
    cfg: MemoryConfig,
    a: CorrectnessArgs,
    json: bool,
) -> anyhow::Result<()> {
    let scenarios = mnemo_eval::correctness::load(a.scenarios.as_deref())?;
    let model: Option<Arc<dyn ChatModel>> = match (&a.model, &cfg.llm) {
        (Some(m), _) => Some(chat(m, a.base_url.as_deref(), a.api_key_env.as_deref())?),
        (None, Some(llm)) => Some(build_chat(llm).await?),
        (None, None) => None,
    };
    let embedder = load_embedder(&cfg).await?;
    let report =
        mnemo_eval::correctness::run_correctness(&scenarios, embedder, model, cfg.infer.clone())
            .await?;
    if let Some(out) = &a.out {
        std::fs::write(out, serde_json::to_string_pretty(&report)?)
            .with_context(|| format!("writing {}", out.display()))?;
    }
    if json {
        outln!("{}", serde_json::to_string(&report)?);
    } else {
        for s in &report.scenarios {
            outln!("{:<22} {}/{}", s.name, s.passed, s.total);
            for c in s.checks.iter().filter(|c| !c.passed) {
                outln!("  FAILED {}: {}", c.check, c.detail);
            }
            if let Some(e) = &s.error {
                outln!("  error: {e}");
            }
        }
        outln!(
            "score {:.3} ({}/{}) with {}",
            report.score,
            report.passed,
            report.total,
            report.model
        );
    }
    Ok(())
}

pub(super) async fn locomo(mut cfg: MemoryConfig, a: LocomoArgs, json: bool) -> anyhow::Result<()> {
    if let Some(v) = a.context_before {
        cfg.indexing.before = v;
    }
    if let Some(v) = a.context_after {
        cfg.indexing.after = v;
    }
    if let Some(v) = a.embed_before {
        cfg.indexing.embed_before = v;
    }
    if let Some(v) = a.embed_after {
        cfg.indexing.embed_after = v;
    }
    if let Some(v) = a.own_weight {
        cfg.indexing.own_weight = v;
    }
    if let Some(v) = a.speaker {
        cfg.indexing.speaker = v;
    }
    if let Some(v) = a.dense_weight {
        cfg.rank.dense_weight = v;
    }
    if let Some(v) = a.lexical_weight {
        cfg.rank.lexical_weight = v;
    }
    if let Some(v) = a.candidate_factor {
        cfg.rank.candidate_factor = v;
    }
    if let Some(v) = a.entity_weight {
        cfg.rank.entity_weight = v;
    }
    if let Some(v) = a.link_weight {
        cfg.rank.link_weight = v;
    }

    cfg.validate()?;
    if !a.data.is_file() {
        return Err(mnemo_core::Error::invalid(
            "data",
            format!("{} is not a readable file", a.data.display()),
        )
        .into());
    }
    let qa = qa_models(&a)?;
    let mode = match a.mode.as_str() {
        "infer" => EvalMode::Infer,
        _ => EvalMode::Raw,
    };
    let embedder = load_embedder(&cfg).await?;
    let infer_model: Option<Arc<dyn ChatModel>> = match &cfg.llm {
        Some(llm) => Some(build_chat(llm).await?),
        None => None,
    };
    let work_dir = cfg.data_dir.join("eval").join(format!(
        "locomo-{}",
        chrono::Utc::now().format("%Y%m%dT%H%M%S%.3f")
    ));
    let opts = EvalOptions {
        data: a.data.clone(),
        mode,
        top_k: a.top_k,
        work_dir: work_dir.clone(),
        embedder,
        rank: cfg.rank,
        indexing: cfg.indexing,
        qa,
        progress: std::io::stderr().is_terminal() && !json,
        max_questions: a.max_questions,
        max_conversations: a.max_conversations,
        infer_model,
        baselines: !a.no_baselines,
        notes: a.notes.then_some(a.expand_links),
        note_config: cfg.notes,
        pack_budgets: a.pack_budgets.clone(),
        pack_tuning: pack_tuning(&a),
        // A PostgreSQL store (--store): every store of the run is a fresh schema there.
        store_url: match cfg.store_config() {
            mnemo::StoreConfig::Postgres { url, .. } => Some(url),
            mnemo::StoreConfig::Embedded { .. } | mnemo::StoreConfig::InMemory => None,
        },
        compare_store: a.compare_store.clone(),
        graph: a.graph,
    };
    let result = mnemo_eval::run_locomo(&opts).await;
    if !a.keep_stores {
        let _ = std::fs::remove_dir_all(&work_dir);
    }
    let report = result?;
    if report.qa_skipped() {
        eprintln!("QA skipped: no answer model configured (--answer-model, --answer-base-url)");
    }
    std::fs::write(&a.out, serde_json::to_string_pretty(&report)?)
        .with_context(|| format!("writing {}", a.out.display()))?;
    let mut plot_names = Vec::new();
    if let Some(dir) = &a.plots {
        for p in mnemo_eval::plots::write_all(&report, dir)? {
            // Links in the Markdown are relative to the Markdown file when it sits beside them.
            let rel = match a.markdown.as_ref().and_then(|m| m.parent()) {
                Some(parent) => p
                    .strip_prefix(parent)
                    .map(|r| r.to_path_buf())
                    .unwrap_or(p.clone()),
                None => p.clone(),
            };
            plot_names.push(rel.display().to_string());
        }
    }
    if let Some(md) = &a.markdown {
        std::fs::write(md, report.to_markdown(&plot_names))
            .with_context(|| format!("writing {}", md.display()))?;
    }
    if json {
        outln!("{}", serde_json::to_string(&report)?);
    } else {
        let r = &report.retrieval;
        outln!(
            "mnemo  recall@10 {:.3}  recall@20 {:.3}  mrr {:.3}",
            r["recall@10"],
            r["recall@20"],
            r["mrr"]
        );
        for (name, b) in &report.baselines {
            outln!(
                "{name:<6} recall@10 {:.3}  recall@20 {:.3}  mrr {:.3}",
                b.retrieval["recall@10"],
                b.retrieval["recall@20"],
                b.retrieval["mrr"]
            );
        }
        if let Some(n) = &report.notes {
            for (name, r) in [("notes", &n.notes), ("notes+links", &n.expanded)] {
                outln!(
                    "{name:<11} recall@10 {:.3}  multi-hop recall@10 {:.3}",
                    r.retrieval["recall@10"],
                    r.per_category
                        .get("1")
                        .and_then(|m| m.get("recall@10"))
                        .copied()
                        .unwrap_or(0.0)
                );
            }
        }
        outln!("report: {}", a.out.display());
    }
    Ok(())
}

/// Context-pack tuning from the eval flags, mnemo's defaults for those not given.
fn pack_tuning(a: &LocomoArgs) -> mnemo::ContextTuning {
    let mut t = mnemo::ContextTuning::default();
    if let Some(n) = a.pack_neighbours {
        t.neighbours = n;
    }
    if let Some(d) = a.pack_neighbour_decay {
        t.neighbour_decay = d;
    }
    if let Some(e) = a.pack_size_exponent {
        t.pack.size_exponent = e;
    }
    if let Some(c) = a.pack_clip {
        t.clip = c;
    }
    if let Some(w) = a.pack_summary_weight {
        t.summary_weight = w;
    }
    if let Some(n) = a.pack_tokens_per_candidate {
        t.tokens_per_candidate = n;
    }
    if let Some(n) = a.pack_excerpt_words {
        t.excerpt_words = (n > 0).then_some(n);
    }
    t
}

/// `mnemo eval temporal`: the share of LoCoMo's temporal questions whose evidence the tagger
/// dates as the gold answer does.
pub(super) async fn temporal(
    cfg: MemoryConfig,
    a: &TemporalArgs,
    json: bool,
) -> anyhow::Result<()> {
    if !a.data.is_file() {
        return Err(mnemo_core::Error::invalid(
            "data",
            format!("{} is not a readable file", a.data.display()),
        )
        .into());
    }
    let conversations = mnemo_eval::locomo::load(&a.data)?;
    let opts = mnemo_core::time::TaggerOptions {
        date_order: if a.day_first {
            mnemo_core::time::DateOrder::DayFirst
        } else {
            mnemo_core::time::DateOrder::MonthFirst
        },
    };
    let mut report = mnemo_eval::temporal::run_temporal(&conversations, &opts);
    if a.recall {
        let (on, off) = temporal_recall(cfg, &a.data).await?;
        report.recall_at_10_on = Some(on);
        report.recall_at_10_off = Some(off);
    }
    if let Some(out) = &a.out {
        std::fs::write(out, serde_json::to_string_pretty(&report)?)
            .with_context(|| format!("writing {}", out.display()))?;
    }
    if json {
        outln!("{}", serde_json::to_string(&report)?);
        return Ok(());
    }
    outln!(
        "temporal questions {}  answers parsed {}  matched {} ({:.3}; any sentence {:.3}; evidence dated {:.3})",
        report.questions,
        report.parsed,
        report.matched,
        report.matched_share,
        report.matched_share_any_sentence,
        report.tagged_share
    );
    if let (Some(on), Some(off)) = (report.recall_at_10_on, report.recall_at_10_off) {
        outln!("temporal category recall@10: {on:.3} with temporal search, {off:.3} without");
    }
    for (granularity, s) in &report.per_granularity {
        outln!(
            "  {granularity:<7} {:>3}/{:<3} {:.3}",
            s.matched,
            s.questions,
            s.matched_share
        );
    }
    if !report.unparsed.is_empty() {
        outln!("answers that are not a date or period:");
        for u in &report.unparsed {
            outln!("  {:?} ({})", u.answer, u.question);
        }
    }
    Ok(())
}

/// `mnemo eval relations`: the rule extractor's precision and recall, per set and predicate.
pub(super) fn relations(a: &RelationsArgs, json: bool) -> anyhow::Result<()> {
    let report = mnemo_eval::relations::run_relations(a.data.as_deref(), a.labels.as_deref())?;
    if let Some(out) = &a.out {
        std::fs::write(out, serde_json::to_string_pretty(&report)?)
            .with_context(|| format!("writing {}", out.display()))?;
    }
    if json {
        outln!("{}", serde_json::to_string(&report)?);
        return Ok(());
    }
    for set in &report.sets {
        let o = &set.overall;
        outln!(
            "{} ({} texts, {} with relations): precision {:.3} ({}/{}), recall {:.3} ({}/{})",
            set.name,
            set.texts,
            set.texts_with_relations,
            o.precision,
            o.correct,
            o.predicted,
            o.recall,
            o.correct,
            o.labelled
        );
        for (p, c) in &set.per_predicate {
            outln!(
                "  {p:<12} labelled {:>3} predicted {:>3} correct {:>3}  P {:.2} R {:.2}",
                c.labelled,
                c.predicted,
                c.correct,
                c.precision,
                c.recall
            );
        }
    }
    let t = &report.timing;
    outln!(
        "cost: {:.0} ns per turn for relation rules, {:.0} ns for entity rules ({:.2}x), {} turns, median of {}",
        t.relations_ns_per_turn, t.entities_ns_per_turn, t.ratio_to_entities, t.turns, t.passes
    );
    Ok(())
}

/// The temporal category's (2) recall@10 with temporal search on and off, from one retrieval
/// run over `data` (raw adds, no baselines): `off` is the run's matched control
/// (`Report::temporal_off`), the same questions on the same store.
async fn temporal_recall(cfg: MemoryConfig, data: &std::path::Path) -> anyhow::Result<(f64, f64)> {
    cfg.validate()?;
    let work_dir = cfg.data_dir.join("eval").join(format!(
        "temporal-{}",
        chrono::Utc::now().format("%Y%m%dT%H%M%S%.3f")
    ));
    let opts = EvalOptions {
        data: data.to_path_buf(),
        mode: EvalMode::Raw,
        top_k: 10,
        work_dir: work_dir.clone(),
        embedder: load_embedder(&cfg).await?,
        rank: cfg.rank,
        indexing: cfg.indexing,
        qa: None,
        progress: false,
        max_questions: None,
        max_conversations: None,
        infer_model: None,
        baselines: false,
        notes: None,
        note_config: cfg.notes,
        pack_budgets: Vec::new(),
        pack_tuning: mnemo::ContextTuning::default(),
        store_url: None,
        compare_store: None,
        graph: false,
    };
    let result = mnemo_eval::run_locomo(&opts).await;
    let _ = std::fs::remove_dir_all(&work_dir);
    let report = result?;
    let at10 =
        |per: &std::collections::BTreeMap<String, std::collections::BTreeMap<String, f64>>| {
            per.get("2")
                .and_then(|c| c.get("recall@10"))
                .copied()
                .unwrap_or(0.0)
        };
    Ok((
        at10(&report.per_category),
        at10(&report.temporal_off.per_category),
    ))
}
