//! The report: the JSON schema `mnemo eval` writes and its Markdown rendering.
//!
//! Schema (all scores are means in 0..=1):
//! - `retrieval`: `recall@1 recall@5 recall@10 recall@20 hit@1 hit@5 hit@10 hit@20 mrr` of
//!   mnemo's hybrid search, over questions that have evidence;
//! - `per_category`: the same keys for each LoCoMo category present (`"1"` … `"5"`);
//! - `baselines`: `bm25` and `dense`, each `{retrieval, per_category}` over the same units;
//! - `latency_ms`: `add` (per add call = one session) and `search` (query embedding included),
//!   each `{p50, p95}`;
//! - `counts`: conversations, sessions, turns, memories, questions, with and without evidence,
//!   and questions per category;
//! - `context`: what the top-k results cost — memories and tokens (cl100k) returned per
//!   question and the evidence turns one returned memory covers;
//! - `qa`: the QA summary, or `{"skipped": reason}` when no answer model was configured;
//! - `notes` (only with `--notes`): every turn stored as a note by the rules in a store of its
//!   own, scored without (`notes`) and with (`expanded`) link expansion, each
//!   `{retrieval, per_category}`; the expanded list is one ranking by score cut at each k, so
//!   linked results count among the k memories they are scored at. `per_request`: the matched
//!   control for `expanded`, the direct hits of the same searches alone (at each k, what a
//!   caller asking for k memories gets without expansion; `notes` and the other rows score
//!   one search of `top_k` at every k, whose candidate pool is deeper). `mean_linked_in_top_k`:
//!   linked results among the top-k per question; `add`: note add latency per session.
//! - `pack` (only with `--pack-budgets`): per budget, the evidence recall of the context pack
//!   and of plain search results cut to the same budget, with the tokens and items each used
//!   (`budgets`), the tokenizer, and the session the packs were asked for (see [`crate::pack`]).
//! - `compare_store` (only with `--compare-store`): mnemo's hybrid search again on a second
//!   backend (`backend`, PostgreSQL) over the same units and questions: `store`
//!   `{retrieval, per_category}`, `recall_at_10_difference` (this backend's recall@10 minus the
//!   main figure's) and its own `latency_ms`.
//! - `config`: everything that determines the numbers.

use crate::metrics::{RetrievalSummary, RETRIEVAL_KEYS as COLUMNS};
use crate::qa::QaSummary;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt::Write;

#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq)]
pub struct Percentiles {
    pub p50: f64,
    pub p95: f64,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Latency {
    pub add: Percentiles,
    pub search: Percentiles,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Counts {
    pub conversations: usize,
    pub sessions: usize,
    pub turns: usize,
    pub memories: usize,
    pub questions: usize,
    pub questions_with_evidence: usize,
    pub questions_without_evidence: usize,
    pub per_category: BTreeMap<String, usize>,
    /// Inferred adds (sessions) whose model call failed; their turns are logged but yielded no
    /// memories. Always 0 in raw mode.
    #[serde(default)]
    pub failed_adds: usize,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct ContextCost {
    pub top_k: usize,
    pub mean_memories_returned: f64,
    pub mean_tokens_returned: f64,
    pub mean_evidence_turns_per_memory: f64,
}

#[derive(Debug, Clone, Serialize)]
#[serde(untagged)]
pub enum QaSection {
    Scored(Box<QaSummary>),
    Skipped { skipped: String },
}

#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub retrieval: BTreeMap<String, f64>,
    pub per_category: BTreeMap<String, BTreeMap<String, f64>>,
    pub baselines: BTreeMap<String, RetrievalSummary>,
    pub latency_ms: Latency,
    pub counts: Counts,
    pub context: ContextCost,
    pub qa: QaSection,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub notes: Option<NotesSection>,
    /// Context packs against plain search at equal token budgets (`--pack-budgets`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pack: Option<crate::pack::PackReport>,
    /// mnemo on a second backend, same questions (`--compare-store`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub compare_store: Option<CompareSection>,
    /// mnemo's own search with temporal search off (`temporal_weight` 0), same questions and
    /// store: the matched control of `retrieval`/`per_category`, which run with it on. A
    /// question naming no time ranks identically in both.
    pub temporal_off: RetrievalSummary,
    pub config: serde_json::Value,
    /// Every search latency, for the histogram; not part of the JSON.
    #[serde(skip)]
    pub search_samples_ms: Vec<f64>,
}

/// mnemo's search on a second backend, scored on the same questions (see the module doc).
#[derive(Debug, Clone, Serialize)]
pub struct CompareSection {
    pub backend: String,
    pub store: RetrievalSummary,
    pub recall_at_10_difference: f64,
    pub latency_ms: Latency,
}

/// Notes scored without and with link expansion (see the module doc).
#[derive(Debug, Clone, Serialize)]
pub struct NotesSection {
    pub expand_links: usize,
    pub notes: RetrievalSummary,
    pub expanded: RetrievalSummary,
    /// The expanded searches' direct hits alone: the matched control for `expanded`.
    pub per_request: RetrievalSummary,
    pub mean_linked_in_top_k: f64,
    pub add: Percentiles,
}

pub const CATEGORY_NAMES: [(&str, &str); 5] = [
    ("1", "multi-hop"),
    ("2", "temporal"),
    ("3", "open-domain"),
    ("4", "single-hop"),
    ("5", "adversarial"),
];

pub fn category_name(c: &str) -> &'static str {
    CATEGORY_NAMES
        .iter()
        .find(|(k, _)| *k == c)
        .map_or("unknown", |(_, n)| n)
}

fn row(name: &str, m: &BTreeMap<String, f64>) -> String {
    let cells: Vec<String> = COLUMNS
        .iter()
        .map(|c| format!("{:.3}", m.get(*c).copied().unwrap_or(0.0)))
        .collect();
    format!("| {name} | {} |\n", cells.join(" | "))
}

fn header(first: &str) -> String {
    format!(
        "| {first} | {} |\n|---|{}\n",
        COLUMNS.join(" | "),
        "---|".repeat(COLUMNS.len())
    )
}

impl Report {
    /// Markdown with the tables and, when `plots` names the images written, links to them.
    pub fn to_markdown(&self, plots: &[String]) -> String {
        let mut s = String::new();
        let _ = writeln!(s, "# mnemo eval: LoCoMo\n");
        let _ = writeln!(
            s,
            "{} conversations, {} turns, {} questions ({} with evidence). Config: `{}`.\n",
            self.counts.conversations,
            self.counts.turns,
            self.counts.questions,
            self.counts.questions_with_evidence,
            self.config
        );
        let _ = writeln!(s, "## Retrieval\n");
        s.push_str(&header("system"));
        s.push_str(&row("mnemo (hybrid)", &self.retrieval));
        if let Some(c) = &self.compare_store {
            s.push_str(&row(&format!("mnemo on {}", c.backend), &c.store.retrieval));
        }
        for (name, b) in &self.baselines {
            s.push_str(&row(&format!("{name} alone"), &b.retrieval));
        }
        if let Some(c) = &self.compare_store {
            let _ = writeln!(
                s,
                "\nrecall@10 on {} minus the first engine's: {:+.3}; its search p50 / p95: {:.1} / {:.1} ms.",
                c.backend, c.recall_at_10_difference, c.latency_ms.search.p50, c.latency_ms.search.p95
            );
        }
        let _ = writeln!(s, "\n### mnemo per category\n");
        s.push_str(&header("category"));
        for (c, m) in &self.per_category {
            let n = self.counts.per_category.get(c).copied().unwrap_or(0);
            s.push_str(&row(&format!("{c} {} (n={n})", category_name(c)), m));
        }
        if let Some(n) = &self.notes {
            let _ = writeln!(
                s,
                "\n### Notes (rules), without and with link expansion ({} per hit)\n\nLinked results are ranked with the direct hits by score and cut at each k; {:.2} of the top-{} are linked results on average. \"notes, top_k = k\" is the same searches without their linked results (at each k, a search for k memories; the other rows score one search for top_k at every k). Note add p50 / p95: {:.1} / {:.1} ms per session.\n",
                n.expand_links,
                n.mean_linked_in_top_k,
                self.context.top_k,
                n.add.p50,
                n.add.p95
            );
            s.push_str(&header("category"));
            s.push_str(&row("raw (mnemo above), overall", &self.retrieval));
            s.push_str(&row("notes, overall", &n.notes.retrieval));
            s.push_str(&row("notes, top_k = k, overall", &n.per_request.retrieval));
            s.push_str(&row("notes + links, overall", &n.expanded.retrieval));
            for (c, m) in &n.notes.per_category {
                let name = format!("{c} {}", category_name(c));
                if let Some(raw) = self.per_category.get(c) {
                    s.push_str(&row(&format!("raw, {name}"), raw));
                }
                s.push_str(&row(&format!("notes, {name}"), m));
                if let Some(d) = n.per_request.per_category.get(c) {
                    s.push_str(&row(&format!("notes, top_k = k, {name}"), d));
                }
                if let Some(e) = n.expanded.per_category.get(c) {
                    s.push_str(&row(&format!("notes + links, {name}"), e));
                }
            }
        }
        if let Some(p) = &self.pack {
            let _ = writeln!(
                s,
                "\n## Context packs vs plain search at equal budgets\n\n{} questions; {} tokens; packs asked with session `{}`. Search results are cut to the budget in rank order, one line each.\n\n| budget | pack recall | search recall | pack tokens | search tokens | pack items | search results |\n|---|---|---|---|---|---|---|",
                p.questions, p.tokenizer, p.session
            );
            for r in &p.budgets {
                let _ = writeln!(
                    s,
                    "| {} | {:.3} | {:.3} | {:.0} | {:.0} | {:.1} | {:.1} |",
                    r.budget_tokens,
                    r.pack_recall,
                    r.search_recall,
                    r.pack_mean_tokens,
                    r.search_mean_tokens,
                    r.pack_mean_items,
                    r.search_mean_results
                );
            }
        }
        let _ = writeln!(
            s,
            "\n## Cost and latency\n\n- top-{k}: {:.1} memories, {:.0} tokens per question; one memory covers {:.2} evidence turns\n- add p50 / p95: {:.1} / {:.1} ms per call (one session)\n- search p50 / p95: {:.2} / {:.2} ms (query embedding included)\n",
            self.context.mean_memories_returned,
            self.context.mean_tokens_returned,
            self.context.mean_evidence_turns_per_memory,
            self.latency_ms.add.p50,
            self.latency_ms.add.p95,
            self.latency_ms.search.p50,
            self.latency_ms.search.p95,
            k = self.context.top_k,
        );
        let _ = writeln!(s, "## QA\n");
        match &self.qa {
            QaSection::Skipped { skipped } => {
                let _ = writeln!(s, "Skipped: {skipped}\n");
            }
            QaSection::Scored(q) => {
                let _ = writeln!(
                    s,
                    "Answer model `{}`, judge `{}`, {} questions, {:.0} prompt tokens per question.\n",
                    q.answer_model, q.judge_model, q.questions, q.mean_prompt_tokens
                );
                let _ = writeln!(
                    s,
                    "| category | n | F1 | BLEU-1 | judge accuracy |\n|---|---|---|---|---|"
                );
                let mut line = |name: String, m: &BTreeMap<String, f64>| {
                    let g = |k: &str| m.get(k).copied().unwrap_or(0.0);
                    let _ = writeln!(
                        s,
                        "| {name} | {} | {:.3} | {:.3} | {:.3} |",
                        g("count"),
                        g("f1"),
                        g("bleu1"),
                        g("judge_accuracy")
                    );
                };
                line("overall (1-4)".into(), &q.overall);
                for (c, m) in &q.per_category {
                    if c != "5" {
                        line(format!("{c} {}", category_name(c)), m);
                    }
                }
                let _ = writeln!(
                    s,
                    "\nAdversarial (category 5, scored apart): declined {:.3} of {} questions.\n",
                    q.adversarial.get("declined").copied().unwrap_or(0.0),
                    q.adversarial.get("count").copied().unwrap_or(0.0)
                );
            }
        }
        if !plots.is_empty() {
            let _ = writeln!(s, "## Plots\n");
            for p in plots.iter().filter(|p| p.ends_with(".svg")) {
                let _ = writeln!(s, "![{p}]({p})\n");
            }
        }
        s
    }
}

impl Report {
    pub fn qa_skipped(&self) -> bool {
        matches!(self.qa, QaSection::Skipped { .. })
    }
}
