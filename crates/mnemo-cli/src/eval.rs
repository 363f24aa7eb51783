//! `mnemo eval locomo`: builds the evaluation from CLI flags, runs it, writes the report JSON,
//! the Markdown and the charts.

use crate::args::LocomoArgs;
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
        bail!("--answer-base-url is required with --answer-model (an OpenAI-compatible endpoint, e.g. http://127.0.0.1:11434/v1)");
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

pub async fn locomo(mut cfg: MemoryConfig, a: LocomoArgs, json: bool) -> anyhow::Result<()> {
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
    let embedder_cfg = cfg.embedder.clone();
    let embedder: Arc<dyn Embedder> = tokio::task::spawn_blocking(move || {
        mnemo_models::load_embedder(&embedder_cfg)
            .map(|e| Arc::new(CachedEmbedder::new(e, 100_000)) as Arc<dyn Embedder>)
    })
    .await??;
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
        baselines: !a.no_baselines,
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
        println!("{}", serde_json::to_string(&report)?);
    } else {
        let r = &report.retrieval;
        println!(
            "mnemo  recall@10 {:.3}  recall@20 {:.3}  mrr {:.3}",
            r["recall@10"], r["recall@20"], r["mrr"]
        );
        for (name, b) in &report.baselines {
            println!(
                "{name:<6} recall@10 {:.3}  recall@20 {:.3}  mrr {:.3}",
                b.retrieval["recall@10"], b.retrieval["recall@20"], b.retrieval["mrr"]
            );
        }
        println!("report: {}", a.out.display());
    }
    Ok(())
}
