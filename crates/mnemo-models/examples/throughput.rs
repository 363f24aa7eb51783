//! Measures embedding throughput of both backends on ~200 chat-like sentences, one text per call
//! and in batches of 32.
//!
//! `cargo run --release -p mnemo-models --example throughput -- [THREADS]` with the models in
//! `MNEMO_MODELS_DIR` (default `<workspace>/models`). THREADS defaults to 2.

use mnemo_models::{load_embedder, EmbedderBackend, EmbedderConfig};
use std::path::PathBuf;
use std::time::Instant;

const SUBJECTS: [&str; 10] = [
    "I",
    "My sister",
    "The team",
    "Our landlord",
    "My doctor",
    "The client",
    "We",
    "Alex",
    "My manager",
    "The bot",
];
const ACTIONS: [&str; 10] = [
    "prefers tea over coffee in the morning",
    "moved the standup to 10am on Mondays",
    "is allergic to peanuts and shellfish",
    "asked for a summary of last week's incident report",
    "wants the invoices sent before the end of the month",
    "booked a flight to Lisbon for the conference",
    "finally fixed the flaky integration test",
    "does not like long emails, keep it short",
    "is training for a half marathon in October",
    "recommended a book about distributed systems",
];
const TAILS: [&str; 2] = ["", " — can you remember that for next time?"];

fn sentences() -> Vec<String> {
    let mut out = Vec::new();
    for tail in TAILS {
        for s in SUBJECTS {
            for a in ACTIONS {
                out.push(format!("{s} {a}{tail}"));
            }
        }
    }
    out
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let threads: usize = std::env::args()
        .nth(1)
        .map(|t| t.parse())
        .transpose()?
        .unwrap_or(2);
    let dir = std::env::var_os("MNEMO_MODELS_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../models"));
    let texts = sentences();
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    println!("{} sentences, {threads} threads", refs.len());
    for backend in [EmbedderBackend::Onnx, EmbedderBackend::Candle] {
        let mut cfg = EmbedderConfig::new(backend, &dir);
        cfg.threads = Some(threads);
        cfg.batch_size = 32;
        let started = Instant::now();
        let embedder = load_embedder(&cfg)?;
        let load = started.elapsed();
        embedder.embed(&refs[..8])?; // warm-up

        let started = Instant::now();
        for t in &refs {
            embedder.embed(&[t])?;
        }
        let single = refs.len() as f64 / started.elapsed().as_secs_f64();

        let started = Instant::now();
        embedder.embed(&refs)?; // split into batches of 32 by the embedder
        let batched = refs.len() as f64 / started.elapsed().as_secs_f64();
        println!(
            "{:<30} load {:>6.0?}  one-at-a-time {:>7.1}/s  batch-32 {:>7.1}/s",
            embedder.model_id(),
            load,
            single,
            batched
        );
    }
    Ok(())
}
