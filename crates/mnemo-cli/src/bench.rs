//! `mnemo bench`: add and search throughput on synthetic chat-like memories, with the baselines
//! measured in the same run (embedding alone; exact brute-force dense scan) so results can be
//! read as ratios on a noisy shared machine. `--conversations FILE` runs the conversation
//! workload instead ([`conversations`]).
//!
//! On a PostgreSQL store (`--store postgres://…`) the run builds its store in a fresh schema of
//! that database and drops it at the end. Store calls here are blocking, and the PostgreSQL
//! driver must not block an async worker, so they run inside [`blocking`].

mod conversations;
pub use conversations::{run as run_conversations, Options as ConversationOptions};

use crate::io::outln;
use mnemo::{AddRequest, Memory, MemoryConfig};
use mnemo_core::*;
use std::time::Instant;

/// A small deterministic generator (xorshift64*), so every run sees the same texts.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545F4914F6CDD1D)
    }
    fn pick<'a>(&mut self, xs: &[&'a str]) -> &'a str {
        xs[(self.next() % xs.len() as u64) as usize]
    }
}

const NAMES: &[&str] = &[
    "Maya", "Tom", "Priya", "Luis", "Anna", "Kenji", "Sara", "Omar", "Lena", "Jack", "Ines", "Wei",
];
const PLACES: &[&str] = &[
    "Lisbon",
    "the lake house",
    "Berlin",
    "her office",
    "the farmers market",
    "Osaka",
    "the gym",
    "Denver",
    "the library",
    "Nairobi",
    "the beach",
    "Toronto",
];
const ACTS: &[&str] = &[
    "started learning the cello",
    "ran a half marathon",
    "adopted a rescue dog",
    "switched to a vegan diet",
    "began a pottery class",
    "finished a novel about sailors",
    "planted tomatoes and basil",
    "booked a trip",
    "fixed an old bicycle",
    "joined a chess club",
    "painted a sunset",
    "changed jobs to product design",
];
const WHEN: &[&str] = &[
    "last weekend",
    "yesterday",
    "in March",
    "two weeks ago",
    "this morning",
    "over the summer",
    "on Friday",
    "last year",
];
const FEEL: &[&str] = &[
    "and loved it",
    "but found it hard",
    "with a friend",
    "to relax",
    "after months of planning",
    "for the first time",
    "because a coworker suggested it",
    "and wants to do it again",
];

fn sentence(r: &mut Rng, i: usize) -> String {
    format!(
        "{} {} at {} {} {} (note {i})",
        r.pick(NAMES),
        r.pick(ACTS),
        r.pick(PLACES),
        r.pick(WHEN),
        r.pick(FEEL)
    )
}

fn question(r: &mut Rng) -> String {
    format!(
        "What did {} do at {} {}?",
        r.pick(NAMES),
        r.pick(PLACES),
        r.pick(WHEN)
    )
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let idx = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[idx.min(sorted.len() - 1)]
}

fn rss_mb(field: &str) -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines().find(|l| l.starts_with(field)).and_then(|l| {
                l.split_whitespace()
                    .nth(1)
                    .and_then(|v| v.parse::<f64>().ok())
            })
        })
        .map_or(0.0, |kb| kb / 1024.0)
}

/// Runs blocking store work from this async code (see the module doc).
fn blocking<T>(f: impl FnOnce() -> T) -> T {
    tokio::task::block_in_place(f)
}

fn timed_ms(f: impl FnOnce()) -> f64 {
    let t = Instant::now();
    f();
    t.elapsed().as_secs_f64() * 1e3
}

/// Milliseconds a fallible store call took; its error ends the bench (a store on a server can
/// fail mid-run, which is an error to report, not a panic).
fn timed_ms_ok<T>(f: impl FnOnce() -> mnemo::Result<T>) -> mnemo::Result<f64> {
    let t = Instant::now();
    f()?;
    Ok(t.elapsed().as_secs_f64() * 1e3)
}

pub struct Options {
    pub n: usize,
    pub queries: usize,
    pub add_sample: usize,
    pub vector_cache: Option<std::path::PathBuf>,
    pub store_dir: Option<std::path::PathBuf>,
    /// PostgreSQL: the schema the store is built in and kept (reopened with `search_only`).
    pub schema: Option<String>,
    pub search_only: bool,
}

/// Identifies the texts and model a cached set of vectors belongs to.
fn cache_key(model: &str, texts: &[String]) -> String {
    format!(
        "{model}:{}:{}",
        texts.len(),
        mnemo_core::content_hash(&texts.join("\0"))
    )
}

fn load_cache(path: &std::path::Path, key: &str, dim: usize) -> Option<Vec<Vec<f32>>> {
    let bytes = std::fs::read(path).ok()?;
    let nl = bytes.iter().position(|b| *b == b'\n')?;
    if &bytes[..nl] != key.as_bytes() {
        return None;
    }
    let body = &bytes[nl + 1..];
    if body.len() % (4 * dim) != 0 {
        return None;
    }
    let floats: Vec<f32> = body
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect();
    Some(floats.chunks(dim).map(<[f32]>::to_vec).collect())
}

fn save_cache(path: &std::path::Path, key: &str, vectors: &[Vec<f32>]) -> std::io::Result<()> {
    let mut out =
        Vec::with_capacity(key.len() + 1 + vectors.len() * vectors.first().map_or(0, Vec::len) * 4);
    out.extend_from_slice(key.as_bytes());
    out.push(b'\n');
    for v in vectors {
        for x in v {
            out.extend_from_slice(&x.to_le_bytes());
        }
    }
    std::fs::write(path, out)
}

/// Embeds `texts` in batches of `batch`; returns the vectors and the rate per second.
fn embed_timed(
    embedder: &dyn mnemo_core::Embedder,
    texts: &[String],
    batch: usize,
) -> anyhow::Result<(Vec<Vec<f32>>, f64)> {
    let mut out = Vec::with_capacity(texts.len());
    let t = Instant::now();
    for chunk in texts.chunks(batch) {
        let refs: Vec<&str> = chunk.iter().map(String::as_str).collect();
        out.extend(embedder.embed(&refs)?);
    }
    Ok((out, texts.len() as f64 / t.elapsed().as_secs_f64()))
}

/// Steps 2 and 3: the bulk memories written pre-embedded through `Store::write` (storage alone),
/// then `m` fresh texts through the library's add path, each with the embedder alone on the same
/// texts just before. Returns (storage-only rate, add rate, same-text embed-only rate, the
/// sample's vectors).
#[expect(
    clippy::too_many_arguments,
    reason = "each input is a separate part of the step; a context struct is the planned fix"
)]
async fn fill(
    memory: &Memory,
    scope: &Scope,
    texts: &[String],
    vectors: &[Vec<f32>],
    rng: &mut Rng,
    m: usize,
    batch: usize,
    progress: &dyn Fn(&str),
) -> anyhow::Result<(f64, f64, f64, f64, Vec<Vec<f32>>)> {
    let n = texts.len();
    // 2. Storage alone: write the pre-embedded memories (one transaction per 256), with the
    //    entity mentions the add path extracts, so the entity graph is as an add would leave it.
    progress("writing pre-embedded memories (add without embedding)");
    let store = memory.store().clone();
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
                context: WriteContext::default(),
            });
        }
        blocking(|| store.write(batches))?;
    }
    let add_no_embed_per_s = n as f64 / t.elapsed().as_secs_f64();

    // 3. The full add path (embedding + storage) on fresh texts, and the embedder alone on the
    //    same texts, chunk by chunk in turn (embed-only, then add), so both halves of the
    //    storage-overhead ratio see the same moments of a shared machine.
    let sample: Vec<String> = (0..m).map(|i| sentence(rng, n + i)).collect();
    progress("embedding and adding the sample in turn (embed-only baseline, then the add path)");
    let embedder = memory.embedder().await?;
    let mut sample_vectors = Vec::with_capacity(m);
    let (mut embed_s, mut add_s, mut note_s) = (0.0, 0.0, 0.0);
    // Note adds (rules, no model) of the same texts go to a scope of their own, chunk by chunk
    // right after the raw adds, so the two throughputs see the same moments of the machine.
    let notes_scope = Scope::user("bench-notes")?;
    for chunk in sample.chunks(batch) {
        let (vectors, rate) = embed_timed(embedder.as_ref(), chunk, batch)?;
        embed_s += chunk.len() as f64 / rate;
        sample_vectors.extend(vectors);
        let reqs = chunk
            .iter()
            .map(|s| AddRequest::text(scope.clone(), s.clone()))
            .collect();
        let t = Instant::now();
        memory.add_many(reqs).await?;
        add_s += t.elapsed().as_secs_f64();
        let notes = chunk
            .iter()
            .enumerate()
            .map(|(j, s)| {
                let mut r = AddRequest::note(notes_scope.clone(), s.clone(), Default::default());
                // Each note has a speaker, so the speaker-and-subject link rule runs (its
                // lexical candidates are a note add's largest extra cost).
                r.input = mnemo::AddInput::Messages(vec![mnemo_core::InputMessage {
                    role: mnemo_core::Role::User,
                    content: s.clone(),
                    name: Some(format!("speaker {}", j % 4)),
                }]);
                r.infer = Some(false);
                r
            })
            .collect();
        let t = Instant::now();
        memory.add_many(notes).await?;
        note_s += t.elapsed().as_secs_f64();
    }
    let (sample_embed_only_per_s, add_per_s) = (m as f64 / embed_s, m as f64 / add_s);
    Ok((
        add_no_embed_per_s,
        add_per_s,
        m as f64 / note_s,
        sample_embed_only_per_s,
        sample_vectors,
    ))
}

pub async fn run(mut cfg: MemoryConfig, opts: Options, json: bool) -> anyhow::Result<()> {
    let (n, queries, add_sample) = (opts.n, opts.queries, opts.add_sample);
    if n == 0 || queries == 0 {
        return Err(Error::invalid("bench", "--memories and --queries must be positive").into());
    }
    let started = Instant::now();
    let tmp = match &opts.store_dir {
        Some(dir) if opts.search_only && !dir.exists() => {
            return Err(Error::invalid(
                "store_dir",
                format!(
                    "{} does not exist; --search-only reopens a kept store",
                    dir.display()
                ),
            )
            .into())
        }
        Some(dir) if dir.exists() && !opts.search_only => {
            return Err(Error::invalid(
                "store_dir",
                format!("{} exists; give a new directory", dir.display()),
            )
            .into())
        }
        Some(dir) => dir.clone(),
        None => {
            let tmp = std::env::temp_dir().join(format!("mnemo-bench-{}", std::process::id()));
            if opts.store_dir.is_none() {
                let _ = std::fs::remove_dir_all(&tmp);
            }
            tmp
        }
    };
    cfg.data_dir = tmp.clone();
    cfg.embedding_cache = 0; // measure the model, not the cache

    // On PostgreSQL: a fresh schema, dropped when this function returns (after the report), or
    // the kept one `--schema` names.
    let schema = match cfg.store_config() {
        mnemo::StoreConfig::Postgres { url, pool_size } => {
            if opts.store_dir.is_some() {
                return Err(Error::invalid(
                    "store_dir",
                    "keeps an embedded store; a PostgreSQL bench keeps its store with --schema",
                )
                .into());
            }
            let schema = match &opts.schema {
                Some(name) => mnemo::ScratchSchema::kept(&url, name, !opts.search_only)?,
                None if opts.search_only => {
                    return Err(Error::invalid(
                        "search_only",
                        "on PostgreSQL reopens the store a previous run kept with --schema",
                    )
                    .into())
                }
                None => mnemo::ScratchSchema::create(&url, "mnemo_bench")?,
            };
            cfg.store = Some(mnemo::StoreConfig::Postgres {
                url: schema.url(),
                pool_size,
            });
            Some(schema)
        }
        mnemo::StoreConfig::Embedded { .. } | mnemo::StoreConfig::InMemory => {
            if opts.schema.is_some() {
                return Err(Error::invalid(
                    "schema",
                    "names a PostgreSQL schema; give --store postgres://… (or --store-dir)",
                )
                .into());
            }
            if opts.search_only && opts.store_dir.is_none() {
                return Err(Error::invalid(
                    "search_only",
                    "reopens the store a previous run kept with --store-dir",
                )
                .into());
            }
            None
        }
    };
    let memory = Memory::open(cfg).await?;
    let embedder = memory.embedder().await?;
    let mut rng = Rng(0x9E3779B97F4A7C15);
    let scope = Scope::user("bench-user")?;
    let texts: Vec<String> = (0..n).map(|i| sentence(&mut rng, i)).collect();
    let progress = |msg: &str| {
        if !json {
            eprintln!("[{:>6.1}s] {msg}", started.elapsed().as_secs_f64());
        }
    };

    // 1. Baseline: the embedder alone, over every text, in the batches import uses.
    let batch = 64;
    // The embedder makes its inference sessions on first use; one untimed batch here keeps that
    // one-off cost out of every rate below (it belongs to the first-answer figure instead).
    let warm: Vec<&str> = texts.iter().take(batch).map(String::as_str).collect();
    embedder.embed(&warm)?;
    let key = cache_key(embedder.model_id(), &texts);
    let cached = opts
        .vector_cache
        .as_deref()
        .and_then(|p| load_cache(p, &key, embedder.dimension()))
        .filter(|v| v.len() == n);
    let (mut vectors, embed_only_per_s) = match cached {
        Some(v) => {
            progress("bulk embeddings loaded from the vector cache");
            (v, None)
        }
        None => {
            progress("embedding every memory (embed-only baseline)");
            let (vectors, rate) = embed_timed(embedder.as_ref(), &texts, batch)?;
            if let Some(p) = &opts.vector_cache {
                save_cache(p, &key, &vectors)?;
            }
            (vectors, Some(rate))
        }
    };

    let store = memory.store().clone();
    let m = add_sample.clamp(1, n.max(1));
    let (add_no_embed_per_s, add_per_s, note_add_per_s, sample_embed_only_per_s) =
        if opts.search_only {
            let have = blocking(|| store.stats())?.memories;
            // Each sample text is also stored once as a note (in its own scope).
            if have != (n + 2 * m) as u64 {
                return Err(Error::invalid(
                    "store_dir",
                    format!(
                    "the kept store holds {have} memories, not --memories + 2 × --add-sample = {}",
                    n + 2 * m
                ),
                )
                .into());
            }
            let sample: Vec<String> = (0..m).map(|i| sentence(&mut rng, n + i)).collect();
            let (sample_vectors, rate) = embed_timed(embedder.as_ref(), &sample, batch)?;
            vectors.extend(sample_vectors);
            (None, None, None, rate)
        } else {
            let (no_embed, add, note_add, rate, sample_vectors) = fill(
                &memory, &scope, &texts, &vectors, &mut rng, m, batch, &progress,
            )
            .await?;
            vectors.extend(sample_vectors);
            (Some(no_embed), Some(add), Some(note_add), rate)
        };
    let total = n + m;

    // 4. Search, with and without the query embedding, and the exact brute-force baseline.
    progress("searching");
    let qs: Vec<String> = (0..queries).map(|_| question(&mut rng)).collect();
    let mut with_embed = Vec::with_capacity(queries);
    let mut no_embed = Vec::with_capacity(queries);
    let mut brute = Vec::with_capacity(queries);
    let (mut dense_side, mut lexical_side) =
        (Vec::with_capacity(queries), Vec::with_capacity(queries));
    let req = |q: &str| SearchRequest::new(scope.clone(), q, 10);
    let qvecs: Vec<Vec<f32>> = {
        let refs: Vec<&str> = qs.iter().map(String::as_str).collect();
        embedder.embed(&refs)?
    };
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
    // What read counting costs: the async search path, which records what it returns, with
    // counting on and off, alternating per query (and which goes first) so that drift and
    // warm caches treat both alike. The counts are written in the background meanwhile.
    let (tracked, untracked) = (
        memory.clone().with_usage_tracking(true),
        memory.clone().with_usage_tracking(false),
    );
    let (mut tracking_on, mut tracking_off) =
        (Vec::with_capacity(queries), Vec::with_capacity(queries));
    for (i, (q, v)) in qs.iter().zip(&qvecs).enumerate() {
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
    let cq = CandidateQuery {
        scope: &scope,
        kinds: None,
        filter: None,
        read: ReadOptions::default(),
        limit: 30,
    };
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
    let key_of = |i: usize| -> i64 {
        let k = if i < n {
            i
        } else {
            i + batch * ((i - n) / batch)
        };
        k as i64 + 1
    };
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
    for q in &qs {
        let t = Instant::now();
        memory.search(req(q)).await?;
        with_embed.push(t.elapsed().as_secs_f64() * 1e3);
    }
    for v in [
        &mut with_embed,
        &mut no_embed,
        &mut brute,
        &mut dense_side,
        &mut lexical_side,
        &mut tracking_on,
        &mut tracking_off,
    ] {
        v.sort_by(f64::total_cmp);
    }
    let stats = blocking(|| memory.store().stats())?;
    let report = serde_json::json!({
        "memories": total,
        "store": if schema.is_some() { "postgresql" } else { "sqlite" },
        "embedder": embedder.model_id(),
        "threads": std::thread::available_parallelism().map_or(1, |n| n.get()),
        "embed_only_per_s": embed_only_per_s,
        "vectors_from_cache": embed_only_per_s.is_none(),
        "add_per_s": add_per_s,
        "add_sample": m,
        "note_add_per_s": note_add_per_s,
        "note_vs_raw_add": note_add_per_s.zip(add_per_s).map(|(n, a)| n / a),
        "sample_embed_only_per_s": sample_embed_only_per_s,
        "storage_overhead": add_per_s.map(|a| sample_embed_only_per_s / a - 1.0),
        "add_no_embed_per_s": add_no_embed_per_s,
        "search_p50_ms": percentile(&with_embed, 0.5),
        "search_p95_ms": percentile(&with_embed, 0.95),
        "search_p50_ms_no_embed": percentile(&no_embed, 0.5),
        "search_p95_ms_no_embed": percentile(&no_embed, 0.95),
        "search_p50_ms_no_embed_tracking_on": percentile(&tracking_on, 0.5),
        "search_p50_ms_no_embed_tracking_off": percentile(&tracking_off, 0.5),
        "usage_tracking_p50_ratio": percentile(&tracking_on, 0.5) / percentile(&tracking_off, 0.5),
        "bruteforce_dense_p50_ms": percentile(&brute, 0.5),
        "dense_candidates_p50_ms": percentile(&dense_side, 0.5),
        "ann_recall_at_10": recall_sum / queries as f64,
        "lexical_candidates_p50_ms": percentile(&lexical_side, 0.5),
        "queries": queries,
    });
    let temporary = opts.store_dir.is_none().then_some(tmp.as_path());
    finish(report, memory, stats.file_bytes, started, temporary, json)
}

/// Adds the keys every workload ends with (`rss_mb`, `peak_rss_mb`, `file_mb`, `wall_s`), closes
/// the store, removes it when it was temporary, and prints the report.
pub(crate) fn finish(
    mut report: serde_json::Value,
    memory: Memory,
    file_bytes: u64,
    started: Instant,
    temporary: Option<&std::path::Path>,
    json: bool,
) -> anyhow::Result<()> {
    if let Some(map) = report.as_object_mut() {
        map.insert("rss_mb".into(), rss_mb("VmRSS:").into());
        map.insert("peak_rss_mb".into(), rss_mb("VmHWM:").into());
        map.insert(
            "file_mb".into(),
            (file_bytes as f64 / (1024.0 * 1024.0)).into(),
        );
        map.insert("wall_s".into(), started.elapsed().as_secs_f64().into());
    }
    drop(memory);
    if let Some(dir) = temporary {
        let _ = std::fs::remove_dir_all(dir);
    }
    if json {
        outln!("{report}");
    } else {
        outln!("{}", serde_json::to_string_pretty(&report)?);
    }
    Ok(())
}
