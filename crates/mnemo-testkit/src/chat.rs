//! A scripted chat model for pipeline tests: a function of the request decides the reply, and
//! every request is recorded so tests can check what the pipeline sent. Never a product default.

use mnemo_core::{ChatModel, ChatRequest, ChatResponse, Result, TokenUsage};
use std::sync::{Arc, Mutex};

type Script = dyn Fn(&ChatRequest) -> Result<String> + Send + Sync;

pub struct ScriptedChat {
    id: String,
    script: Box<Script>,
    requests: Arc<Mutex<Vec<ChatRequest>>>,
}

impl std::fmt::Debug for ScriptedChat {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ScriptedChat")
            .field("id", &self.id)
            .finish_non_exhaustive()
    }
}

impl ScriptedChat {
    pub fn new(
        id: impl Into<String>,
        script: impl Fn(&ChatRequest) -> Result<String> + Send + Sync + 'static,
    ) -> Self {
        Self {
            id: id.into(),
            script: Box::new(script),
            requests: Arc::default(),
        }
    }

    /// Every request received so far, in order.
    pub fn requests(&self) -> Vec<ChatRequest> {
        self.requests.lock().expect("not poisoned").clone()
    }
}

impl ChatModel for ScriptedChat {
    fn model_id(&self) -> &str {
        &self.id
    }

    fn complete(&self, req: &ChatRequest) -> Result<ChatResponse> {
        self.requests
            .lock()
            .expect("not poisoned")
            .push(req.clone());
        let content = (self.script)(req)?;
        // Usage as a rough word count, so token accounting has something real to add up.
        let prompt_tokens = req
            .messages
            .iter()
            .map(|m| m.content.split_whitespace().count() as u64)
            .sum();
        Ok(ChatResponse {
            usage: TokenUsage {
                prompt_tokens,
                completion_tokens: content.split_whitespace().count() as u64,
            },
            content,
        })
    }
}
