//! [`OnnxEmbedder`]: the int8 ONNX export of all-MiniLM-L6-v2 run by ONNX Runtime.
//!
//! ONNX Runtime is loaded at run time from a shared library (the `load-dynamic` feature of `ort`),
//! and a process can load it only once. The first successful load wins: later loads reuse that
//! library and its environment, with a warning if they asked for a different file.

use crate::config::EmbedderConfig;
use crate::pooling::{mean_pool_normalized, PoolingInput};
use crate::tokenize::{TextTokenizer, TokenBatch};
use crate::{model_err, MAX_SEQ_LEN, MODEL_FAMILY};
use mnemo_core::{Embedder, Error, Result};
use ort::environment::Environment;
use ort::session::builder::{GraphOptimizationLevel, PrepackedWeights};
use ort::session::Session;
use ort::value::Tensor;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};

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
/// for the life of the process: bounding it by tokens, not texts, keeps a batch of long texts
/// (context windows, documents) from growing it tenfold.
pub const MAX_BATCH_TOKENS: usize = 2048;

/// A session over `model` with `threads` intra-op threads, one inter-op thread and no spinning:
/// spin-waiting worker threads fall apart when the CPU is shared with other work. Sessions of
/// one embedder share `prepacked`, so the weights are laid out for the kernels once.
fn build_session(
    env: &Environment,
    model: &Path,
    threads: usize,
    prepacked: &PrepackedWeights,
) -> Result<Session> {
    let opt =
        |e: ort::Error<ort::session::builder::SessionBuilder>| model_err("ONNX session options", e);
    Session::builder(env)
        .map_err(|e| model_err("ONNX session builder", e))?
        .with_optimization_level(match std::env::var("EXP_OPT").as_deref() {
            Ok("0") => GraphOptimizationLevel::Disable,
            Ok("1") => GraphOptimizationLevel::Level1,
            Ok("2") => GraphOptimizationLevel::Level2,
            _ => GraphOptimizationLevel::Level3,
        })
        .map_err(opt)?
        .with_prepacked_weights(prepacked)
        .map_err(opt)?
        .with_prepacking(std::env::var("EXP_PREPACK").as_deref() != Ok("0"))
        .map_err(opt)?
        .with_memory_pattern(std::env::var("EXP_MEMPAT").as_deref() != Ok("0"))
        .map_err(opt)?
        .with_execution_providers([ort::ep::CPU::default()
            .with_arena_allocator(std::env::var("EXP_ARENA").as_deref() != Ok("0"))
            .build()])
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
        .commit_from_file(model)
        .map_err(|e| model_err(&format!("cannot load ONNX model {}", model.display()), e))
}

/// Embeds with the int8 ONNX model through ONNX Runtime on the CPU.
pub struct OnnxEmbedder {
    /// `threads` intra-op threads: calls that fit one batch (a query, a small add).
    session: Mutex<Session>,
    /// One single-threaded session per thread, made on the first call that spans several
    /// batches: whole batches side by side keep every core busy without the intra-op threads'
    /// barriers (measured ~7 % more sentences/s on 2 cores than one two-thread session).
    workers: OnceLock<Vec<Mutex<Session>>>,
    env: Environment,
    prepacked: PrepackedWeights,
    model_path: PathBuf,
    threads: usize,
    tokenizer: TextTokenizer,
    model_id: String,
    dimension: usize,
    batch_size: usize,
    wants_token_types: bool,
    output_name: String,
}

impl OnnxEmbedder {
    /// The `model_id` this backend reports.
    pub const MODEL_ID: &'static str = "all-MiniLM-L6-v2/onnx-int8";

    /// Loads the tokenizer, ONNX Runtime and the model named by `cfg.paths`.
    ///
    /// Uses `cfg.effective_threads()` intra-op threads, one inter-op thread and no spinning:
    /// spin-waiting worker threads fall apart when the CPU is shared with other work.
    pub fn load(cfg: &EmbedderConfig) -> Result<Self> {
        let paths = &cfg.paths;
        let hwm = || {
            std::fs::read_to_string("/proc/self/status")
                .unwrap()
                .lines()
                .find(|l| l.starts_with("VmRSS"))
                .unwrap()
                .to_string()
        };
        eprintln!("A {}", hwm());
        let tokenizer = TextTokenizer::from_file(&paths.tokenizer, MAX_SEQ_LEN)?;
        eprintln!("B tokenizer {}", hwm());
        let env = runtime(&paths.effective_onnxruntime())?;
        eprintln!("C runtime {}", hwm());
        let threads = cfg.effective_threads();
        let prepacked = PrepackedWeights::new();
        let session = build_session(&env, &paths.onnx_model, threads, &prepacked)?;
        eprintln!("D session {}", hwm());

        let input_names: Vec<&str> = session.inputs().iter().map(|i| i.name()).collect();
        for required in ["input_ids", "attention_mask"] {
            if !input_names.contains(&required) {
                return Err(Error::Model {
                    reason: format!("ONNX model lacks input `{required}` (it has {input_names:?})"),
                });
            }
        }
        let wants_token_types = input_names.contains(&"token_type_ids");
        let output = session
            .outputs()
            .iter()
            .find(|o| o.name() == "last_hidden_state")
            .or_else(|| session.outputs().first())
            .ok_or_else(|| Error::Model {
                reason: "ONNX model has no outputs".into(),
            })?;
        let output_name = output.name().to_string();
        let declared_dim = output
            .dtype()
            .tensor_shape()
            .and_then(|s| s.last().copied())
            .filter(|&d| d > 0);

        let mut embedder = Self {
            session: Mutex::new(session),
            workers: OnceLock::new(),
            env,
            prepacked,
            model_path: paths.onnx_model.clone(),
            threads,
            tokenizer,
            model_id: Self::MODEL_ID.to_string(),
            dimension: 0,
            batch_size: cfg.effective_batch_size(),
            wants_token_types,
            output_name,
        };
        // Prefer the declared output width; if the export left it symbolic, measure it once.
        embedder.dimension = match declared_dim {
            Some(d) => usize::try_from(d).map_err(|e| model_err("bad output dimension", e))?,
            None => embedder
                .embed_batch(&embedder.session, &[""])?
                .first()
                .map_or(0, Vec::len),
        };
        if embedder.dimension == 0 {
            return Err(Error::Model {
                reason: "ONNX model reports an empty embedding dimension".into(),
            });
        }
        tracing::debug!(
            model = MODEL_FAMILY,
            threads,
            dim = embedder.dimension,
            "loaded ONNX embedder"
        );
        Ok(embedder)
    }

    /// The single-threaded sessions, made once.
    fn workers(&self) -> Result<&[Mutex<Session>]> {
        if let Some(w) = self.workers.get() {
            return Ok(w);
        }
        let made = (0..self.threads)
            .map(|_| build_session(&self.env, &self.model_path, 1, &self.prepacked).map(Mutex::new))
            .collect::<Result<Vec<_>>>()?;
        Ok(self.workers.get_or_init(|| made))
    }

    fn embed_batch(&self, session: &Mutex<Session>, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
        if texts.is_empty() {
            return Ok(Vec::new());
        }
        self.run(session, self.tokenizer.encode(texts)?)
    }

    /// One forward pass over a tokenised batch: one vector per row.
    fn run(&self, session: &Mutex<Session>, batch: TokenBatch) -> Result<Vec<Vec<f32>>> {
        let TokenBatch {
            rows,
            seq_len,
            input_ids,
            attention_mask,
            token_type_ids,
        } = batch;
        let shape = [rows, seq_len];
        let tensor = |data: Vec<i64>| {
            Tensor::from_array((shape, data)).map_err(|e| model_err("cannot build input tensor", e))
        };
        let mut inputs = vec![
            ("input_ids".to_string(), tensor(input_ids)?),
            (
                "attention_mask".to_string(),
                tensor(attention_mask.clone())?,
            ),
        ];
        if self.wants_token_types {
            inputs.push(("token_type_ids".to_string(), tensor(token_type_ids)?));
        }
        let mut session = session
            .lock()
            .map_err(|_| Error::internal("ONNX session lock poisoned"))?;
        let outputs = session
            .run(inputs)
            .map_err(|e| model_err("ONNX inference failed", e))?;
        let value = outputs.get(&self.output_name).ok_or_else(|| Error::Model {
            reason: format!("ONNX output `{}` missing", self.output_name),
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
}

impl Embedder for OnnxEmbedder {
    fn model_id(&self) -> &str {
        &self.model_id
    }

    fn dimension(&self) -> usize {
        self.dimension
    }

    /// Texts are tokenised, ordered by length and grouped into passes of at most `batch_size`
    /// texts and [`MAX_BATCH_TOKENS`] tokens, so a pass pads little and its working memory is
    /// bounded. A call of one pass runs on the multi-threaded session; passes of a larger call
    /// run side by side on single-threaded ones.
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
        let mut out: Vec<Vec<f32>> = Vec::with_capacity(texts.len());
        // Tokenised a slab at a time, so a huge call does not hold every padded row at once.
        for slab in texts.chunks(TOKENISE_SLAB) {
            let tokens = self.tokenizer.encode(slab)?;
            let budget = std::env::var("EXP_BUDGET")
                .ok()
                .and_then(|v| v.parse().ok())
                .unwrap_or(MAX_BATCH_TOKENS);
            let passes = plan_passes(&tokens, self.batch_size, budget);
            let results: Vec<Vec<Vec<f32>>> = if passes.len() == 1
                || self.threads < 2
                || std::env::var("EXP_NOWORKERS").is_ok()
            {
                passes
                    .iter()
                    .map(|rows| self.run(&self.session, take_rows(&tokens, rows)))
                    .collect::<Result<_>>()?
            } else {
                let workers = self.workers()?;
                on_workers(passes.len(), workers.len(), |w, i| {
                    self.run(&workers[w], take_rows(&tokens, &passes[i]))
                })?
            };
            let mut slots: Vec<Option<Vec<f32>>> = vec![None; slab.len()];
            for (rows, vectors) in passes.iter().zip(results) {
                if vectors.len() != rows.len() {
                    return Err(Error::Model {
                        reason: format!(
                            "model returned {} vectors for {} texts",
                            vectors.len(),
                            rows.len()
                        ),
                    });
                }
                for (&r, v) in rows.iter().zip(vectors) {
                    slots[r] = Some(v);
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

/// Row indices of `tokens`, longest first, cut into passes of at most `max_rows` rows whose
/// padded size (rows × the longest row) stays within `max_tokens`. A row longer than the budget
/// goes alone.
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
    let mut passes: Vec<Vec<usize>> = Vec::new();
    let mut current: Vec<usize> = Vec::new();
    for r in order {
        // Longest first, so the pass's first row sets its padded length.
        let longest = current.first().map_or(lens[r], |&f| lens[f]);
        if !current.is_empty()
            && (current.len() >= max_rows.max(1) || (current.len() + 1) * longest > max_tokens)
        {
            passes.push(std::mem::take(&mut current));
        }
        current.push(r);
    }
    if !current.is_empty() {
        passes.push(current);
    }
    passes
}

/// The given rows of a tokenised batch, padded to the longest of them.
fn take_rows(tokens: &TokenBatch, rows: &[usize]) -> TokenBatch {
    let width = tokens.seq_len;
    let seq_len = rows
        .iter()
        .map(|&r| {
            tokens.attention_mask[r * width..(r + 1) * width]
                .iter()
                .filter(|&&m| m != 0)
                .count()
        })
        .max()
        .unwrap_or(0);
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

/// Runs jobs `0..n` on `workers` threads (worker `w` runs `f(w, job)` on the jobs it takes) and
/// returns their results in job order; the first failure stops the others taking more.
fn on_workers<T: Send>(
    n: usize,
    workers: usize,
    f: impl Fn(usize, usize) -> Result<T> + Sync,
) -> Result<Vec<T>> {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let next = AtomicUsize::new(0);
    let mut done: Vec<(usize, Result<T>)> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..workers.clamp(1, n.max(1)))
            .map(|w| {
                let (next, f) = (&next, &f);
                s.spawn(move || {
                    let mut done = Vec::new();
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        if i >= n {
                            break done;
                        }
                        let r = f(w, i);
                        let failed = r.is_err();
                        done.push((i, r));
                        if failed {
                            next.store(n, Ordering::Relaxed);
                            break done;
                        }
                    }
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap_or_default())
            .collect()
    });
    done.sort_by_key(|(i, _)| *i);
    if done.len() != n {
        if let Some((_, Err(e))) = done.into_iter().find(|(_, r)| r.is_err()) {
            return Err(e);
        }
        return Err(Error::internal("an embedding worker stopped early"));
    }
    done.into_iter().map(|(_, r)| r).collect()
}
