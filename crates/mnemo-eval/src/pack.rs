//! Context packs against plain search at equal token budgets (`--pack-budgets`).
//!
//! For each budget and question, two texts of at most that many tokens (the same tokenizer,
//! cl100k by default) are scored by the evidence turns they show:
//! - the **pack**: `Memory::context` for the question, with no current session — LoCoMo asks
//!   its questions after the whole conversation, so no session is in progress and every
//!   session is history;
//! - **plain search**: the same engine's hybrid search, its results rendered one per line as a
//!   search result is shown to a model (`- [date] speaker: text`), taken in rank order while the
//!   joined lines fit.
//!
//! An item counts for the turns its provenance points at (a page or turn: its messages; a
//! memory: its sources), as everywhere in the eval. Recall is the share of a question's
//! evidence turns shown, averaged over questions with evidence.

use mnemo::{ContextRequest, ContextTuning, Memory};
use mnemo_core::pack::{ContextOptions, TokenCounter};
use mnemo_core::{Hit, MessageId, Scope, SearchRequest};
use serde::Serialize;
use std::collections::{HashMap, HashSet};

/// Results the plain search is asked for: more than any budget up to 5,000 tokens can hold.
pub const SEARCH_DEPTH: usize = 300;

/// One budget's scores.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct BudgetRow {
    pub budget_tokens: u32,
    /// Evidence recall of the context pack.
    pub pack_recall: f64,
    /// Evidence recall of plain search results cut to the budget.
    pub search_recall: f64,
    pub pack_mean_tokens: f64,
    pub search_mean_tokens: f64,
    /// Items the pack showed and search results that fit, per question.
    pub pack_mean_items: f64,
    pub search_mean_results: f64,
    /// What the pack's items were, per question: mean items and tokens by item kind (`page`,
    /// `turn`, `segment`, `memory`, …), so a budget's spending can be read off the report.
    pub pack_by_kind: std::collections::BTreeMap<String, KindShare>,
}

/// Mean items and tokens of one kind of pack item, per question.
#[derive(Debug, Clone, Copy, Default, Serialize, PartialEq)]
pub struct KindShare {
    pub items: f64,
    pub tokens: f64,
}

/// The `pack` part of the report.
#[derive(Debug, Clone, Serialize)]
pub struct PackReport {
    pub tokenizer: String,
    /// The session the packs were asked for (`none`: see the module docs).
    pub session: String,
    pub questions: usize,
    pub budgets: Vec<BudgetRow>,
}

/// Sums per budget while questions are asked.
#[derive(Debug, Default)]
pub struct PackTally {
    budgets: Vec<u32>,
    rows: Vec<BudgetRow>,
    questions: usize,
}

impl PackTally {
    pub fn new(budgets: &[u32]) -> Self {
        Self {
            budgets: budgets.to_vec(),
            rows: budgets
                .iter()
                .map(|&b| BudgetRow {
                    budget_tokens: b,
                    ..BudgetRow::default()
                })
                .collect(),
            questions: 0,
        }
    }

    /// Scores one question with evidence at every budget.
    #[expect(
        clippy::too_many_arguments,
        reason = "each input is a separate part of the step; a context struct is the planned fix"
    )]
    pub async fn ask(
        &mut self,
        engine: &Memory,
        scope: &Scope,
        question: &str,
        evidence: &[String],
        turn_of: &HashMap<MessageId, String>,
        counter: &dyn TokenCounter,
        tuning: ContextTuning,
    ) -> anyhow::Result<()> {
        let wanted: HashSet<&str> = evidence.iter().map(String::as_str).collect();
        if wanted.is_empty() {
            return Ok(());
        }
        self.questions += 1;
        let recall = |ids: &mut dyn Iterator<Item = &MessageId>| {
            let found: HashSet<&str> = ids
                .filter_map(|m| turn_of.get(m))
                .map(String::as_str)
                .filter(|t| wanted.contains(t))
                .collect();
            found.len() as f64 / wanted.len() as f64
        };
        let hits = engine
            .search(SearchRequest::new(scope.clone(), question, SEARCH_DEPTH))
            .await?
            .results;
        let lines: Vec<(String, u32)> = hits
            .iter()
            .map(|h| {
                let l = search_line(h);
                let n = counter.count(&l) + 1;
                (l, n)
            })
            .collect();
        for (row, &budget) in self.rows.iter_mut().zip(&self.budgets) {
            let pack = engine
                .context_with(
                    ContextRequest {
                        scope: scope.clone(),
                        query: question.to_string(),
                        budget_tokens: budget,
                        options: ContextOptions {
                            tokenizer: Some(counter.name().to_string()),
                            ..ContextOptions::default()
                        },
                    },
                    tuning,
                )
                .await?;
            let items = pack.sections.iter().flat_map(|s| &s.items);
            row.pack_recall += recall(&mut items.clone().flat_map(|i| &i.message_ids));
            row.pack_mean_tokens += f64::from(pack.used_tokens);
            row.pack_mean_items += items.clone().count() as f64;
            for i in items {
                let share = row.pack_by_kind.entry(i.kind.clone()).or_default();
                share.items += 1.0;
                share.tokens += f64::from(i.tokens);
            }

            let (n, tokens) = cut_to_budget(&lines, budget, counter);
            row.search_recall += recall(&mut hits[..n].iter().flat_map(|h| &h.memory.sources));
            row.search_mean_tokens += f64::from(tokens);
            row.search_mean_results += n as f64;
        }
        Ok(())
    }

    pub fn summary(&self, tokenizer: &str) -> PackReport {
        let n = self.questions.max(1) as f64;
        PackReport {
            tokenizer: tokenizer.to_string(),
            session: "none".into(),
            questions: self.questions,
            budgets: self
                .rows
                .iter()
                .map(|r| BudgetRow {
                    budget_tokens: r.budget_tokens,
                    pack_recall: r.pack_recall / n,
                    search_recall: r.search_recall / n,
                    pack_mean_tokens: r.pack_mean_tokens / n,
                    search_mean_tokens: r.search_mean_tokens / n,
                    pack_mean_items: r.pack_mean_items / n,
                    search_mean_results: r.search_mean_results / n,
                    pack_by_kind: r
                        .pack_by_kind
                        .iter()
                        .map(|(k, v)| {
                            let share = KindShare {
                                items: v.items / n,
                                tokens: v.tokens / n,
                            };
                            (k.clone(), share)
                        })
                        .collect(),
                })
                .collect(),
        }
    }
}

/// A search result as a model is shown it: one line with its date, speaker and text.
pub fn search_line(h: &Hit) -> String {
    let m = &h.memory;
    let date = m.created_at.format("%-d %B %Y");
    match m.actor.as_deref().filter(|a| !a.is_empty()) {
        Some(a) => format!("- [{date}] {a}: {}", m.text.trim()),
        None => format!("- [{date}] {}", m.text.trim()),
    }
}

/// How many of the leading `lines` (each with its token count, newline included) fit in
/// `budget` when joined, and the exact tokens of that text.
pub fn cut_to_budget(
    lines: &[(String, u32)],
    budget: u32,
    counter: &dyn TokenCounter,
) -> (usize, u32) {
    let mut n = 0;
    let mut sum = 0u32;
    for (_, t) in lines {
        if sum + t > budget {
            break;
        }
        sum += t;
        n += 1;
    }
    // The joined text is counted exactly; token merges across lines may differ from the sum.
    loop {
        let text: String = lines[..n].iter().map(|(l, _)| format!("{l}\n")).collect();
        let exact = counter.count(&text);
        if exact <= budget || n == 0 {
            return (n, exact);
        }
        n -= 1;
    }
}
