//! [`CandleEmbedder`]: the f32 safetensors weights of all-MiniLM-L6-v2 run by candle's BERT on the
//! CPU. This is the exact path: it reproduces sentence-transformers up to float rounding.

use crate::config::{embed_in_chunks, EmbedderConfig};
use crate::pooling::{mean_pool_normalized, PoolingInput};
use crate::tokenize::{TextTokenizer, TokenBatch};
use crate::{model_err, MAX_SEQ_LEN};
use candle_core::{DType, Device, Tensor};
use candle_nn::VarBuilder;
use candle_transformers::models::bert::{BertModel, Config};
use mnemo_core::{Embedder, Error, Result};

/// Embeds with candle's BERT implementation in f32.
pub struct CandleEmbedder {
    model: BertModel,
    tokenizer: TextTokenizer,
    device: Device,
    pool: rayon::ThreadPool,
    dimension: usize,
    batch_size: usize,
    model_id: String,
}

impl CandleEmbedder {
    /// The `model_id` this backend reports.
    pub const MODEL_ID: &'static str = "all-MiniLM-L6-v2/candle-f32";

    /// Loads tokenizer, `config.json` and `model.safetensors` from `cfg.paths`. Matrix work runs
    /// on a private pool of `cfg.effective_threads()` threads.
    pub fn load(cfg: &EmbedderConfig) -> Result<Self> {
        let paths = &cfg.paths;
        let tokenizer = TextTokenizer::from_file(&paths.tokenizer, MAX_SEQ_LEN)?;
        let config_text = std::fs::read_to_string(&paths.config)
            .map_err(|e| model_err(&format!("cannot read {}", paths.config.display()), e))?;
        let config: Config = serde_json::from_str(&config_text)
            .map_err(|e| model_err(&format!("bad BERT config {}", paths.config.display()), e))?;
        let weights = std::fs::read(&paths.safetensors)
            .map_err(|e| model_err(&format!("cannot read {}", paths.safetensors.display()), e))?;
        let device = Device::Cpu;
        let vb =
            VarBuilder::from_buffered_safetensors(weights, DType::F32, &device).map_err(|e| {
                model_err(
                    &format!("bad safetensors file {}", paths.safetensors.display()),
                    e,
                )
            })?;
        let model = BertModel::load(vb, &config)
            .map_err(|e| model_err("cannot build the BERT model", e))?;
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(cfg.effective_threads())
            .thread_name(|i| format!("mnemo-candle-{i}"))
            .build()
            .map_err(|e| model_err("cannot start the candle thread pool", e))?;
        if config.hidden_size == 0 {
            return Err(Error::Model {
                reason: "BERT config has hidden_size 0".into(),
            });
        }
        Ok(Self {
            model,
            tokenizer,
            device,
            pool,
            dimension: config.hidden_size,
            batch_size: cfg.effective_batch_size(),
            model_id: Self::MODEL_ID.to_string(),
        })
    }

    fn embed_batch(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
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
        let hidden = self
            .pool
            .install(|| self.forward(rows, seq_len, input_ids, &attention_mask, token_type_ids))?;
        mean_pool_normalized(PoolingInput {
            hidden: &hidden,
            mask: &attention_mask,
            rows,
            seq_len,
            dim: self.dimension,
        })
    }

    /// Runs BERT and returns the last hidden state flattened to `rows * seq_len * dim` floats.
    fn forward(
        &self,
        rows: usize,
        seq_len: usize,
        input_ids: Vec<i64>,
        attention_mask: &[i64],
        token_type_ids: Vec<i64>,
    ) -> Result<Vec<f32>> {
        let err = |e: candle_core::Error| model_err("candle inference failed", e);
        let ids = Tensor::from_vec(input_ids, (rows, seq_len), &self.device).map_err(err)?;
        let types = Tensor::from_vec(token_type_ids, (rows, seq_len), &self.device).map_err(err)?;
        let mask =
            Tensor::from_slice(attention_mask, (rows, seq_len), &self.device).map_err(err)?;
        let out = self.model.forward(&ids, &types, Some(&mask)).map_err(err)?;
        let dims = out.dims().to_vec();
        if dims != [rows, seq_len, self.dimension] {
            return Err(Error::Model {
                reason: format!(
                    "BERT output shape {dims:?}, expected [{rows}, {seq_len}, {}]",
                    self.dimension
                ),
            });
        }
        out.flatten_all()
            .and_then(|t| t.to_vec1::<f32>())
            .map_err(err)
    }
}

impl Embedder for CandleEmbedder {
    fn model_id(&self) -> &str {
        &self.model_id
    }

    fn dimension(&self) -> usize {
        self.dimension
    }

    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
        embed_in_chunks(texts, self.batch_size, |chunk| self.embed_batch(chunk))
    }
}
