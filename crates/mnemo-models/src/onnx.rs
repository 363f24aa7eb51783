//! [`OnnxEmbedder`]: the int8 ONNX export of all-MiniLM-L6-v2 run by ONNX Runtime.
//!
//! ONNX Runtime is loaded at run time from a shared library (the `load-dynamic` feature of `ort`),
//! and a process can load it only once. The first successful load wins: later loads reuse that
//! library and its environment, with a warning if they asked for a different file.

use crate::config::{embed_in_chunks, embed_in_chunks_on, EmbedderConfig};
use crate::pooling::{mean_pool_normalized, PoolingInput};
use crate::tokenize::{TextTokenizer, TokenBatch};
use crate::{model_err, MAX_SEQ_LEN, MODEL_FAMILY};
use mnemo_core::{Embedder, Error, Result};
use ort::environment::Environment;
use ort::session::builder::GraphOptimizationLevel;
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

/// A session over `model` with `threads` intra-op threads, one inter-op thread and no spinning:
/// spin-waiting worker threads fall apart when the CPU is shared with other work.
fn build_session(env: &Environment, model: &Path, threads: usize) -> Result<Session> {
    let opt =
        |e: ort::Error<ort::session::builder::SessionBuilder>| model_err("ONNX session options", e);
    Session::builder(env)
        .map_err(|e| model_err("ONNX session builder", e))?
        .with_optimization_level(GraphOptimizationLevel::Level3)
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
        let tokenizer = TextTokenizer::from_file(&paths.tokenizer, MAX_SEQ_LEN)?;
        let env = runtime(&paths.effective_onnxruntime())?;
        let threads = cfg.effective_threads();
        let session = build_session(&env, &paths.onnx_model, threads)?;

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
            .map(|_| build_session(&self.env, &self.model_path, 1).map(Mutex::new))
            .collect::<Result<Vec<_>>>()?;
        Ok(self.workers.get_or_init(|| made))
    }

    fn embed_batch(&self, session: &Mutex<Session>, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
        if texts.is_empty() {
            return Ok(Vec::new());
        }
        let TokenBatch {
            rows,
            seq_len,
            input_ids,
            attention_mask,
            token_type_ids,
        } = self.tokenizer.encode(texts)?;
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

    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
        if self.threads < 2 || texts.len() <= self.batch_size {
            return embed_in_chunks(texts, self.batch_size, |chunk| {
                self.embed_batch(&self.session, chunk)
            });
        }
        let workers = self.workers()?;
        embed_in_chunks_on(texts, self.batch_size, workers.len(), |w, chunk| {
            self.embed_batch(&workers[w], chunk)
        })
    }
}
