//! [`OnnxEmbedder`]: all-MiniLM-L6-v2 as an int8 graph run by ONNX Runtime.
//!
//! ONNX Runtime is loaded at run time from a shared library (the `load-dynamic` feature of `ort`),
//! and a process can load it only once. The first successful load wins: later loads reuse that
//! library and its environment, with a warning if they asked for a different file.
//!
//! The graph is built at load from the model's f32 weights (`onnx_graph.rs`): fused operators,
//! int8 weights and activations. A call is cut into length-sorted passes bounded by
//! [`MAX_BATCH_TOKENS`], which bounds the working memory and keeps padding low. A call of one
//! pass runs on a session with the configured intra-op threads, or, when the pass is small (a
//! query, [`NARROW_MAX_TOKENS`]), on a single-threaded one. A call of several passes deals them
//! out to one single-threaded session per configured thread, each on its own thread.

use crate::config::EmbedderConfig;
use crate::onnx_graph::{build_bert, BertShape, OUTPUT, WORD_TABLE};
use crate::pooling::{mean_pool_normalized, PoolingInput};
use crate::tokenize::{TextTokenizer, TokenBatch};
use crate::weight_coding::WeightCoding;
use crate::{model_err, MAX_SEQ_LEN, MODEL_FAMILY};
use mnemo_core::{Embedder, Error, Result};
use ort::environment::Environment;
use ort::session::builder::{GraphOptimizationLevel, PrepackedWeights};
use ort::session::Session;
use ort::value::{DynValue, Tensor};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

/// The process-wide ONNX Runtime: the library it was loaded from and its environment.
static RUNTIME: OnceLock<(PathBuf, Environment)> = OnceLock::new();
/// Serialises first-time initialisation so two threads cannot race to load different libraries.
static RUNTIME_INIT: Mutex<()> = Mutex::new(());

/// Loads ONNX Runtime from `library` on first use and returns the shared environment.
fn runtime(library: &Path) -> Result<Environment> {
    let _guard = RUNTIME_INIT
        .lock()
        .map_err(|_| Error::internal("ONNX Runtime init lock poisoned"))?;
    if let Some((loaded, env)) = RUNTIME.get() {
        if loaded != library {
            tracing::warn!(
                requested = %library.display(),
                loaded = %loaded.display(),
                "ONNX Runtime is already loaded in this process; reusing the loaded library"
            );
        }
        return Ok(env.clone());
    }
    let env = ort::init_from(library)
        .map_err(|e| Error::Unavailable {
            component: "ONNX Runtime".into(),
            reason: format!("cannot load {}: {e}", library.display()),
        })?
        .with_name("mnemo")
        .with_telemetry(false)
        .build()
        .map_err(|e| model_err("cannot create the ONNX Runtime environment", e))?;
    let _ = RUNTIME.set((library.to_path_buf(), env.clone()));
    Ok(env)
}

/// Tokens (rows × padded length) in one forward pass at most. ONNX Runtime keeps a session's
/// memory arena at its high-water mark, so the largest pass sets the embedder's working memory
/// for the life of the process: bounding passes by tokens, not texts, keeps a batch of long
/// texts from growing it tenfold. Larger passes were not faster (1,024 to 4,096 tokens measured
/// within noise of each other on LoCoMo turns).
pub(crate) const MAX_BATCH_TOKENS: usize = 1024;

/// Padded tokens (rows × longest row) up to which a call of one pass runs single-threaded.
/// A query of 3–30 tokens embedded on one thread measured 5–15 % faster than on two on an
/// otherwise quiet machine, and about twice as fast while other processes held both cores
/// (the second thread waits for a core at every operator); longer passes gain from two.
pub(crate) const NARROW_MAX_TOKENS: usize = 64;

/// A session over `maker`'s graph with `threads` intra-op threads, one inter-op thread and no
/// spinning: spin-waiting worker threads fall apart when the CPU is shared with other work. No
/// memory pattern: input shapes change with every call, and a pattern is planned (and kept)
/// per shape. The weights are `maker`'s shared ones, not a copy of the session's own.
fn build_session(maker: &SessionMaker, threads: usize) -> Result<Session> {
    let opt =
        |e: ort::Error<ort::session::builder::SessionBuilder>| model_err("ONNX session options", e);
    Session::builder(&maker.env)
        .map_err(|e| model_err("ONNX session builder", e))?
        // Both: the graph marks the table as external data, which the first call supplies by
        // name, and the second makes the session use the caller's tensor instead of a copy.
        .with_external_initializer(WORD_TABLE, Arc::clone(&maker.word))
        .map_err(opt)?
        .with_initializer(WORD_TABLE, Arc::clone(&maker.word))
        .map_err(opt)?
        .with_prepacked_weights(&maker.prepacked)
        .map_err(opt)?
        // Basic rewrites only: the graph is fused already, and the extended level would fuse
        // each residual `Add` + `LayerNormalization` back into the slower
        // `SkipLayerNormalization` (see `onnx_graph.rs`).
        .with_optimization_level(GraphOptimizationLevel::Level1)
        .map_err(opt)?
        .with_memory_pattern(false)
        .map_err(opt)?
        .with_intra_threads(threads)
        .map_err(opt)?
        .with_inter_threads(1)
        .map_err(opt)?
        // Sets `session.intra_op.allow_spinning` = "0" (and the inter-op twin).
        .with_intra_op_spinning(false)
        .map_err(opt)?
        .with_inter_op_spinning(false)
        .map_err(opt)?
        .commit_from_memory(&maker.graph)
        .map_err(|e| model_err("ONNX Runtime refused the model graph", e))
}

/// A session made on first use: a one-shot CLI command (one add, one search) needs one of the
/// embedder's sessions, and making each took a noticeable part of its start.
struct LazySession {
    threads: usize,
    cell: OnceLock<Mutex<Session>>,
}

impl LazySession {
    fn new(threads: usize) -> Self {
        Self {
            threads,
            cell: OnceLock::new(),
        }
    }
}

/// What sessions are made from; dropped once every session exists.
///
/// An embedder has up to four sessions (wide, narrow, one lane per thread), and a session
/// keeps its own copy of every weight by default: the word table (47 MB in f32) and the int8
/// matrices ONNX Runtime repacks for its kernels. The graph carries no word table (it is marked
/// external); each session is handed the one `word` tensor, which it uses in place, and one
/// container of repacked matrices, so a further session costs little beyond its working memory.
/// Measured on the embedder alone with all four sessions made: 349 → 214 MB resident, and the
/// load's peak 382 → 177 MB (the graph no longer carries the table through each session's
/// parse); the conversation bench's figures are in BENCHMARKS.md.
struct SessionMaker {
    env: Environment,
    graph: Vec<u8>,
    /// The graph's [`WORD_TABLE`]; each session holds a reference to it.
    word: Arc<DynValue>,
    /// Repacked int8 matrices, made by the first session and reused by the others.
    prepacked: PrepackedWeights,
}

/// Embeds with the int8 graph through ONNX Runtime on the CPU.
pub struct OnnxEmbedder {
    /// The session with `threads` intra-op threads: every call of more than one small pass.
    wide: LazySession,
    /// A single-threaded session for calls of one pass of at most [`NARROW_MAX_TOKENS`] (a
    /// query): its ~50 operators then run without waking a second thread each (issue 16).
    /// `None` when `threads` is 1, where `wide` is that session.
    narrow: Option<LazySession>,
    /// Single-threaded sessions, one per intra-op thread: a call of several passes shares them
    /// out, each session running its passes on its own thread. `narrow` is not one of them, so a
    /// short call (a query) never waits for the session lock behind another caller's bulk
    /// passes; it only shares the CPU with them. Empty when `threads` is 1.
    lanes: Vec<LazySession>,
    /// The environment and serialised graph, until the last session is made.
    maker: Mutex<Option<Arc<SessionMaker>>>,
    tokenizer: TextTokenizer,
    model_id: String,
    dimension: usize,
    batch_size: usize,
}

impl OnnxEmbedder {
    /// The `model_id` this backend reports.
    pub const MODEL_ID: &'static str = "all-MiniLM-L6-v2/onnx-int8-dq";

    /// Loads the tokenizer, ONNX Runtime and the model's `config.json` and f32 weights named by
    /// `cfg.paths`, and builds the int8 graph from them (`build_bert`).
    ///
    /// Uses `cfg.effective_threads()` intra-op threads, one inter-op thread and no spinning:
    /// spin-waiting worker threads fall apart when the CPU is shared with other work. With more
    /// than one thread, a single-threaded session serves short calls and one single-threaded
    /// session per thread serves calls of several passes (each session's int8 weights add
    /// ~15 MB).
    pub fn load(cfg: &EmbedderConfig) -> Result<Self> {
        let paths = &cfg.paths;
        let tokenizer = TextTokenizer::from_file(&paths.tokenizer, MAX_SEQ_LEN)?;
        let config = std::fs::read_to_string(&paths.config)
            .map_err(|e| model_err(&format!("cannot read {}", paths.config.display()), e))?;
        let shape: BertShape = serde_json::from_str(&config)
            .map_err(|e| model_err(&format!("bad BERT config {}", paths.config.display()), e))?;
        let graph = {
            let weights = std::fs::read(&paths.safetensors).map_err(|e| {
                model_err(&format!("cannot read {}", paths.safetensors.display()), e)
            })?;
            let coding = cfg.onnx_weights.unwrap_or_else(WeightCoding::for_this_cpu);
            tracing::debug!(?coding, "int8 weight coding");
            build_bert(&weights, shape, coding)?
        };
        let env = runtime(&paths.effective_onnxruntime())?;
        // After `runtime`: a tensor needs the loaded library.
        let word = Tensor::from_array(graph.word)
            .map_err(|e| model_err("cannot build the word table tensor", e))?
            .into_dyn();
        let threads = cfg.effective_threads();
        let narrow = (threads > 1).then(|| LazySession::new(1));
        let lanes = if threads > 1 {
            (0..threads).map(|_| LazySession::new(1)).collect()
        } else {
            Vec::new()
        };

        let mut embedder = Self {
            wide: LazySession::new(threads),
            narrow,
            lanes,
            maker: Mutex::new(Some(Arc::new(SessionMaker {
                env,
                graph: graph.model,
                word: Arc::new(word),
                prepacked: PrepackedWeights::new(),
            }))),
            tokenizer,
            model_id: Self::MODEL_ID.to_string(),
            dimension: 0,
            batch_size: cfg.effective_batch_size(),
        };
        // Also makes the first session, so a graph ONNX Runtime refuses fails the load.
        embedder.dimension = embedder.embed(&[""])?.first().map_or(0, Vec::len);
        if embedder.dimension == 0 {
            return Err(Error::Model {
                reason: "ONNX model reports an empty embedding dimension".into(),
            });
        }
        tracing::debug!(
            model = MODEL_FAMILY,
            threads = cfg.effective_threads(),
            dim = embedder.dimension,
            "loaded ONNX embedder"
        );
        Ok(embedder)
    }

    /// One forward pass over a tokenised batch on `session`: one vector per row.
    fn run(&self, session: &Mutex<Session>, batch: TokenBatch) -> Result<Vec<Vec<f32>>> {
        let TokenBatch {
            rows,
            seq_len,
            input_ids,
            attention_mask,
            token_type_ids,
        } = batch;
        let shape = [rows, seq_len];
        // The graph reads 32-bit ids; token ids and masks fit.
        let tensor = |data: &[i64]| {
            let data: Vec<i32> = data.iter().map(|&v| v as i32).collect();
            Tensor::from_array((shape, data)).map_err(|e| model_err("cannot build input tensor", e))
        };
        let inputs = vec![
            ("input_ids", tensor(&input_ids)?),
            ("token_type_ids", tensor(&token_type_ids)?),
            ("attention_mask", tensor(&attention_mask)?),
        ];
        let mut session = session
            .lock()
            .map_err(|_| Error::internal("ONNX session lock poisoned"))?;
        let outputs = session
            .run(inputs)
            .map_err(|e| model_err("ONNX inference failed", e))?;
        let value = outputs.get(OUTPUT).ok_or_else(|| Error::Model {
            reason: format!("ONNX output `{OUTPUT}` missing"),
        })?;
        let (out_shape, hidden) = value
            .try_extract_tensor::<f32>()
            .map_err(|e| model_err("ONNX output is not an f32 tensor", e))?;
        let dims: Vec<usize> = out_shape
            .iter()
            .map(|&d| usize::try_from(d).unwrap_or(0))
            .collect();
        if dims.len() != 3 || dims[0] != rows || dims[1] != seq_len {
            return Err(Error::Model {
                reason: format!(
                    "ONNX output shape {dims:?} does not match the batch [{rows}, {seq_len}, _]"
                ),
            });
        }
        mean_pool_normalized(PoolingInput {
            hidden,
            mask: &attention_mask,
            rows,
            seq_len,
            dim: dims[2],
        })
    }

    /// Runs `passes` of `tokens` one by one on `session`: each row's vector, by row index.
    fn run_share(
        &self,
        session: &Mutex<Session>,
        tokens: &TokenBatch,
        passes: Vec<Vec<usize>>,
    ) -> Result<Placed> {
        let mut out = Vec::new();
        for rows in passes {
            let vectors = self.run(session, take_rows(tokens, &rows))?;
            if vectors.len() != rows.len() {
                return Err(Error::Model {
                    reason: format!(
                        "model returned {} vectors for {} texts",
                        vectors.len(),
                        rows.len()
                    ),
                });
            }
            out.extend(rows.into_iter().zip(vectors));
        }
        Ok(out)
    }

    /// The session for a call cut into `passes`: the narrow one for a single small pass (a
    /// query), the wide one for anything else.
    fn session_for(&self, tokens: &TokenBatch, passes: &[Vec<usize>]) -> Result<&Mutex<Session>> {
        match (&self.narrow, passes) {
            (Some(narrow), [rows]) if rows.len() * row_len(tokens, rows) <= NARROW_MAX_TOKENS => {
                self.session(narrow)
            }
            _ => self.session(&self.wide),
        }
    }

    /// `lazy`'s session, made now if this is its first use. Two threads may both make it; one
    /// is kept. The graph is dropped once every session exists.
    fn session<'a>(&'a self, lazy: &'a LazySession) -> Result<&'a Mutex<Session>> {
        if let Some(s) = lazy.cell.get() {
            return Ok(s);
        }
        let lock = || {
            self.maker
                .lock()
                .map_err(|_| Error::internal("ONNX session maker lock poisoned"))
        };
        let maker = lock()?.clone().ok_or_else(|| {
            Error::internal("an ONNX session was not made before its graph was dropped")
        })?;
        let session = build_session(&maker, lazy.threads)?;
        let s = lazy.cell.get_or_init(|| Mutex::new(session));
        let all = std::iter::once(&self.wide)
            .chain(&self.narrow)
            .chain(&self.lanes)
            .all(|l| l.cell.get().is_some());
        if all {
            *lock()? = None;
        }
        Ok(s)
    }
}

/// The longest of `rows` in tokens.
fn row_len(tokens: &TokenBatch, rows: &[usize]) -> usize {
    let width = tokens.seq_len;
    rows.iter()
        .map(|&r| {
            tokens.attention_mask[r * width..(r + 1) * width]
                .iter()
                .filter(|&&m| m != 0)
                .count()
        })
        .max()
        .unwrap_or(0)
}

impl Embedder for OnnxEmbedder {
    fn model_id(&self) -> &str {
        &self.model_id
    }

    fn dimension(&self) -> usize {
        self.dimension
    }

    /// Texts are tokenised, ordered by length and cut into passes of at most `batch_size` texts
    /// and `MAX_BATCH_TOKENS` tokens that pad little (see `plan_passes`), so the working
    /// memory is bounded and little of the work is padding.
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
        let mut out: Vec<Vec<f32>> = Vec::with_capacity(texts.len());
        // Tokenised a slab at a time, so a huge call does not hold every padded row at once.
        for slab in texts.chunks(TOKENISE_SLAB) {
            let tokens = self.tokenizer.encode(slab)?;
            let mut slots: Vec<Option<Vec<f32>>> = vec![None; slab.len()];
            let passes = plan_passes(&tokens, self.batch_size, MAX_BATCH_TOKENS);
            // Several passes: one per single-threaded session at a time, on threads of their
            // own, instead of each pass split across the intra-op threads of one session (the
            // calling thread did two thirds of that work and waited for the other third).
            if !self.lanes.is_empty() && passes.len() >= 2 {
                let sessions: Vec<&Mutex<Session>> = self
                    .lanes
                    .iter()
                    .map(|l| self.session(l))
                    .collect::<Result<_>>()?;
                let shares = share_passes(&tokens, passes, sessions.len());
                let results: Vec<Result<Placed>> = std::thread::scope(|sc| {
                    let mut work = sessions.iter().zip(shares);
                    let first = work.next();
                    let handles: Vec<_> = work
                        .map(|(session, share)| {
                            let tokens = &tokens;
                            sc.spawn(move || self.run_share(session, tokens, share))
                        })
                        .collect();
                    let mut out = Vec::with_capacity(handles.len() + 1);
                    if let Some((session, share)) = first {
                        out.push(self.run_share(session, &tokens, share));
                    }
                    for h in handles {
                        out.push(h.join().unwrap_or_else(|_| {
                            Err(Error::internal("an embedding thread panicked"))
                        }));
                    }
                    out
                });
                for r in results {
                    for (row, v) in r? {
                        slots[row] = Some(v);
                    }
                }
            } else {
                let session = self.session_for(&tokens, &passes)?;
                for (row, v) in self.run_share(session, &tokens, passes)? {
                    slots[row] = Some(v);
                }
            }
            for v in slots {
                out.push(v.ok_or_else(|| Error::internal("a text was left out of every pass"))?);
            }
        }
        Ok(out)
    }
}

/// Texts tokenised together at most (padded to the longest of them until planned into passes).
const TOKENISE_SLAB: usize = 1024;

/// What one pass costs beyond its tokens, in tokens: the fixed work of a forward pass (thread
/// wake-ups, tensor set-up, pooling). Measured on MiniLM int8 on two cores, a pass costs roughly
/// the same as 20–30 more tokens.
const PASS_COST_TOKENS: usize = 32;

/// Row indices of `tokens`, longest first, cut into passes of at most `max_rows` rows whose
/// padded size (rows × the longest row) stays within `max_tokens` (a row longer than that goes
/// alone). The cut minimises the padded tokens computed plus [`PASS_COST_TOKENS`] per pass, so
/// a few long texts do not pad many short ones to their length.
fn plan_passes(tokens: &TokenBatch, max_rows: usize, max_tokens: usize) -> Vec<Vec<usize>> {
    let len = |r: usize| {
        tokens.attention_mask[r * tokens.seq_len..(r + 1) * tokens.seq_len]
            .iter()
            .filter(|&&m| m != 0)
            .count()
    };
    let lens: Vec<usize> = (0..tokens.rows).map(len).collect();
    let mut order: Vec<usize> = (0..tokens.rows).collect();
    order.sort_by_key(|&r| std::cmp::Reverse(lens[r]));
    let n = order.len();
    // best[i]: the cheapest cut of order[i..] as (cost, end of its first pass).
    let mut best = vec![(0usize, n); n + 1];
    for i in (0..n).rev() {
        let longest = lens[order[i]];
        best[i] = (usize::MAX, i + 1);
        for j in i + 1..=n.min(i + max_rows.max(1)) {
            if j > i + 1 && (j - i) * longest > max_tokens {
                break;
            }
            let cost = PASS_COST_TOKENS + (j - i) * longest + best[j].0;
            if cost < best[i].0 {
                best[i] = (cost, j);
            }
        }
    }
    let mut passes = Vec::new();
    let mut i = 0;
    while i < n {
        let j = best[i].1;
        passes.push(order[i..j].to_vec());
        i = j;
    }
    passes
}

/// Vectors with the index of the row (text) each belongs to.
type Placed = Vec<(usize, Vec<f32>)>;

/// `passes` dealt out to `n` sessions so each gets about the same padded tokens (largest pass
/// first, each to the least loaded share).
fn share_passes(tokens: &TokenBatch, passes: Vec<Vec<usize>>, n: usize) -> Vec<Vec<Vec<usize>>> {
    let mut costed: Vec<(usize, Vec<usize>)> = passes
        .into_iter()
        .map(|rows| (PASS_COST_TOKENS + rows.len() * row_len(tokens, &rows), rows))
        .collect();
    costed.sort_by_key(|(cost, _)| std::cmp::Reverse(*cost));
    let mut shares: Vec<(usize, Vec<Vec<usize>>)> = vec![(0, Vec::new()); n.max(1)];
    for (cost, rows) in costed {
        if let Some(least) = shares.iter_mut().min_by_key(|(load, _)| *load) {
            least.0 += cost;
            least.1.push(rows);
        }
    }
    shares.into_iter().map(|(_, passes)| passes).collect()
}

/// The given rows of a tokenised batch, padded to the longest of them.
fn take_rows(tokens: &TokenBatch, rows: &[usize]) -> TokenBatch {
    let width = tokens.seq_len;
    let seq_len = row_len(tokens, rows);
    let pick = |m: &[i64]| -> Vec<i64> {
        rows.iter()
            .flat_map(|&r| m[r * width..r * width + seq_len].iter().copied())
            .collect()
    };
    TokenBatch {
        rows: rows.len(),
        seq_len,
        input_ids: pick(&tokens.input_ids),
        attention_mask: pick(&tokens.attention_mask),
        token_type_ids: pick(&tokens.token_type_ids),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A call of several passes runs on the lanes only: with the short-call session held (as a
    /// query in progress holds it), it still completes, so a query never waits for that lock
    /// behind another caller's bulk passes. Needs the model files (`scripts/test.sh` installs
    /// them into `MNEMO_MODELS_DIR`, default `<workspace>/models`).
    #[test]
    fn bulk_calls_never_take_the_short_call_session() {
        let dir = std::env::var_os("MNEMO_MODELS_DIR")
            .map(std::path::PathBuf::from)
            .unwrap_or_else(|| {
                std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../models")
            });
        let mut cfg = EmbedderConfig::new(crate::EmbedderBackend::Onnx, dir);
        cfg.threads = Some(2);
        cfg.batch_size = 32;
        let e = OnnxEmbedder::load(&cfg).expect("the ONNX model files are installed");
        let narrow = e
            .session(
                e.narrow
                    .as_ref()
                    .expect("two threads make a short-call session"),
            )
            .unwrap();
        let held = narrow.lock().unwrap();
        let texts: Vec<String> = (0..200)
            .map(|i| format!("sentence {i} about bees, honey and the hive"))
            .collect();
        let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::scope(|s| {
            s.spawn(|| tx.send(e.embed(&refs).map(|v| v.len())).unwrap());
            // A guard against hanging, not a timing: the call needs no lock the test holds.
            let got = rx.recv_timeout(std::time::Duration::from_secs(300));
            drop(held);
            let n = got
                .expect("the bulk call finished while the short-call session was held")
                .unwrap();
            assert_eq!(n, 200);
        });
    }

    /// A tokenised batch whose rows have the given lengths (ids = row number + 1).
    fn batch(lens: &[usize]) -> TokenBatch {
        let seq_len = lens.iter().copied().max().unwrap_or(0);
        let mut b = TokenBatch {
            rows: lens.len(),
            seq_len,
            input_ids: vec![0; lens.len() * seq_len],
            attention_mask: vec![0; lens.len() * seq_len],
            token_type_ids: vec![0; lens.len() * seq_len],
        };
        for (r, &l) in lens.iter().enumerate() {
            for t in 0..l {
                b.input_ids[r * seq_len + t] = r as i64 + 1;
                b.attention_mask[r * seq_len + t] = 1;
            }
        }
        b
    }

    #[test]
    fn shares_hold_every_pass_once_and_balance_the_tokens() {
        let lens: Vec<usize> = (0..200).map(|i| 5 + (i * 53) % 90).collect();
        let b = batch(&lens);
        let passes = plan_passes(&b, 32, 1024);
        let mut expected: Vec<Vec<usize>> = passes.clone();
        let shares = share_passes(&b, passes, 2);
        assert_eq!(shares.len(), 2);
        let mut got: Vec<Vec<usize>> = shares.iter().flatten().cloned().collect();
        got.sort();
        expected.sort();
        assert_eq!(got, expected);
        let load = |share: &[Vec<usize>]| -> usize {
            share
                .iter()
                .map(|rows| PASS_COST_TOKENS + rows.len() * row_len(&b, rows))
                .sum()
        };
        let (a, c) = (load(&shares[0]), load(&shares[1]));
        let largest = shares
            .iter()
            .flatten()
            .map(|rows| PASS_COST_TOKENS + rows.len() * row_len(&b, rows))
            .max()
            .unwrap();
        assert!(a.abs_diff(c) <= largest, "{a} vs {c}");
        // One share per session even with fewer passes than sessions.
        let one = plan_passes(&batch(&[4]), 32, 1024);
        let shares = share_passes(&batch(&[4]), one, 3);
        assert_eq!(shares.iter().filter(|s| !s.is_empty()).count(), 1);
    }

    #[test]
    fn passes_cover_every_row_once_within_the_bounds() {
        let lens: Vec<usize> = (0..300).map(|i| 3 + (i * 37) % 120).collect();
        let b = batch(&lens);
        let passes = plan_passes(&b, 32, 1024);
        let mut seen: Vec<usize> = passes.iter().flatten().copied().collect();
        seen.sort_unstable();
        assert_eq!(seen, (0..lens.len()).collect::<Vec<_>>());
        for p in &passes {
            let longest = p.iter().map(|&r| lens[r]).max().unwrap();
            assert!(p.len() <= 32, "{} rows", p.len());
            assert!(p.len() == 1 || p.len() * longest <= 1024, "{p:?}");
        }
    }

    #[test]
    fn a_long_text_does_not_pad_short_ones_and_an_oversized_one_goes_alone() {
        // One 250-token text among twenty short ones: padding them all to 250 would compute
        // 5,250 tokens; the plan keeps the long one apart.
        let mut lens = vec![250];
        lens.extend(std::iter::repeat_n(10, 20));
        let passes = plan_passes(&batch(&lens), 32, 200);
        assert_eq!(passes[0], vec![0]);
        assert_eq!(passes.len(), 2, "{passes:?}");
        let b = take_rows(&batch(&lens), &passes[1]);
        assert_eq!((b.rows, b.seq_len), (20, 10));
    }

    #[test]
    fn taken_rows_keep_their_tokens_and_pad_to_the_longest_taken() {
        let b = batch(&[2, 5, 3]);
        let t = take_rows(&b, &[2, 0]);
        assert_eq!((t.rows, t.seq_len), (2, 3));
        assert_eq!(t.input_ids, vec![3, 3, 3, 1, 1, 0]);
        assert_eq!(t.attention_mask, vec![1, 1, 1, 1, 1, 0]);
    }
}
