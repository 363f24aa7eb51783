//! mnemo-eval: measures mnemo on LoCoMo, in the product — the same add and search the library
//! serves, no evaluation-only retrieval code.
//!
//! - [`locomo`] parses the dataset;
//! - [`run`] ingests each conversation into fresh stores, asks every question against mnemo and
//!   the BM25-alone and dense-alone baselines, and optionally answers with a chat model;
//! - [`metrics`] holds the scores (evidence recall/hit@k, MRR, LoCoMo F1, BLEU-1, percentiles);
//! - [`qa`] the answer and judge prompts;
//! - [`relations`] scores the rule relation extractor against hand labels;
//! - [`pack`] scores context packs against plain search cut to the same token budgets;
//! - [`report`] the JSON schema and Markdown; [`plots`] the SVG and PNG charts.

pub mod correctness;
pub mod locomo;
pub mod metrics;
pub mod pack;
pub mod plots;
pub mod qa;
pub mod relations;
pub mod report;
pub mod run;

pub use report::Report;
pub use run::{run_locomo, EvalMode, EvalOptions};
