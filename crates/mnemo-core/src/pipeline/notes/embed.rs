//! Step 2: the notes' texts embedded in one batch, and each note's vector: its own, or in a
//! conversation the length-weighted mean over its window (see [`NoteWindow`](super::NoteWindow)).

use super::enrich::ByRules;
use super::{NotesInput, Pipeline};
use crate::error::Result;
use crate::memory::NoteFields;
use crate::note;
use crate::pipeline::CallLog;

/// Per note of the call, in order: its conversation window lines (BM25 only) and its vector.
pub(super) struct Embedded {
    pub suffixes: Vec<String>,
    pub vectors: Vec<Vec<f32>>,
}

/// Embeds every note of `inputs` (with `fields`, one entry per input) in one call.
pub(super) fn embed(
    run: &Pipeline<'_>,
    inputs: &[NotesInput<'_>],
    fields: &[(Vec<NoteFields>, ByRules)],
    log: &mut CallLog,
) -> Result<Embedded> {
    // Per note: its conversation window lines (BM25 only) and the text its vector is made of.
    let (mut suffixes, mut embedded): (Vec<String>, Vec<String>) = (Vec::new(), Vec::new());
    // Per input: where its prior turns' texts start in `embedded` (after its notes').
    let mut prior_at: Vec<usize> = Vec::with_capacity(inputs.len());
    for (input, (fields, by_rules)) in inputs.iter().zip(fields) {
        let first = embedded.len();
        for (i, (m, f)) in input.messages.iter().zip(fields).enumerate() {
            // What the vector is made from: rule-made fields repeat the text's own words and
            // name the speaker and day, which add model time and no meaning; they are in
            // the lexical entry only. In a conversation the own line names the speaker.
            let own = match &input.window {
                Some(w) => w.line(m),
                None => m.content.clone(),
            };
            embedded.push(note::enriched_text(&own, &by_rules.embedded(f)));
            suffixes.push(match &input.window {
                Some(w) => w.suffix(input.messages, i),
                None => String::new(),
            });
        }
        prior_at.push(embedded.len() - first);
        if let Some(w) = &input.window {
            let from = w.prior.len().saturating_sub(w.embed_before);
            embedded.extend(w.prior[from..].iter().map(|m| w.line(m)));
        }
    }
    let refs: Vec<&str> = embedded.iter().map(String::as_str).collect();
    let raw_vectors = if refs.is_empty() {
        Vec::new()
    } else {
        log.embed(run.embedder, &refs)?
    };
    let vectors = window_vectors(inputs, &prior_at, &embedded, &raw_vectors);
    Ok(Embedded { suffixes, vectors })
}

/// Each note's vector, in note order: its own, or its conversation window's. `embedded` and
/// `raw` hold, per input, its notes' texts and vectors, then its prior turns'; `counts[k]` is
/// input k's number of notes.
fn window_vectors(
    inputs: &[NotesInput<'_>],
    counts: &[usize],
    embedded: &[String],
    raw_vectors: &[Vec<f32>],
) -> Vec<Vec<f32>> {
    let mut vectors: Vec<Vec<f32>> = Vec::with_capacity(counts.iter().sum());
    let mut base = 0;
    for (input, n) in inputs.iter().zip(counts) {
        let n = *n;
        let prior_n = input
            .window
            .map_or(0, |w| w.prior.len().min(w.embed_before));
        for i in 0..n {
            let own = &raw_vectors[base + i];
            let Some(w) = &input.window else {
                vectors.push(own.clone());
                continue;
            };
            // Window positions over [prior..., this add's notes...].
            let at = prior_n + i;
            let lo = at.saturating_sub(w.embed_before);
            let hi = (at + w.embed_after).min(prior_n + n - 1);
            let mut v = vec![0.0f32; own.len()];
            for j in lo..=hi {
                let (vec, text) = if j < prior_n {
                    (&raw_vectors[base + n + j], &embedded[base + n + j])
                } else {
                    (
                        &raw_vectors[base + j - prior_n],
                        &embedded[base + j - prior_n],
                    )
                };
                let weight = text.chars().count().max(1) as f32;
                v.iter_mut().zip(vec).for_each(|(o, x)| *o += weight * x);
            }
            crate::embed::l2_normalize(&mut v);
            vectors.push(v);
        }
        base += n + prior_n;
    }
    vectors
}
