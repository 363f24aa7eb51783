//! What an inferred add costs: model calls, tokens and latency per add, against a raw add of the
//! same session measured in the same run.
//!
//! The sessions of one LoCoMo conversation are added twice into fresh stores: raw, then inferred.
//! The chat model is an OpenAI-compatible endpoint on 127.0.0.1 that answers instantly from a
//! script (one fact per new message, every fact ADDed; tokens counted as words) — so the numbers are mnemo's own cost
//! around the model: prompt building, HTTP, JSON repair, duplicate checks, embedding, the write —
//! or, with `--gguf FILE` (build with `--features llama`), a GGUF model run in-process.
//!
//! ```sh
//! MNEMO_MODELS_DIR=./models cargo run --release -p mnemo-eval --example infer_bench -- \
//!     --data ../shared/data/locomo/locomo-dev.json --sessions 10
//! ```

use anyhow::{bail, Context, Result};
use mnemo::core::pipeline::{step_of, InferConfig};
use mnemo::core::*;
use mnemo::{AddInput, AddRequest, Memory};
use mnemo_eval::metrics::percentile;
use mnemo_testkit::stub_http::StubEndpoint;
use serde_json::{json, Value};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

struct Args {
    data: PathBuf,
    sessions: usize,
    gguf: Option<PathBuf>,
    threads: usize,
}

fn args() -> Result<Args> {
    let mut a = Args {
        data: PathBuf::new(),
        sessions: 10,
        gguf: None,
        threads: 2,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || it.next().context("flag needs a value");
        match flag.as_str() {
            "--data" => a.data = value()?.into(),
            "--sessions" => a.sessions = value()?.parse()?,
            "--gguf" => a.gguf = Some(value()?.into()),
            "--threads" => a.threads = value()?.parse()?,
            other => bail!("unknown flag {other}"),
        }
    }
    if a.data.as_os_str().is_empty() {
        bail!("--data LOCOMO.json is required");
    }
    Ok(a)
}

/// The scripted endpoint: one fact per NEW message, every fact added.
fn scripted_endpoint() -> StubEndpoint {
    StubEndpoint::start(|body: &Value| {
        let req = ChatRequest {
            messages: serde_json::from_value(body["messages"].clone()).unwrap_or_default(),
            ..ChatRequest::default()
        };
        let user = req
            .messages
            .get(1)
            .map(|m| m.content.clone())
            .unwrap_or_default();
        let answer = match step_of(&req) {
            Some("extract") => {
                let new = user.split("NEW messages:\n").nth(1).unwrap_or("");
                let facts: Vec<Value> = new
                    .lines()
                    .filter_map(|l| {
                        let (n, rest) = l.strip_prefix('[')?.split_once("] ")?;
                        let (who, text) = rest.split_once(": ")?;
                        let speaker = who.split_whitespace().nth(2).unwrap_or("someone");
                        let sentence = text.split(['.', '!', '?']).next().unwrap_or(text);
                        Some(json!({"text": format!("{speaker} said: {}", sentence.trim()), "speaker": speaker, "sources": [n.parse::<u64>().ok()?]}))
                    })
                    .collect();
                json!({ "facts": facts })
            }
            Some("reconcile") => {
                let n = user.lines().filter(|l| l.starts_with("fact ")).count();
                json!({"decisions": (1..=n).map(|i| json!({"fact": i, "event": "ADD", "reason": "new"})).collect::<Vec<_>>()})
            }
            _ => json!({}),
        };
        // Token counts as whitespace-separated words: a stand-in for a tokenizer.
        let words = |t: &str| t.split_whitespace().count();
        let prompt: usize = req.messages.iter().map(|m| words(&m.content)).sum();
        let content = answer.to_string();
        let body = json!({
            "choices": [{"index": 0, "message": {"role": "assistant", "content": content}}],
            "usage": {"prompt_tokens": prompt, "completion_tokens": words(&content.replace(['{', '}', '[', ']', ',', ':', '"'], " "))}
        });
        (200, body.to_string())
    })
}

fn chat_model(a: &Args, endpoint: &StubEndpoint) -> Result<Arc<dyn ChatModel>> {
    if let Some(path) = &a.gguf {
        #[cfg(feature = "llama")]
        {
            let mut cfg = mnemo_models::LlamaConfig::new(path.clone());
            cfg.threads = a.threads as u32;
            return Ok(Arc::new(mnemo_models::LlamaChat::new(cfg)?));
        }
        #[cfg(not(feature = "llama"))]
        bail!(
            "--gguf {} needs a build with --features llama",
            path.display()
        );
    }
    let mut cfg = mnemo_models::OpenAiConfig::new(endpoint.base_url.clone(), "scripted");
    cfg.max_retries = 0;
    Ok(Arc::new(mnemo_models::OpenAiChat::new(cfg)?))
}

fn session_request(scope: &Scope, s: &mnemo_eval::locomo::Session, infer: bool) -> AddRequest {
    let mut req = AddRequest::text(scope.clone(), "");
    req.input = AddInput::Messages(
        s.turns
            .iter()
            .map(|t| InputMessage {
                role: Role::User,
                content: t.text.clone(),
                name: Some(t.speaker.clone()),
            })
            .collect(),
    );
    req.timestamp = Some(s.date);
    req.infer = Some(infer);
    req
}

#[tokio::main]
async fn main() -> Result<()> {
    let a = args()?;
    let conversations = mnemo_eval::locomo::load(&a.data)?;
    let c = conversations.first().context("no conversation")?;
    let sessions: Vec<_> = c.sessions.iter().take(a.sessions).collect();
    let mut cfg = mnemo_models::EmbedderConfig::new(
        mnemo_models::EmbedderBackend::Onnx,
        mnemo::default_models_dir(),
    );
    cfg.threads = Some(a.threads);
    let embedder: Arc<dyn Embedder> =
        Arc::new(CachedEmbedder::new(mnemo_models::load_embedder(&cfg)?, 0));
    let endpoint = scripted_endpoint();
    let chat = chat_model(&a, &endpoint)?;
    let dir = tempfile::tempdir()?;
    let open = |name: &str| -> Result<Memory> {
        let store = mnemo::open_store(&mnemo::StoreConfig::embedded(&dir.path().join(name)))?;
        Ok(Memory::from_parts(
            store,
            embedder.clone(),
            RankParams::default(),
        )?)
    };
    let raw = open("raw")?;
    let inferred = open("infer")?.with_chat(chat.clone(), InferConfig::default());
    let scope = Scope::user("bench")?;

    let (mut raw_ms, mut infer_ms, mut model_ms, mut embed_ms) = (vec![], vec![], vec![], vec![]);
    let (mut calls, mut prompt, mut completion_tokens, mut memories, mut turns) = (0, 0, 0, 0, 0);
    for s in &sessions {
        let t = Instant::now();
        raw.add(session_request(&scope, s, false)).await?;
        raw_ms.push(t.elapsed().as_secs_f64() * 1e3);
        let t = Instant::now();
        let out = inferred.add(session_request(&scope, s, true)).await?;
        infer_ms.push(t.elapsed().as_secs_f64() * 1e3);
        let chats: Vec<&ModelCall> = out.usage.iter().filter(|c| c.purpose != "embed").collect();
        calls += chats.len();
        prompt += chats.iter().map(|c| c.prompt_tokens).sum::<u64>();
        completion_tokens += chats.iter().map(|c| c.completion_tokens).sum::<u64>();
        model_ms.push(chats.iter().map(|c| c.ms).sum::<f64>());
        embed_ms.push(
            out.usage
                .iter()
                .filter(|c| c.purpose == "embed")
                .map(|c| c.ms)
                .sum::<f64>(),
        );
        memories += out.results.len();
        turns += s.turns.len();
    }
    let n = sessions.len().max(1) as f64;
    let p50 = |v: &[f64]| percentile(v, 0.5);
    let p95 = |v: &[f64]| percentile(v, 0.95);
    let report = json!({
        "model": chat.model_id(),
        "sessions": sessions.len(), "turns": turns, "memories_written": memories,
        "per_add": {
            "model_calls": calls as f64 / n,
            "prompt_tokens": prompt as f64 / n,
            "completion_tokens": completion_tokens as f64 / n,
        },
        "latency_ms": {
            "raw_add": {"p50": p50(&raw_ms), "p95": p95(&raw_ms)},
            "inferred_add": {"p50": p50(&infer_ms), "p95": p95(&infer_ms)},
            "model_calls": {"p50": p50(&model_ms), "p95": p95(&model_ms)},
            "embedding": {"p50": p50(&embed_ms), "p95": p95(&embed_ms)},
        },
        "inferred_over_raw_p50": p50(&infer_ms) / p50(&raw_ms),
    });
    println!("{}", serde_json::to_string_pretty(&report)?);
    Ok(())
}
