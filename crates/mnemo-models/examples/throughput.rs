//! Measures embedding throughput of both backends on ~200 chat-like sentences: one text per
//! call, one batch of 32 per call, and the whole list in one call (which the ONNX backend
//! shares out among single-threaded sessions, a batch each). The last two alternate three
//! times, so they see the same machine.
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

        let rate = |f: &dyn Fn() -> mnemo_core::Result<()>| -> Result<f64, mnemo_core::Error> {
            let started = Instant::now();
            f()?;
            Ok(refs.len() as f64 / started.elapsed().as_secs_f64())
        };
        let (mut per_batch, mut whole) = (Vec::new(), Vec::new());
        for _ in 0..3 {
            per_batch.push(rate(&|| {
                for chunk in refs.chunks(32) {
                    embedder.embed(chunk)?;
                }
                Ok(())
            })?);
            whole.push(rate(&|| embedder.embed(&refs).map(|_| ()))?);
        }
        let show = |v: &[f64]| {
            v.iter()
                .map(|r| format!("{r:.0}"))
                .collect::<Vec<_>>()
                .join(" / ")
        };
        println!(
            "{:<30} load {:>6.0?}  one-at-a-time {:>7.1}/s  a batch of 32 per call {}/s  all in one call {}/s",
            embedder.model_id(),
            load,
            single,
            show(&per_batch),
            show(&whole)
        );
    }
    Ok(())
}
