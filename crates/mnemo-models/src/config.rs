//! Where the model files live, which backend to run, and [`load_embedder`], the one entry point
//! that turns a configuration into a ready [`Embedder`] — local (ONNX, candle) or remote
//! (an OpenAI-compatible endpoint).

use crate::{OnnxEmbedder, OpenAiEmbedder, OpenAiEmbedderConfig, WeightCoding, DEFAULT_BATCH_SIZE};
use mnemo_core::{Embedder, Error, Result};
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::Arc;

/// Sub-folder of the models directory holding the reference model (tokenizer, config, weights).
pub(crate) const MINILM_DIR: &str = "all-minilm-l6-v2";
/// Sub-folder holding the int8 ONNX export.
/// Sub-folder holding the ONNX Runtime shared library.
pub(crate) const ORT_DIR: &str = "onnxruntime";

/// The platform file name of the ONNX Runtime library (`libonnxruntime.so` on Linux).
pub(crate) fn ort_library_file_name() -> String {
    format!(
        "{}onnxruntime{}",
        std::env::consts::DLL_PREFIX,
        std::env::consts::DLL_SUFFIX
    )
}

/// Paths of every file the embedders read. Build with [`ModelPaths::in_dir`] and override fields
/// as needed; each field is public.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelPaths {
    /// `tokenizer.json`, shared by both backends.
    pub tokenizer: PathBuf,
    /// BERT `config.json`, shared by both backends.
    pub config: PathBuf,
    /// f32 `model.safetensors`, shared by both backends (the ONNX backend builds its int8 graph
    /// from it at load).
    pub safetensors: PathBuf,
    /// ONNX Runtime shared library (ONNX backend). The `ORT_DYLIB_PATH` environment variable, when
    /// set and non-empty, takes precedence at load time.
    pub onnxruntime: PathBuf,
}

impl ModelPaths {
    /// The layout written by [`install_models`](crate::install_models) into `dir`.
    pub fn in_dir(dir: impl AsRef<Path>) -> Self {
        let dir = dir.as_ref();
        let minilm = dir.join(MINILM_DIR);
        Self {
            tokenizer: minilm.join("tokenizer.json"),
            config: minilm.join("config.json"),
            safetensors: minilm.join("model.safetensors"),
            onnxruntime: dir.join(ORT_DIR).join(ort_library_file_name()),
        }
    }

    /// The ONNX Runtime library actually used: `ORT_DYLIB_PATH` if set, else [`Self::onnxruntime`].
    pub fn effective_onnxruntime(&self) -> PathBuf {
        match std::env::var_os("ORT_DYLIB_PATH") {
            Some(p) if !p.is_empty() => PathBuf::from(p),
            _ => self.onnxruntime.clone(),
        }
    }

    /// The files `backend` needs, labelled for error messages (none for a remote backend).
    pub fn required_for(&self, backend: EmbedderBackend) -> Vec<(&'static str, PathBuf)> {
        match backend {
            EmbedderBackend::Onnx => vec![
                ("tokenizer", self.tokenizer.clone()),
                ("model config", self.config.clone()),
                ("safetensors weights", self.safetensors.clone()),
                ("ONNX Runtime library", self.effective_onnxruntime()),
            ],
            EmbedderBackend::Candle => vec![
                ("tokenizer", self.tokenizer.clone()),
                ("model config", self.config.clone()),
                ("safetensors weights", self.safetensors.clone()),
            ],
            EmbedderBackend::OpenAi => Vec::new(),
        }
    }

    /// Fails with `Unavailable` naming the first missing file and the command that installs it.
    pub fn check(&self, backend: EmbedderBackend) -> Result<()> {
        for (label, path) in self.required_for(backend) {
            if !path.is_file() {
                return Err(Error::Unavailable {
                    component: format!("embedding model ({backend})"),
                    reason: format!(
                        "{label} file {} is missing; run `mnemo models install` to download the models",
                        path.display()
                    ),
                });
            }
        }
        Ok(())
    }
}

impl Default for ModelPaths {
    /// The layout under `./models`.
    fn default() -> Self {
        ModelPaths::in_dir("models")
    }
}

/// Which implementation runs the model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum EmbedderBackend {
    /// int8 ONNX through ONNX Runtime: fast, vectors within ~1% of the reference.
    #[default]
    Onnx,
    /// f32 safetensors through candle: slower, reproduces sentence-transformers.
    Candle,
    /// Any OpenAI-compatible `/embeddings` endpoint; settings in [`EmbedderConfig::openai`].
    OpenAi,
}

impl EmbedderBackend {
    pub fn as_str(self) -> &'static str {
        match self {
            EmbedderBackend::Onnx => "onnx",
            EmbedderBackend::Candle => "candle",
            EmbedderBackend::OpenAi => "openai",
        }
    }
}

impl std::fmt::Display for EmbedderBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for EmbedderBackend {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self> {
        match s.trim().to_ascii_lowercase().as_str() {
            "onnx" => Ok(EmbedderBackend::Onnx),
            "candle" => Ok(EmbedderBackend::Candle),
            "openai" => Ok(EmbedderBackend::OpenAi),
            other => Err(Error::invalid(
                "embedder backend",
                format!("`{other}` is not one of `onnx`, `candle`, `openai`"),
            )),
        }
    }
}

/// Everything [`load_embedder`] needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EmbedderConfig {
    pub backend: EmbedderBackend,
    pub paths: ModelPaths,
    /// Compute threads; `None` means the machine's available parallelism.
    pub threads: Option<usize>,
    /// Texts per forward pass; larger inputs are split. Zero is treated as one.
    pub batch_size: usize,
    /// Endpoint, model and key of the `OpenAi` backend (ignored by the local ones).
    pub openai: Option<OpenAiEmbedderConfig>,
    /// How the `Onnx` backend hands its int8 weights to ONNX Runtime; `None` means the fastest
    /// coding that sums exactly on this CPU ([`WeightCoding::for_this_cpu`]). Every coding gives
    /// the same vectors where it is exact; forcing one is for tests and measurements.
    pub onnx_weights: Option<WeightCoding>,
}

impl EmbedderConfig {
    /// A configuration for `backend` reading the installed layout under `models_dir`.
    pub fn new(backend: EmbedderBackend, models_dir: impl AsRef<Path>) -> Self {
        Self {
            backend,
            paths: ModelPaths::in_dir(models_dir),
            threads: None,
            batch_size: DEFAULT_BATCH_SIZE,
            openai: None,
            onnx_weights: None,
        }
    }

    /// A configuration for an OpenAI-compatible endpoint (no model files are read).
    pub fn openai(remote: OpenAiEmbedderConfig) -> Self {
        Self {
            backend: EmbedderBackend::OpenAi,
            paths: ModelPaths::default(),
            threads: None,
            batch_size: DEFAULT_BATCH_SIZE,
            openai: Some(remote),
            onnx_weights: None,
        }
    }

    /// The thread count to use: the configured one, else available parallelism (at least 1).
    pub fn effective_threads(&self) -> usize {
        self.threads
            .filter(|&n| n > 0)
            .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
    }

    pub(crate) fn effective_batch_size(&self) -> usize {
        self.batch_size.max(1)
    }
}

/// The candle backend chosen in a build without it: a configuration error that says how to fix it.
#[cfg(not(feature = "candle"))]
fn no_candle() -> Error {
    Error::invalid(
        "embedder",
        "this mnemo was built without the candle backend; rebuild it with the cargo feature \
         `candle` (e.g. `cargo install --locked --features candle --path crates/mnemo-cli`) or \
         use `onnx`",
    )
}

/// Loads the configured backend. Missing files give `Error::Unavailable` saying which file and
/// to run `mnemo models install`; a file that exists but cannot be loaded gives `Error::Model`.
/// The remote backend probes its endpoint here (see [`OpenAiEmbedder::new`]); without its
/// settings it is invalid input.
pub fn load_embedder(cfg: &EmbedderConfig) -> Result<Arc<dyn Embedder>> {
    #[cfg(not(feature = "candle"))]
    if cfg.backend == EmbedderBackend::Candle {
        return Err(no_candle());
    }
    cfg.paths.check(cfg.backend)?;
    Ok(match cfg.backend {
        EmbedderBackend::Onnx => Arc::new(OnnxEmbedder::load(cfg)?),
        #[cfg(feature = "candle")]
        EmbedderBackend::Candle => Arc::new(crate::CandleEmbedder::load(cfg)?),
        #[cfg(not(feature = "candle"))]
        EmbedderBackend::Candle => return Err(no_candle()),
        EmbedderBackend::OpenAi => {
            let remote = cfg.openai.clone().ok_or_else(|| {
                Error::invalid(
                    "embedder",
                    "the openai backend needs a base URL and a model name",
                )
            })?;
            Arc::new(OpenAiEmbedder::new(remote)?)
        }
    })
}

/// Splits `texts` into chunks of `batch_size`, runs `f` on each and returns the vectors in the
/// order of `texts`, checking that every chunk produced one vector per text.
///
/// When there is more than one chunk, texts are grouped by length first (longest first, as
/// sentence-transformers does): a batch is padded to its longest text, so mixing a long text
/// with short ones makes the model compute over padding.
pub(crate) fn embed_in_chunks(
    texts: &[&str],
    batch_size: usize,
    f: impl Fn(&[&str]) -> Result<Vec<Vec<f32>>> + Sync,
) -> Result<Vec<Vec<f32>>> {
    embed_in_chunks_on(texts, batch_size, 1, |_, chunk| f(chunk))
}

/// Like [`embed_in_chunks`], with the chunks shared out among `workers` threads: worker `w`
/// runs `f(w, chunk)` on the chunks it takes, so each worker can own a model instance.
pub(crate) fn embed_in_chunks_on(
    texts: &[&str],
    batch_size: usize,
    workers: usize,
    f: impl Fn(usize, &[&str]) -> Result<Vec<Vec<f32>>> + Sync,
) -> Result<Vec<Vec<f32>>> {
    let batch_size = batch_size.max(1);
    let mut order: Vec<usize> = (0..texts.len()).collect();
    if texts.len() > batch_size {
        order.sort_by_key(|&i| std::cmp::Reverse(texts[i].len()));
    }
    let chunks: Vec<&[usize]> = order.chunks(batch_size).collect();
    let run = |w: usize, c: &[usize]| -> Result<Vec<Vec<f32>>> {
        let batch: Vec<&str> = c.iter().map(|&i| texts[i]).collect();
        let vectors = f(w, &batch)?;
        if vectors.len() != batch.len() {
            return Err(Error::Model {
                reason: format!(
                    "model returned {} vectors for {} texts",
                    vectors.len(),
                    batch.len()
                ),
            });
        }
        Ok(vectors)
    };
    let workers = workers.clamp(1, chunks.len().max(1));
    let results: Vec<(usize, Result<Vec<Vec<f32>>>)> = if workers == 1 {
        chunks
            .iter()
            .enumerate()
            .map(|(i, c)| (i, run(0, c)))
            .collect()
    } else {
        let next = std::sync::atomic::AtomicUsize::new(0);
        std::thread::scope(|s| {
            let handles: Vec<_> = (0..workers)
                .map(|w| {
                    let (next, chunks, run) = (&next, &chunks, &run);
                    s.spawn(move || {
                        let mut done = Vec::new();
                        loop {
                            let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                            let Some(c) = chunks.get(i) else { break done };
                            let r = run(w, c);
                            let failed = r.is_err();
                            done.push((i, r));
                            if failed {
                                // Let the other workers run out of chunks: the call fails.
                                next.store(chunks.len(), std::sync::atomic::Ordering::Relaxed);
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
        })
    };
    let mut out: Vec<Vec<f32>> = vec![Vec::new(); texts.len()];
    let mut filled = 0;
    for (i, r) in results {
        for (&t, v) in chunks[i].iter().zip(r?) {
            out[t] = v;
            filled += 1;
        }
    }
    if filled != texts.len() {
        return Err(Error::internal(
            "an embedding worker stopped without a result",
        ));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backend_parses_and_prints() {
        assert_eq!(
            "onnx".parse::<EmbedderBackend>().unwrap(),
            EmbedderBackend::Onnx
        );
        assert_eq!(
            " Candle ".parse::<EmbedderBackend>().unwrap(),
            EmbedderBackend::Candle
        );
        assert!("torch".parse::<EmbedderBackend>().is_err());
        assert_eq!(EmbedderBackend::Candle.to_string(), "candle");
        assert_eq!(
            "OpenAI".parse::<EmbedderBackend>().unwrap(),
            EmbedderBackend::OpenAi
        );
    }

    #[test]
    fn layout_under_dir() {
        let p = ModelPaths::in_dir("/m");
        assert_eq!(p.tokenizer, Path::new("/m/all-minilm-l6-v2/tokenizer.json"));
        assert_eq!(
            p.safetensors,
            Path::new("/m/all-minilm-l6-v2/model.safetensors")
        );
        assert!(p.onnxruntime.starts_with("/m/onnxruntime"));
    }

    #[cfg(not(feature = "candle"))]
    #[test]
    fn candle_without_the_feature_is_invalid_input_naming_it() {
        // Said before the files are looked for: the build, not the install, lacks candle.
        let cfg = EmbedderConfig::new(EmbedderBackend::Candle, "/nonexistent/models");
        let err = load_embedder(&cfg).err().expect("must fail");
        assert_eq!(err.kind(), mnemo_core::ErrorKind::InvalidInput);
        assert!(err.to_string().contains("feature `candle`"), "{err}");
    }

    #[test]
    fn missing_files_are_unavailable_with_hint() {
        let cfg = EmbedderConfig::new(EmbedderBackend::Onnx, "/nonexistent/models");
        let err = load_embedder(&cfg).err().expect("must fail");
        assert_eq!(err.kind(), mnemo_core::ErrorKind::Unavailable);
        let msg = err.to_string();
        assert!(
            msg.contains("mnemo models install") && msg.contains("tokenizer.json"),
            "{msg}"
        );
    }

    #[test]
    fn openai_backend_needs_its_settings_and_no_files() {
        let mut cfg = EmbedderConfig::new(EmbedderBackend::OpenAi, "/nonexistent/models");
        let err = load_embedder(&cfg).err().expect("must fail");
        assert_eq!(err.kind(), mnemo_core::ErrorKind::InvalidInput);
        assert!(err.to_string().contains("base URL"), "{err}");
        // With settings, the failure is the endpoint's (nothing listens on port 9), not a
        // missing model file.
        let mut remote = OpenAiEmbedderConfig::new("http://127.0.0.1:9/v1", "m");
        remote.endpoint.max_retries = 0;
        cfg.openai = Some(remote);
        let err = load_embedder(&cfg).err().expect("must fail");
        assert_eq!(err.kind(), mnemo_core::ErrorKind::Unavailable);
        assert!(!err.to_string().contains("mnemo models install"), "{err}");
    }

    #[test]
    fn chunks_group_by_length_and_preserve_order() {
        let texts = ["a", "dddd", "ccc", "bb", "eeeee"];
        let batches = std::sync::Mutex::new(Vec::new());
        let out = embed_in_chunks(&texts, 2, |c| {
            batches
                .lock()
                .unwrap()
                .push(c.iter().map(|t| t.to_string()).collect::<Vec<_>>());
            Ok(c.iter().map(|t| vec![t.len() as f32]).collect())
        })
        .unwrap();
        let batches = batches.into_inner().unwrap();
        assert_eq!(
            out,
            vec![vec![1.0], vec![4.0], vec![3.0], vec![2.0], vec![5.0]]
        );
        assert_eq!(
            batches,
            [vec!["eeeee", "dddd"], vec!["ccc", "bb"], vec!["a"]]
        );
        assert!(embed_in_chunks(&texts, 2, |_| Ok(vec![])).is_err());
        // Shared out among workers: the same vectors in the same order, every worker used, and
        // one failing chunk fails the call.
        let texts: Vec<String> = (0..37).map(|i| "x".repeat(i % 11 + 1)).collect();
        let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
        let used = std::sync::Mutex::new(std::collections::BTreeSet::new());
        let par = embed_in_chunks_on(&refs, 4, 3, |w, c| {
            used.lock().unwrap().insert(w);
            std::thread::sleep(std::time::Duration::from_millis(2));
            Ok(c.iter().map(|t| vec![t.len() as f32]).collect())
        })
        .unwrap();
        let expected: Vec<Vec<f32>> = refs.iter().map(|t| vec![t.len() as f32]).collect();
        assert_eq!(par, expected);
        assert_eq!(used.into_inner().unwrap().len(), 3);
        let err = embed_in_chunks_on(&refs, 4, 3, |_, c| {
            if c.iter().any(|t| t.len() == 5) {
                Err(Error::Model {
                    reason: "boom".into(),
                })
            } else {
                Ok(c.iter().map(|t| vec![t.len() as f32]).collect())
            }
        });
        assert!(err.unwrap_err().to_string().contains("boom"));
        assert!(embed_in_chunks(&[], 2, |_| unreachable!())
            .unwrap()
            .is_empty());
    }
}
