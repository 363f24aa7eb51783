//! Step 4 of the synthetic bench: search with and without the query embedding, with read
//! counting on and off, each retrieval side alone, and the exact brute-force scan (which also
//! gives the ANN index's recall).

use super::{blocking, timed_ms, timed_ms_ok, Bench};
use mnemo_core::*;
use std::time::Instant;

/// Per-query timings in ms, each sorted ascending, and the ANN recall at 10.
pub(super) struct Searched {
    pub with_embed: Vec<f64>,
    pub no_embed: Vec<f64>,
    pub brute: Vec<f64>,
    pub dense_side: Vec<f64>,
    pub lexical_side: Vec<f64>,
    pub tracking_on: Vec<f64>,
    pub tracking_off: Vec<f64>,
    pub ann_recall_at_10: f64,
}

/// Searches each of `qs` in several ways. `vectors` are every stored memory's vectors in write
/// order: the `n` bulk memories, then the sample.
pub(super) async fn measure(
    bench: &Bench<'_>,
    qs: &[String],
    vectors: &[Vec<f32>],
    n: usize,
) -> anyhow::Result<Searched> {
    let (memory, scope) = (bench.memory, bench.scope);
    let queries = qs.len();
    let req = |q: &str| SearchRequest::new(scope.clone(), q, 10);
    let qvecs: Vec<Vec<f32>> = {
        let refs: Vec<&str> = qs.iter().map(String::as_str).collect();
        bench.embedder.embed(&refs)?
    };
    let mut no_embed = Vec::with_capacity(queries);
    // Warm-up: one unmeasured pass over every query (page cache, statement cache, graph).
    blocking(|| -> anyhow::Result<()> {
        for (q, v) in qs.iter().zip(&qvecs) {
            memory.search_with_vector_blocking(&req(q), v)?;
        }
        // Each measurement gets its own pass over the queries, so one (the brute-force scan
        // over every vector, say) does not evict what the next one reads.
        for (q, v) in qs.iter().zip(&qvecs) {
            let r = req(q);
            no_embed.push(timed_ms_ok(|| memory.search_with_vector_blocking(&r, v))?);
        }
        Ok(())
    })?;
    let (tracking_on, tracking_off) = tracking(bench, qs, &qvecs).await?;
    let store = memory.store().clone();
    let cq = CandidateQuery {
        scope,
        kinds: None,
        filter: None,
        read: ReadOptions::default(),
        limit: 30,
    };
    let (mut dense_side, mut lexical_side) =
        (Vec::with_capacity(queries), Vec::with_capacity(queries));
    blocking(|| -> anyhow::Result<()> {
        for (q, v) in qs.iter().zip(&qvecs) {
            dense_side.push(timed_ms_ok(|| store.dense_candidates(&cq, v))?);
            let terms = mnemo_core::text::query_terms(q);
            lexical_side.push(timed_ms_ok(|| store.lexical_candidates(&cq, &terms))?);
        }
        Ok(())
    })?;
    // Memories were written in order into a fresh store: the bulk (memory i has key i + 1),
    // then the sample a chunk at a time, each raw chunk followed by its chunk of notes, so
    // sample memory j has key n + 1 + j + batch·⌊j / batch⌋. With the keys known, the exact
    // top-10 of the brute-force scan also measures the graph's recall.
    let batch = bench.batch;
    let key_of = |i: usize| -> i64 {
        let k = if i < n {
            i
        } else {
            i + batch * ((i - n) / batch)
        };
        k as i64 + 1
    };
    let mut brute = Vec::with_capacity(queries);
    let mut recall_sum = 0.0;
    for v in &qvecs {
        let mut exact: Vec<i64> = Vec::new();
        brute.push(timed_ms(|| {
            let mut best: Vec<(f32, usize)> = vectors
                .iter()
                .enumerate()
                .map(|(i, x)| (embed::dot(v, x), i))
                .collect();
            best.select_nth_unstable_by(10, |a, b| b.0.total_cmp(&a.0));
            exact = best[..10].iter().map(|(_, i)| key_of(*i)).collect();
        }));
        let mut got = blocking(|| store.dense_candidates(&cq, v))?;
        got.truncate(10);
        recall_sum += got.iter().filter(|c| exact.contains(&c.key)).count() as f64 / 10.0;
    }
    let mut with_embed = Vec::with_capacity(queries);
    for q in qs {
        let t = Instant::now();
        memory.search(req(q)).await?;
        with_embed.push(t.elapsed().as_secs_f64() * 1e3);
    }
    let mut searched = Searched {
        with_embed,
        no_embed,
        brute,
        dense_side,
        lexical_side,
        tracking_on,
        tracking_off,
        ann_recall_at_10: recall_sum / queries as f64,
    };
    for v in [
        &mut searched.with_embed,
        &mut searched.no_embed,
        &mut searched.brute,
        &mut searched.dense_side,
        &mut searched.lexical_side,
        &mut searched.tracking_on,
        &mut searched.tracking_off,
    ] {
        v.sort_by(f64::total_cmp);
    }
    Ok(searched)
}

/// What read counting costs: the async search path, which records what it returns, with
/// counting on and off, alternating per query (and which goes first) so that drift and warm
/// caches treat both alike. The counts are written in the background meanwhile, and flushed
/// before this returns. Returns the (on, off) timings.
async fn tracking(
    bench: &Bench<'_>,
    qs: &[String],
    qvecs: &[Vec<f32>],
) -> anyhow::Result<(Vec<f64>, Vec<f64>)> {
    let memory = bench.memory;
    let req = |q: &str| SearchRequest::new(bench.scope.clone(), q, 10);
    let (tracked, untracked) = (
        memory.clone().with_usage_tracking(true),
        memory.clone().with_usage_tracking(false),
    );
    let (mut tracking_on, mut tracking_off) =
        (Vec::with_capacity(qs.len()), Vec::with_capacity(qs.len()));
    for (i, (q, v)) in qs.iter().zip(qvecs).enumerate() {
        let mut runs = [
            (&tracked, &mut tracking_on),
            (&untracked, &mut tracking_off),
        ];
        if i % 2 == 1 {
            runs.reverse();
        }
        for (m, out) in runs {
            let t = Instant::now();
            m.search_with_vector(req(q), v.clone()).await?;
            out.push(t.elapsed().as_secs_f64() * 1e3);
        }
    }
    memory.flush_usage().await?;
    Ok((tracking_on, tracking_off))
}
