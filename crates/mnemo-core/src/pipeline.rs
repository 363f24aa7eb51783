//! The add pipelines. Each model-driven one turns one add into a [`Plan`] — new memories and retirements of
//! existing ones — that the caller commits as one store transaction. Every model call happens here,
//! before that transaction, and is recorded as a [`ModelCall`]; a failed call or an answer that
//! cannot be repaired into the expected JSON is an error, and then nothing is planned at all.
//!
//! - `infer`: extraction of candidate facts from the new messages (with the scope's recent
//!   messages and its most similar memories as context), duplicate suppression over the whole
//!   scope, then one reconciliation call that decides ADD / UPDATE / DELETE / NONE per fact against
//!   its nearest existing memories. Existing ids are shown to the model as small integers and
//!   mapped back here; an integer the model invents is ignored with a warning.
//! - `procedural`: an agent's steps → one `procedural` memory whose action outputs are copied
//!   verbatim from the messages (the model only names and orders the steps).
//! - `notes`: A-MEM notes. Missing keywords, tags and context come from one enrichment call
//!   (or the rules of [`crate::note`]); the enriched texts are embedded; each new note's nearest
//!   notes go to one evolution call that links and may re-describe them (ids shown as small
//!   integers, invented ones ignored with a warning), or, without a model, rules link them.
//! - `profile`: long-term memory. A user's unanalysed pages and current profile go to one call
//!   that returns changed profile dimensions and user and assistant knowledge, with message and
//!   stored-knowledge numbers mapped back here (invented ones dropped with a warning); the plan
//!   supersedes the profile, reconciles knowledge and marks the pages analysed in one write.
//! - `raw` (no model): each message one `raw` memory, indexed and embedded with its
//!   neighbouring turns.
//! - `prompts`: the prompt texts.

pub mod event_time;
mod infer;
mod knowledge;
mod notes;
mod procedural;
mod profile;
mod profile_answer;
pub(crate) mod prompts;
pub mod raw;
pub mod relations;

pub use infer::{infer, InferInput};
pub use notes::{notes, notes_many, NotePlan, NoteWindow, NotesInput};
pub use procedural::procedural;
pub use profile::{profile, ProfileConfig, ProfileInput, ProfilePlan, KNOWLEDGE_KEY};
pub use raw::WindowIndexing;

use crate::chat::{ChatModel, ChatRequest, ChatResponse};
use crate::embed::Embedder;
use crate::error::{Error, Result};
use crate::memory::{Message, NewMemory};
use crate::store::{ModelCall, Supersession};
use std::time::Instant;

/// Settings of the model-driven add. Defaults are the documented ones.
#[derive(Debug, Clone, PartialEq)]
pub struct InferConfig {
    /// Recent messages of the scope shown to the extractor: its window.
    pub recent_messages: usize,
    /// Existing memories most similar to the new messages, shown to the extractor.
    pub similar_memories: usize,
    /// Nearest existing memories each candidate fact is reconciled against.
    pub neighbours_per_fact: usize,
    /// Cosine similarity at or above which a candidate is a near-duplicate of an existing memory
    /// (dropped without asking the model).
    pub near_duplicate: f32,
    /// Only ever add: UPDATE becomes ADD (the old memory stays active) and DELETE is skipped.
    pub additive_only: bool,
    /// When a model call fails, still append the input messages to the log.
    pub log_messages_on_failure: bool,
    /// Extra extraction instructions for every add (a call may add its own).
    pub instructions: Option<String>,
    /// Upper bound on the tokens a model may answer with.
    pub max_tokens: u32,
    /// The chat model reads images: an image part of a message is described by it and kept as
    /// text (see `content`); otherwise image parts are refused.
    pub vision: bool,
}

impl Default for InferConfig {
    fn default() -> Self {
        Self {
            recent_messages: 10,
            similar_memories: 10,
            neighbours_per_fact: 5,
            near_duplicate: 0.95,
            additive_only: false,
            log_messages_on_failure: true,
            instructions: None,
            max_tokens: 1024,
            vision: false,
        }
    }
}

/// What a pipeline decided: written by the caller in one transaction with the add's messages.
#[derive(Debug, Clone, Default)]
pub struct Plan {
    pub memories: Vec<NewMemory>,
    pub changes: Vec<Supersession>,
    /// Candidates dropped as duplicates or by NONE, and ids the model invented.
    pub warnings: Vec<String>,
}

/// Records every model call of one request, failed ones included.
#[derive(Debug, Default)]
pub struct CallLog {
    pub calls: Vec<ModelCall>,
}

impl CallLog {
    /// Runs a chat call and records its tokens and time.
    pub fn chat(
        &mut self,
        model: &dyn ChatModel,
        purpose: &str,
        req: &ChatRequest,
    ) -> Result<ChatResponse> {
        let started = Instant::now();
        let out = model.complete(req);
        let usage = out.as_ref().map(|r| r.usage).unwrap_or_default();
        self.calls.push(ModelCall {
            purpose: purpose.into(),
            model: model.model_id().into(),
            prompt_tokens: usage.prompt_tokens,
            completion_tokens: usage.completion_tokens,
            ms: started.elapsed().as_secs_f64() * 1e3,
            failed: out.is_err(),
        });
        out
    }

    /// Runs an embedding call and records its time. An answer with a vector count other than
    /// one per text is a model error, so callers may index and zip the vectors freely.
    pub fn embed(&mut self, embedder: &dyn Embedder, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
        let started = Instant::now();
        let out = embedder.embed(texts).and_then(|v| {
            if v.len() == texts.len() {
                Ok(v)
            } else {
                Err(Error::Model {
                    reason: format!(
                        "the embedder returned {} vectors for {} texts",
                        v.len(),
                        texts.len()
                    ),
                })
            }
        });
        self.calls.push(ModelCall {
            purpose: "embed".into(),
            model: embedder.model_id().into(),
            prompt_tokens: 0,
            completion_tokens: 0,
            ms: started.elapsed().as_secs_f64() * 1e3,
            failed: out.is_err(),
        });
        out
    }
}

/// Parses a model answer into a JSON value, tolerating the usual damage (fences, prose, trailing
/// commas, single quotes); anything beyond repair is a `ModelOutput` error.
pub(crate) fn model_json(
    model: &dyn ChatModel,
    step: &str,
    raw: &str,
) -> Result<serde_json::Value> {
    crate::jsonfix::parse_model_json(raw).map_err(|e| Error::ModelOutput {
        model: model.model_id().into(),
        step: step.into(),
        reason: format!(
            "{e}; answer began {:?}",
            raw.chars().take(120).collect::<String>()
        ),
    })
}

pub(crate) fn shape_error(model: &dyn ChatModel, step: &str, reason: impl Into<String>) -> Error {
    Error::ModelOutput {
        model: model.model_id().into(),
        step: step.into(),
        reason: reason.into(),
    }
}

/// A JSON-mode request: the step's system prompt, then `user` with the configured and the
/// per-call instructions appended.
pub(crate) fn json_request(
    system: &str,
    mut user: String,
    cfg: &InferConfig,
    call_instructions: Option<&str>,
) -> ChatRequest {
    for extra in [cfg.instructions.as_deref(), call_instructions]
        .into_iter()
        .flatten()
    {
        user.push_str(&format!("\nAdditional instructions: {extra}\n"));
    }
    ChatRequest {
        messages: vec![
            crate::chat::ChatMessage::system(system),
            crate::chat::ChatMessage::user(user),
        ],
        max_tokens: Some(cfg.max_tokens),
        temperature: Some(0.0),
        json: true,
    }
}

/// A message as the model sees it: `[n] 2024-05-07 Alice (user): text`.
pub(crate) fn render_message(n: Option<usize>, m: &Message) -> String {
    let who = match &m.name {
        Some(name) => format!("{name} ({})", m.role),
        None => m.role.to_string(),
    };
    let date = m.created_at.format("%Y-%m-%d %H:%M");
    match n {
        Some(n) => format!("[{n}] {date} {who}: {}", m.content),
        None => format!("- {date} {who}: {}", m.content),
    }
}

/// Which pipeline step a chat request belongs to (`extract`, `reconcile`, `procedural`,
/// `enrich`, `evolve`, `profile`, `summarise`, `continuity`, `relations`), judged
/// by its system prompt: for scripted models, logs and reports.
pub fn step_of(req: &ChatRequest) -> Option<&'static str> {
    let system = req.messages.first()?.content.as_str();
    [
        ("extract", prompts::EXTRACT_SYSTEM),
        ("reconcile", prompts::RECONCILE_SYSTEM),
        ("procedural", prompts::PROCEDURAL_SYSTEM),
        ("enrich", prompts::ENRICH_SYSTEM),
        ("evolve", prompts::EVOLVE_SYSTEM),
        ("profile", prompts::PROFILE_SYSTEM),
        ("summarise", prompts::SUMMARY_SYSTEM),
        ("continuity", prompts::CONTINUITY_SYSTEM),
        (
            relations::RELATIONS_STEP,
            crate::relation::RELATIONS_SYSTEM_PROMPT,
        ),
    ]
    .into_iter()
    .find(|(_, p)| *p == system)
    .map(|(s, _)| s)
}

/// The number a reconciliation prompt shows for the existing memory whose text contains
/// `needle` (case-insensitive): lets scripted models refer to memories as a real model would.
pub fn shown_number(req: &ChatRequest, needle: &str) -> Option<usize> {
    let user = &req.messages.get(1)?.content;
    let needle = needle.to_lowercase();
    let existing = user.split("\nNEW facts:").next()?;
    existing.lines().find_map(|l| {
        let (n, text) = l.split_once(": ")?;
        let n: usize = n.trim().parse().ok()?;
        text.to_lowercase().contains(&needle).then_some(n)
    })
}
