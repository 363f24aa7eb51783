//! Context packs: `Memory::context` answers "what should the agent know now" as one
//! prompt-ready text under a token budget (types and assembly in `mnemo_core::pack`).
//!
//! Gathering, in one blocking pass over the store:
//! - the **core memory blocks** pinned for the scope (`mnemo_core::blocks`), unless
//!   `options.no_blocks`: rendered first and counted first; a budget that cannot hold them is
//!   `invalid_input` saying how many tokens they need;
//! - the **profile**: the user's active `profile` memory, when the scope has one;
//! - the **short-term window** of `options.session_id`: its short-term pages, or its last
//!   logged turns where no page holds them yet;
//! - **retrieval**: one hybrid search over memories (the same search, scope rules, expiry and
//!   supersession as `Memory::search`). A raw memory is shown as the exchange it came from — the
//!   page that holds its message, else the logged turn — with up to `neighbours` exchanges each
//!   side in its session (and the page it `continues`), valued less with each step; a page in a
//!   segment brings the segment's summary. Other memories (facts, knowledge, notes) are lines of
//!   their own. An empty query retrieves nothing: the pack is then the profile, the window and
//!   the hottest segments' summaries.
//!
//! Choice is by value (a hit's score; a neighbour's decayed from its source's), each item
//! taken when it still fits; a retrieved turn longer than `excerpt_words` words shows only its
//! sentences that share words with the query, and within a long sentence only the words around
//! them; a turn that shares no word with the query (found by meaning) shows the start of its
//! most contentful sentence. Cut marks `…` show every cut (a budget then holds about three
//! times the whole turns; see `mnemo_core::pack::clipped_excerpt`). The defaults are the best of the
//! settings measured on the LoCoMo dev file (`mnemo eval locomo --pack-budgets …`).
//!
//! The pages shown count as visits of their segments and the memories shown as reads (usage
//! bookkeeping, off the answer's path).

use crate::{run_blocking, Memory};
use mnemo_core::blocks::pack_with_blocks;
use mnemo_core::pack::{
    Candidate, ContextOptions, ContextPack, PackItem, PackParams, Reason, Section, TokenCounter,
    DEFAULT_TOKENIZER, MAX_BUDGET_TOKENS,
};
use mnemo_core::{Error, ListQuery, MemoryKind, ReadOptions, Result, Scope, SearchRequest, Store};

mod gather;
mod relations;

/// A context pack request.
#[derive(Debug, Clone, PartialEq)]
pub struct ContextRequest {
    pub scope: Scope,
    /// What the agent is about to answer; may be empty (no retrieval).
    pub query: String,
    /// The most tokens the rendered pack may take (1 ..= `MAX_BUDGET_TOKENS`).
    pub budget_tokens: u32,
    pub options: ContextOptions,
}

/// How a pack is gathered and chosen; [`Memory::context`] uses the defaults.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ContextTuning {
    /// Exchanges shown on each side of a matched one, in its session.
    pub neighbours: usize,
    /// A neighbour's value is its source's times this, per step away.
    pub neighbour_decay: f32,
    /// A segment summary's value is its page's times this.
    pub summary_weight: f32,
    /// Memories retrieved when the options do not say: `budget_tokens / tokens_per_candidate`,
    /// between 20 and 200.
    pub tokens_per_candidate: u32,
    /// Retrieved turns longer than this many words are shown as their sentences that share
    /// words with the query (see `mnemo_core::pack::excerpt`); `None`: whole turns.
    pub excerpt_words: Option<usize>,
    /// Excerpts clipped inside long sentences to the words around the query's terms, and turns
    /// that share no term shown as the start of their most contentful sentence (see
    /// `mnemo_core::pack::clipped_excerpt`); `false`: whole sentences.
    pub clip: bool,
    pub pack: PackParams,
}

impl Default for ContextTuning {
    fn default() -> Self {
        Self {
            neighbours: 1,
            neighbour_decay: 0.5,
            summary_weight: 0.3,
            tokens_per_candidate: 10,
            excerpt_words: Some(8),
            clip: true,
            pack: PackParams::default(),
        }
    }
}

/// Sessions longer than this are read for neighbours only up to their last this-many turns.
const SESSION_READ_LIMIT: usize = 5000;

impl ContextRequest {
    /// Checks what can be checked without the store; the error names the field.
    pub fn validate(&self) -> Result<()> {
        if self.budget_tokens == 0 || self.budget_tokens > MAX_BUDGET_TOKENS {
            return Err(Error::invalid(
                "budget_tokens",
                format!("must be between 1 and {MAX_BUDGET_TOKENS}"),
            ));
        }
        if let Some(s) = &self.options.session_id {
            if s.trim().is_empty() {
                return Err(Error::invalid("session_id", "must not be empty"));
            }
        }
        if self.options.memory_candidates == Some(0)
            || self.options.memory_candidates > Some(mnemo_core::search::MAX_TOP_K)
        {
            return Err(Error::invalid(
                "memory_candidates",
                format!("must be between 1 and {}", mnemo_core::search::MAX_TOP_K),
            ));
        }
        Ok(())
    }
}

impl Memory {
    /// A context pack for `req` (see the module docs): never more than `budget_tokens` tokens
    /// of the chosen tokenizer. `invalid_input` for a bad budget, an unknown tokenizer or a
    /// session the scope has no messages in.
    pub async fn context(&self, req: ContextRequest) -> Result<ContextPack> {
        self.context_with(req, ContextTuning::default()).await
    }

    /// [`Memory::context`] with other tuning (evaluation, experiments).
    pub async fn context_with(
        &self,
        req: ContextRequest,
        tuning: ContextTuning,
    ) -> Result<ContextPack> {
        req.validate()?;
        let counter = mnemo_models::token_counter(
            req.options
                .tokenizer
                .as_deref()
                .unwrap_or(DEFAULT_TOKENIZER),
        )?;
        let query = req.query.trim().to_string();
        let vector = if query.is_empty() {
            None
        } else {
            let v = self.embed(vec![query.clone()]).await?.pop();
            Some(v.ok_or_else(|| Error::Model {
                reason: "the embedder returned no vector for the query".into(),
            })?)
        };
        let this = self.clone();
        let (pack, shown) = run_blocking(move || {
            this.pack_blocking(&req, &query, vector.as_deref(), counter.as_ref(), &tuning)
        })
        .await?;
        self.record_pack_usage(shown);
        Ok(pack)
    }

    fn pack_blocking(
        &self,
        req: &ContextRequest,
        query: &str,
        vector: Option<&[f32]>,
        counter: &dyn TokenCounter,
        tuning: &ContextTuning,
    ) -> Result<(ContextPack, gather::Shown)> {
        let store = self.store().as_ref();
        let scope = &req.scope;
        let read = ReadOptions::default();
        let blocks = if req.options.no_blocks {
            Vec::new()
        } else {
            store.pinned_blocks(scope)?
        };
        let mut cands: Vec<Candidate> = Vec::new();
        if !req.options.no_profile {
            cands.extend(profile(store, scope, &read)?);
        }
        let mut g = gather::Gatherer::new(store, scope, tuning, query);
        if let Some(session) = &req.options.session_id {
            cands.extend(g.window(session, self.inner.tiers.short_term_capacity)?);
        }
        let hits = match vector {
            Some(v) => {
                let top_k = req.options.memory_candidates.unwrap_or_else(|| {
                    (req.budget_tokens / tuning.tokens_per_candidate.max(1)).clamp(20, 200) as usize
                });
                let search = SearchRequest {
                    read,
                    ..SearchRequest::new(scope.clone(), query, top_k)
                };
                let hits = self.search_with_vector_blocking(&search, v)?;
                hits.into_iter()
                    .filter(|h| h.memory.kind != MemoryKind::Profile)
                    .collect()
            }
            None => Vec::new(),
        };
        crate::cancel::check_cancelled("the context pack")?;
        g.add_hits(&hits)?;
        g.add_segments(vector)?;
        cands.extend(g.candidates());
        cands.extend(relations::candidates(store, scope, query, &hits)?);
        crate::cancel::check_cancelled("the context pack")?;
        // Once the request is abandoned the counter counts nothing, so assembly ends at once.
        let pack = pack_with_blocks(
            &blocks,
            cands,
            req.budget_tokens,
            &StopWhenCancelled(counter),
            &tuning.pack,
        )?;
        crate::cancel::check_cancelled("the context pack")?;
        let shown = g.shown(&pack);
        Ok((pack, shown))
    }

    /// Counts what a pack showed: memories as reads, segments as visits (usage bookkeeping,
    /// batched off the answer's path).
    fn record_pack_usage(&self, shown: gather::Shown) {
        self.record_reads(&shown.scope, shown.memories.iter());
        self.record_visits(&shown.scope, shown.segments);
    }
}

/// A token counter that counts nothing once the request's work is cancelled.
struct StopWhenCancelled<'a>(&'a dyn TokenCounter);

impl TokenCounter for StopWhenCancelled<'_> {
    fn name(&self) -> &str {
        self.0.name()
    }
    fn count(&self, text: &str) -> u32 {
        if crate::cancel::is_cancelled() {
            return 0;
        }
        self.0.count(text)
    }
}

/// The scope's active profile, as the pack's first item.
fn profile(store: &dyn Store, scope: &Scope, read: &ReadOptions) -> Result<Option<Candidate>> {
    let page = store.list(
        &ListQuery::new(scope.clone(), 1)
            .with_kinds(vec![MemoryKind::Profile])
            .with_read(*read),
    )?;
    Ok(page.results.into_iter().next().map(|m| Candidate {
        section: Section::Profile,
        item: PackItem {
            kind: "profile".into(),
            id: m.id.to_string(),
            text: m.text.trim().to_string(),
            tokens: 0,
            reason: Reason::Profile,
            score: None,
            from: None,
            message_ids: m.sources.clone(),
            at: Some(m.updated_at),
            event_time: None,
        },
        // Always first: the profile frames everything else.
        value: 1e6,
        block: None,
        order: 0,
        verbatim: false,
        full: None,
    }))
}
