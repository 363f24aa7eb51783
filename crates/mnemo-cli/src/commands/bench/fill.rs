//! Steps 2 and 3 of the synthetic bench: the bulk memories written pre-embedded through
//! `Store::write` (storage alone), then a sample of fresh texts through the library's add path,
//! each chunk with the embedder alone on the same texts just before, and as notes right after.

use super::texts::{sentence, Rng};
use super::vectors::embed_timed;
use super::{blocking, Bench};
use mnemo::AddRequest;
use mnemo_core::*;
use std::time::Instant;

/// What filling the store measured.
pub(super) struct Filled {
    /// Pre-embedded memories written per second (storage alone).
    pub add_no_embed_per_s: f64,
    /// Sample texts through `add_many` per second (embedding + storage).
    pub add_per_s: f64,
    /// The same texts as notes (rules, no model) per second.
    pub note_add_per_s: f64,
    /// The embedder alone on the sample texts, per second.
    pub sample_embed_only_per_s: f64,
    /// Seconds of the sample's adds spent in their embedding call (as each add reports it) and
    /// in the rest (preparation besides the embedding, and the store's write): where the
    /// storage overhead lies.
    pub add_embed_s: f64,
    pub add_rest_s: f64,
    /// The sample's vectors, for the brute-force baseline.
    pub sample_vectors: Vec<Vec<f32>>,
}

/// Fills the store with `texts` (embedded as `vectors`), then adds `m` fresh texts from `rng`.
pub(super) async fn fill(
    bench: &Bench<'_>,
    texts: &[String],
    vectors: &[Vec<f32>],
    rng: &mut Rng,
    m: usize,
) -> anyhow::Result<Filled> {
    let add_no_embed_per_s = write_bulk(bench, texts, vectors)?;
    let n = texts.len();
    // 3. The full add path (embedding + storage) on fresh texts, and the embedder alone on the
    //    same texts, chunk by chunk in turn (embed-only, then add), so both halves of the
    //    storage-overhead ratio see the same moments of a shared machine.
    let (memory, scope, batch) = (bench.memory, bench.scope, bench.batch);
    let sample: Vec<String> = (0..m).map(|i| sentence(rng, n + i)).collect();
    (bench.progress)(
        "embedding and adding the sample in turn (embed-only baseline, then the add path)",
    );
    let mut sample_vectors = Vec::with_capacity(m);
    let (mut embed_s, mut add_s, mut note_s, mut add_embed_s) = (0.0, 0.0, 0.0, 0.0);
    // Note adds (rules, no model) of the same texts go to a scope of their own, chunk by chunk
    // right after the raw adds, so the two throughputs see the same moments of the machine.
    let notes_scope = Scope::user("bench-notes")?;
    for chunk in sample.chunks(batch) {
        let (vectors, rate) = embed_timed(bench.embedder, chunk, batch)?;
        embed_s += chunk.len() as f64 / rate;
        sample_vectors.extend(vectors);
        let reqs = chunk
            .iter()
            .map(|s| AddRequest::text(scope.clone(), s.clone()))
            .collect();
        let t = Instant::now();
        let out = memory.add_many(reqs).await?;
        add_s += t.elapsed().as_secs_f64();
        // One embedding call serves the whole batch; every outcome lists it.
        add_embed_s += out.first().map_or(0.0, |o| {
            o.usage
                .iter()
                .filter(|c| c.purpose == "embed")
                .map(|c| c.ms / 1e3)
                .sum()
        });
        let notes = chunk
            .iter()
            .enumerate()
            .map(|(j, s)| note_request(&notes_scope, s, j))
            .collect();
        let t = Instant::now();
        memory.add_many(notes).await?;
        note_s += t.elapsed().as_secs_f64();
    }
    Ok(Filled {
        add_no_embed_per_s,
        add_per_s: m as f64 / add_s,
        note_add_per_s: m as f64 / note_s,
        sample_embed_only_per_s: m as f64 / embed_s,
        add_embed_s,
        add_rest_s: add_s - add_embed_s,
        sample_vectors,
    })
}

/// 2. Storage alone: the pre-embedded memories written one transaction per 256, with the entity
///    mentions the add path extracts, so the entity graph is as an add would leave it. Returns
///    memories written per second.
fn write_bulk(bench: &Bench<'_>, texts: &[String], vectors: &[Vec<f32>]) -> anyhow::Result<f64> {
    (bench.progress)("writing pre-embedded memories (add without embedding)");
    let scope = bench.scope;
    let store = bench.memory.store().clone();
    let t = Instant::now();
    let base = chrono::Utc::now();
    let mut iter = texts.iter().zip(vectors.iter()).enumerate().peekable();
    while iter.peek().is_some() {
        let mut batches = Vec::with_capacity(256);
        for (i, (text, v)) in iter.by_ref().take(256) {
            let at = base + chrono::Duration::milliseconds(i as i64);
            let msg = Message::new(scope, Role::User, None, text.clone(), at);
            let mut new = NewMemory::raw(&msg, scope, Metadata::new(), None, v.clone());
            new.entities = mnemo_core::entity::extract_entities(text);
            batches.push(WriteBatch {
                evolutions: Vec::new(),
                tiers: Default::default(),
                scope: scope.clone(),
                memories: vec![new],
                messages: vec![msg],
                changes: Vec::new(),
                links: Vec::new(),
                idempotency: None,
                context: WritePlan::default(),
                relations: Vec::new(),
            });
        }
        blocking(|| store.write(batches))?;
    }
    Ok(texts.len() as f64 / t.elapsed().as_secs_f64())
}

/// A note add of `text` with a speaker, so the speaker-and-subject link rule runs (its lexical
/// candidates are a note add's largest extra cost).
fn note_request(scope: &Scope, text: &str, j: usize) -> AddRequest {
    let mut r = AddRequest::note(scope.clone(), text.to_string(), Default::default());
    r.input = mnemo::AddInput::Messages(vec![mnemo_core::InputMessage {
        role: mnemo_core::Role::User,
        content: text.to_string(),
        name: Some(format!("speaker {}", j % 4)),
    }]);
    r.infer = Some(false);
    r
}
