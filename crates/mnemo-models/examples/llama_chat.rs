//! Times the in-process GGUF chat model on a fact-extraction prompt: model load, then a few
//! JSON-mode completions, reporting tokens and the median time per call.
//!
//! `cargo run --release -p mnemo-models --features llama --example llama_chat -- [GGUF] [THREADS] [REPEATS]`;
//! GGUF defaults to the file `mnemo models install --llm` puts under `<workspace>/models`.

use mnemo_core::{ChatMessage, ChatModel, ChatRequest};
use mnemo_models::{installed_llm_path, LlamaChat, LlamaConfig};
use std::path::PathBuf;
use std::time::Instant;

const SYSTEM: &str = r#"You maintain long-term memory for an assistant. Read the NEW messages and write down the durable facts they contain: who someone is, what they like or dislike, plans, events with their dates, relationships, places, jobs and decisions.

Rules:
- One fact per item, as a short sentence that names the person it is about.
- Resolve relative dates against the date of the message they appear in.
- Greetings and small talk produce no facts. An empty list is a correct answer.
- For each fact give "speaker" (who said it) and "sources" (the numbers of the NEW messages it comes from).

Answer with one JSON object and nothing else:
{"facts": [{"text": "...", "speaker": "...", "sources": [1]}]}"#;

const USER: &str = "NEW messages (dated 2024-05-08):
1. Maya: Hi! I finally moved to Lisbon last month, the flat is near the river.
2. Maya: My sister Inês is visiting next weekend, she works as a nurse in Porto.
3. Maya: Also, please remember I'm allergic to peanuts, and I stopped drinking coffee in January.
4. Maya: I started a new job at a bike repair co-op called Roda Livre; my manager is Tomás.
5. Maya: We're planning a trip to the Azores in September for my 30th birthday.";

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let gguf = args.next().map(PathBuf::from).unwrap_or_else(|| {
        installed_llm_path(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../models"))
    });
    let threads: u32 = args.next().map_or(Ok(2), |t| t.parse())?;
    let repeats: usize = args.next().map_or(Ok(5), |r| r.parse())?;

    let mut cfg = LlamaConfig::new(gguf);
    cfg.threads = threads;
    let started = Instant::now();
    let chat = LlamaChat::new(cfg)?;
    println!(
        "{}: loaded in {:.0?} ({threads} threads)",
        chat.model_id(),
        started.elapsed()
    );

    let req = ChatRequest {
        messages: vec![ChatMessage::system(SYSTEM), ChatMessage::user(USER)],
        max_tokens: Some(128),
        temperature: None,
        json: true,
    };
    println!(
        "{} prompt tokens, at most {} completion tokens, JSON mode",
        chat.prompt_tokens(&req.messages)?,
        req.max_tokens.unwrap_or_default()
    );
    // One token of plain text: nearly all of it is reading the prompt.
    let prompt_only = ChatRequest {
        max_tokens: Some(1),
        json: false,
        ..req.clone()
    };
    let started = Instant::now();
    chat.complete(&prompt_only)?;
    println!("prompt alone (1 token out): {:.2?}", started.elapsed());

    // A call that runs out of tokens before closing the JSON object is an error, but it costs
    // the same work as one that fits, so both are timed.
    let mut times = Vec::with_capacity(repeats);
    for run in 0..repeats {
        let started = Instant::now();
        let result = chat.complete(&req);
        let took = started.elapsed();
        times.push(took);
        match result {
            Ok(resp) => {
                println!(
                    "run {run}: {took:.2?}, {} completion tokens",
                    resp.usage.completion_tokens
                );
                if run == 0 {
                    println!("{}", resp.content);
                }
            }
            Err(e) => println!("run {run}: {took:.2?}, error: {e}"),
        }
    }
    times.sort();
    if let Some(median) = times.get(times.len() / 2) {
        println!("median {median:.2?} over {} calls", times.len());
    }
    Ok(())
}
