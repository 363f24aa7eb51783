//! [`LlamaChat`]: a GGUF chat model run in-process by llama.cpp (through `llama-cpp-2`), built
//! only with the `llama` feature.
//!
//! The model is loaded once, in [`LlamaChat::new`]; each [`complete`](ChatModel::complete) call
//! renders the messages with the chat template stored in the GGUF (so every model gets its own
//! role markers), creates a KV cache sized for that call, decodes the prompt in one batch and then
//! samples token by token (`sample.rs`): greedily, or with temperature when the request asks for
//! one, after a mild repetition penalty. A request with `json: true` is constrained by a GBNF
//! grammar for one JSON object ([`JSON_OBJECT_GBNF`]), so its text always parses — unless the
//! token budget runs out first, which is an [`Error::ModelOutput`] rather than a silently cut-off
//! object.
//!
//! llama.cpp's backend is process-wide state; it is initialised on first use and kept for the
//! life of the process. Calls on one `LlamaChat` run one at a time: the CPU threads of a call are
//! already all the configured threads, and llama.cpp does not allow creating contexts of one
//! model concurrently.

use llama_cpp_2::context::params::LlamaContextParams;
use llama_cpp_2::llama_backend::LlamaBackend;
use llama_cpp_2::llama_batch::LlamaBatch;
use llama_cpp_2::model::params::LlamaModelParams;
use llama_cpp_2::model::{LlamaChatMessage, LlamaChatTemplate, LlamaModel};
use llama_cpp_2::token::LlamaToken;
use mnemo_core::{
    ChatMessage, ChatModel, ChatRequest, ChatResponse, ChatRole, Error, Result, TokenUsage,
};
use std::io::Read;
use std::num::NonZeroU32;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};

mod sample;

use crate::model_err;
use sample::TokenPicker;

pub use sample::JSON_OBJECT_GBNF;

/// How to load and run a GGUF chat model. Build with [`LlamaConfig::new`]; every field is public.
#[derive(Debug, Clone, PartialEq)]
pub struct LlamaConfig {
    /// The `.gguf` file.
    pub gguf: PathBuf,
    /// Upper bound of prompt plus completion tokens per call. Each call allocates only what it
    /// needs up to this, so a large value costs nothing until a long prompt arrives.
    pub context_size: u32,
    /// CPU threads for prompt processing and generation. Set it to the cores the process may
    /// really use: oversubscribed threads wait on each other and slow decoding down sharply.
    pub threads: u32,
    /// Completion budget when a request does not set `max_tokens`.
    pub max_tokens: u32,
    /// Seed of the sampler when a request sets a temperature above zero.
    pub seed: u32,
    /// Lowers the score of tokens among the last 64 generated ones (1.0: off). Small models
    /// tend to repeat one item forever, which in JSON mode means running out of tokens before
    /// the object closes; a mild penalty makes them move on.
    pub repeat_penalty: f32,
    /// A llama.cpp template name (`chatml`, `llama3`, …) or template text used instead of the one
    /// in the GGUF; `None` uses the model's own.
    pub chat_template: Option<String>,
}

impl LlamaConfig {
    /// Defaults: a 4096-token context, up to 4 threads (fewer on smaller machines), 512
    /// completion tokens, seed 42, repetition penalty 1.1, the model's own chat template.
    pub fn new(gguf: impl Into<PathBuf>) -> Self {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        Self {
            gguf: gguf.into(),
            context_size: 4096,
            threads: u32::try_from(cores.min(4)).unwrap_or(1),
            max_tokens: 512,
            seed: 42,
            repeat_penalty: 1.1,
            chat_template: None,
        }
    }
}

/// A GGUF chat model run in-process; see the module docs.
pub struct LlamaChat {
    cfg: LlamaConfig,
    id: String,
    model: LlamaModel,
    template: LlamaChatTemplate,
    /// Serialises calls (see the module docs).
    busy: Mutex<()>,
}

impl std::fmt::Debug for LlamaChat {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LlamaChat")
            .field("id", &self.id)
            .field("cfg", &self.cfg)
            .finish_non_exhaustive()
    }
}

impl LlamaChat {
    /// Loads the model and checks its chat template.
    ///
    /// Errors: a missing file is `Unavailable` (install it with `mnemo models install --llm`);
    /// a file that is not a loadable GGUF, a template llama.cpp cannot apply, or a zero
    /// `threads`/`context_size` is `InvalidInput`; each message names the path.
    pub fn new(cfg: LlamaConfig) -> Result<Self> {
        if cfg.threads == 0 || cfg.context_size == 0 {
            return Err(Error::InvalidInput {
                field: "llama config".into(),
                reason: "threads and context_size must be at least 1".into(),
            });
        }
        check_gguf_file(&cfg.gguf)?;
        let backend = backend()?;
        let model = LlamaModel::load_from_file(backend, &cfg.gguf, &LlamaModelParams::default())
            .map_err(|e| bad_gguf(&cfg.gguf, format!("llama.cpp could not load it: {e}")))?;
        let template = match &cfg.chat_template {
            Some(t) => LlamaChatTemplate::new(t).map_err(|e| Error::InvalidInput {
                field: "chat_template".into(),
                reason: e.to_string(),
            })?,
            None => model.chat_template(None).map_err(|e| {
                bad_gguf(
                    &cfg.gguf,
                    format!("no usable chat template ({e}); set one in the config"),
                )
            })?,
        };
        let file = cfg.gguf.file_name().map_or_else(
            || cfg.gguf.display().to_string(),
            |f| f.to_string_lossy().into_owned(),
        );
        let chat = Self {
            id: format!("llama.cpp:{file}"),
            cfg,
            model,
            template,
            busy: Mutex::new(()),
        };
        // Fail at start-up, not on the first request, when llama.cpp cannot apply the template.
        chat.render_prompt(&[ChatMessage::user("ping")])
            .map_err(|e| bad_gguf(&chat.cfg.gguf, e.to_string()))?;
        Ok(chat)
    }

    pub fn config(&self) -> &LlamaConfig {
        &self.cfg
    }

    /// The prompt text `messages` become: the chat template applied, ending with the opening of
    /// the assistant's turn.
    pub fn render_prompt(&self, messages: &[ChatMessage]) -> Result<String> {
        let chat = messages
            .iter()
            .map(|m| LlamaChatMessage::new(role_name(m.role).into(), m.content.clone()))
            .collect::<std::result::Result<Vec<_>, _>>()
            .map_err(|e| Error::InvalidInput {
                field: "messages".into(),
                reason: format!("a message cannot be passed to llama.cpp: {e}"),
            })?;
        self.model
            .apply_chat_template(&self.template, &chat, true)
            .map_err(|e| Error::InvalidInput {
                field: "chat_template".into(),
                reason: format!("llama.cpp cannot apply it: {e}"),
            })
    }

    /// How many tokens `messages` take once rendered: what a call would report as
    /// `prompt_tokens`, without running the model.
    pub fn prompt_tokens(&self, messages: &[ChatMessage]) -> Result<usize> {
        Ok(self.tokenize_prompt(&self.render_prompt(messages)?).len())
    }

    /// The prompt as tokens, with the model's start token when it wants one (once, even when
    /// the template already writes it).
    fn tokenize_prompt(&self, prompt: &str) -> Vec<LlamaToken> {
        let vocab = self.model.vocab();
        let mut tokens = vocab.tokenize(prompt.as_bytes(), true, true);
        if tokens.len() >= 2 && tokens[0] == vocab.bos() && tokens[1] == vocab.bos() {
            tokens.remove(0);
        }
        tokens
    }
}

impl ChatModel for LlamaChat {
    fn model_id(&self) -> &str {
        &self.id
    }

    fn complete(&self, req: &ChatRequest) -> Result<ChatResponse> {
        let prompt = self.tokenize_prompt(&self.render_prompt(&req.messages)?);
        let budget = req.max_tokens.unwrap_or(self.cfg.max_tokens) as usize;
        let n_ctx = context_for(prompt.len(), budget, self.cfg.context_size)?;

        let _busy = self
            .busy
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let params = LlamaContextParams::default()
            .with_n_ctx(NonZeroU32::new(n_ctx))
            .with_n_batch(n_ctx)
            .with_n_threads(self.cfg.threads as i32)
            .with_n_threads_batch(self.cfg.threads as i32);
        let mut ctx = self
            .model
            .new_context(backend()?, params)
            .map_err(|e| model_err("cannot create a llama.cpp context", e))?;
        let mut picker =
            TokenPicker::new(&self.model, req, self.cfg.repeat_penalty, self.cfg.seed)?;

        let mut batch = LlamaBatch::new(prompt.len(), 1);
        let last = prompt.len() - 1;
        for (pos, &token) in prompt.iter().enumerate() {
            batch
                .add(token, pos as i32, &[0], pos == last)
                .map_err(|e| model_err("llama.cpp batch", e))?;
        }
        ctx.decode(&mut batch)
            .map_err(|e| model_err("llama.cpp prompt decode", e))?;

        let vocab = self.model.vocab();
        let mut generated: Vec<LlamaToken> = Vec::new();
        let mut finished = false;
        while generated.len() < budget {
            let token = picker.pick(&ctx)?;
            if vocab.is_eog(token) {
                finished = true;
                break;
            }
            generated.push(token);
            batch.clear();
            let pos = (prompt.len() + generated.len() - 1) as i32;
            batch
                .add(token, pos, &[0], true)
                .map_err(|e| model_err("llama.cpp batch", e))?;
            ctx.decode(&mut batch)
                .map_err(|e| model_err("llama.cpp decode", e))?;
        }

        let content =
            String::from_utf8_lossy(&vocab.detokenize(&generated, false, false)).into_owned();
        if req.json && !finished {
            return Err(Error::ModelOutput {
                model: self.id.clone(),
                step: "JSON-constrained generation".into(),
                reason: format!(
                    "the JSON object was still open after max_tokens={budget} tokens: {}",
                    preview(&content)
                ),
            });
        }
        Ok(ChatResponse {
            content,
            usage: TokenUsage {
                prompt_tokens: prompt.len() as u64,
                completion_tokens: generated.len() as u64,
            },
        })
    }
}

/// The process-wide llama.cpp backend, initialised once; its logs go to `tracing`.
fn backend() -> Result<&'static LlamaBackend> {
    static BACKEND: OnceLock<std::result::Result<LlamaBackend, String>> = OnceLock::new();
    BACKEND
        .get_or_init(|| {
            llama_cpp_2::send_logs_to_tracing(llama_cpp_2::LogOptions::default());
            LlamaBackend::init().map_err(|e| e.to_string())
        })
        .as_ref()
        .map_err(|e| Error::Unavailable {
            component: "llama.cpp backend".into(),
            reason: format!("{e} (something else in this process initialised llama.cpp first)"),
        })
}

/// Tokens of KV cache for one call: prompt plus budget, rounded up to llama.cpp's 256-token
/// granularity, never over the configured maximum.
fn context_for(prompt: usize, budget: usize, max: u32) -> Result<u32> {
    if prompt == 0 {
        return Err(Error::InvalidInput {
            field: "messages".into(),
            reason: "the rendered prompt is empty".into(),
        });
    }
    let need = prompt + budget;
    if need > max as usize {
        return Err(Error::InvalidInput {
            field: "messages".into(),
            reason: format!(
                "{prompt} prompt tokens plus max_tokens={budget} exceed the context size {max}"
            ),
        });
    }
    Ok(need.div_ceil(256).saturating_mul(256).min(max as usize) as u32)
}

/// Cheap checks before llama.cpp sees the file: it exists, and starts with the GGUF magic
/// (llama.cpp only logs why a load failed, so a clear message has to come from here).
fn check_gguf_file(path: &Path) -> Result<()> {
    if !path.is_file() {
        return Err(Error::Unavailable {
            component: "chat model (llama.cpp)".into(),
            reason: format!(
                "GGUF file {} is missing; run `mnemo models install --llm` or pass another file",
                path.display()
            ),
        });
    }
    let mut magic = [0u8; 4];
    std::fs::File::open(path)
        .and_then(|mut f| f.read_exact(&mut magic))
        .map_err(|e| bad_gguf(path, format!("cannot read it: {e}")))?;
    if &magic != b"GGUF" {
        return Err(bad_gguf(
            path,
            "it does not start with the GGUF magic bytes".into(),
        ));
    }
    Ok(())
}

fn bad_gguf(path: &Path, reason: String) -> Error {
    Error::InvalidInput {
        field: "gguf".into(),
        reason: format!("{}: {reason}", path.display()),
    }
}

fn role_name(role: ChatRole) -> &'static str {
    match role {
        ChatRole::System => "system",
        ChatRole::User => "user",
        ChatRole::Assistant => "assistant",
    }
}

/// The start of `text` for an error message.
fn preview(text: &str) -> String {
    const MAX: usize = 200;
    match text.char_indices().nth(MAX) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn context_covers_prompt_and_budget_in_steps_of_256() {
        assert_eq!(context_for(300, 128, 4096).unwrap(), 512);
        assert_eq!(context_for(1, 0, 4096).unwrap(), 256);
        assert_eq!(context_for(4000, 96, 4096).unwrap(), 4096);
        // The cap wins over rounding when the call just fits.
        assert_eq!(context_for(200, 90, 300).unwrap(), 300);
    }

    #[test]
    fn context_rejects_overflow_and_empty_prompts() {
        let err = context_for(4000, 200, 4096).unwrap_err();
        assert_eq!(err.kind(), mnemo_core::ErrorKind::InvalidInput);
        assert!(
            err.to_string().contains("exceed the context size 4096"),
            "{err}"
        );
        assert!(context_for(0, 10, 4096).is_err());
    }

    #[test]
    fn missing_and_non_gguf_files_are_typed_errors() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("absent.gguf");
        let err = check_gguf_file(&missing).unwrap_err();
        assert_eq!(err.kind(), mnemo_core::ErrorKind::Unavailable);
        assert!(err.to_string().contains("absent.gguf"), "{err}");

        let junk = dir.path().join("junk.gguf");
        std::fs::write(&junk, b"not a model").unwrap();
        let err = check_gguf_file(&junk).unwrap_err();
        assert_eq!(err.kind(), mnemo_core::ErrorKind::InvalidInput);
        assert!(err.to_string().contains("junk.gguf"), "{err}");
    }

    #[test]
    fn roles_use_the_names_chat_templates_expect() {
        assert_eq!(role_name(ChatRole::System), "system");
        assert_eq!(role_name(ChatRole::User), "user");
        assert_eq!(role_name(ChatRole::Assistant), "assistant");
    }

    #[test]
    fn preview_cuts_on_a_char_boundary() {
        let long = "é".repeat(300);
        let p = preview(&long);
        assert_eq!(p.chars().count(), 201);
        assert_eq!(preview("short"), "short");
    }
}
