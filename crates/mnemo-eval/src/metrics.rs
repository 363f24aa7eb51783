//! Scores: evidence recall, hit rate and MRR for retrieval; token F1, BLEU-1 and the LoCoMo
//! answer normalisation for QA; percentiles for latency.
//!
//! A retrieved memory counts for the evidence turns it covers (its provenance), so the same code
//! scores raw memories (one turn each) and derived ones (any number of turns). A fact the model
//! attributed to no turn has no provenance and covers nothing: it earns no evidence credit.

use rust_stemmers::{Algorithm, Stemmer};
use serde::Serialize;
use std::collections::{BTreeMap, HashSet};

/// The cut-offs every retrieval report gives.
pub const KS: [usize; 4] = [1, 5, 10, 20];

/// The keys of a retrieval summary, in report order (`KS` spelled out, then MRR).
pub const RETRIEVAL_KEYS: [&str; 9] = [
    "recall@1",
    "recall@5",
    "recall@10",
    "recall@20",
    "hit@1",
    "hit@5",
    "hit@10",
    "hit@20",
    "mrr",
];

/// Scores of one question's ranked list.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct QuestionScores {
    pub recall: [f64; 4],
    pub hit: [f64; 4],
    pub reciprocal_rank: f64,
}

/// Scores a ranked list. `retrieved[i]` is the set of turn ids the i-th result covers. Returns
/// `None` when the question has no evidence (it is counted, but left out of recall).
pub fn score_question(evidence: &[String], retrieved: &[Vec<String>]) -> Option<QuestionScores> {
    let wanted: HashSet<&str> = evidence.iter().map(String::as_str).collect();
    if wanted.is_empty() {
        return None;
    }
    let mut out = QuestionScores::default();
    let mut found: HashSet<&str> = HashSet::new();
    let mut first_hit = None;
    for (rank, turns) in retrieved.iter().enumerate() {
        let before = found.len();
        for t in turns {
            if wanted.contains(t.as_str()) {
                found.insert(t.as_str());
            }
        }
        if first_hit.is_none() && found.len() > before {
            first_hit = Some(rank + 1);
        }
        for (i, k) in KS.iter().enumerate() {
            if rank + 1 == *k {
                out.recall[i] = found.len() as f64 / wanted.len() as f64;
                out.hit[i] = if found.is_empty() { 0.0 } else { 1.0 };
            }
        }
    }
    // Lists shorter than k score at k what they scored at their end.
    for (i, k) in KS.iter().enumerate() {
        if retrieved.len() < *k {
            out.recall[i] = found.len() as f64 / wanted.len() as f64;
            out.hit[i] = if found.is_empty() { 0.0 } else { 1.0 };
        }
    }
    out.reciprocal_rank = first_hit.map_or(0.0, |r| 1.0 / r as f64);
    Some(out)
}

/// Mean retrieval scores, keyed exactly as the report schema names them.
#[derive(Debug, Clone, Default)]
pub struct RetrievalAccumulator {
    sum: QuestionScores,
    n: usize,
}

impl RetrievalAccumulator {
    pub fn push(&mut self, s: &QuestionScores) {
        for i in 0..KS.len() {
            self.sum.recall[i] += s.recall[i];
            self.sum.hit[i] += s.hit[i];
        }
        self.sum.reciprocal_rank += s.reciprocal_rank;
        self.n += 1;
    }

    pub fn count(&self) -> usize {
        self.n
    }

    /// `recall@1 … recall@20`, `hit@1 … hit@20`, `mrr`; zeros when nothing was scored.
    pub fn means(&self) -> BTreeMap<String, f64> {
        let d = self.n.max(1) as f64;
        let mut m = BTreeMap::new();
        for (i, k) in KS.iter().enumerate() {
            m.insert(format!("recall@{k}"), self.sum.recall[i] / d);
            m.insert(format!("hit@{k}"), self.sum.hit[i] / d);
        }
        m.insert("mrr".into(), self.sum.reciprocal_rank / d);
        m
    }
}

/// Overall and per-category accumulators for one retrieval system.
#[derive(Debug, Clone, Default)]
pub struct RetrievalTally {
    pub overall: RetrievalAccumulator,
    pub per_category: BTreeMap<u8, RetrievalAccumulator>,
}

impl RetrievalTally {
    pub fn push(&mut self, category: u8, s: &QuestionScores) {
        self.overall.push(s);
        self.per_category.entry(category).or_default().push(s);
    }

    pub fn summary(&self) -> RetrievalSummary {
        RetrievalSummary {
            retrieval: self.overall.means(),
            per_category: self
                .per_category
                .iter()
                .map(|(c, a)| (c.to_string(), a.means()))
                .collect(),
        }
    }
}

#[derive(Debug, Clone, Serialize, serde::Deserialize, PartialEq)]
pub struct RetrievalSummary {
    pub retrieval: BTreeMap<String, f64>,
    pub per_category: BTreeMap<String, BTreeMap<String, f64>>,
}

/// The value at quantile `q` (0..=1) by nearest rank; 0 for no samples.
pub fn percentile(samples: &[f64], q: f64) -> f64 {
    if samples.is_empty() {
        return 0.0;
    }
    let mut v = samples.to_vec();
    v.sort_by(f64::total_cmp);
    let rank = (q * v.len() as f64).ceil().max(1.0) as usize;
    v[rank.min(v.len()) - 1]
}

// ---- QA ----

/// LoCoMo's answer normalisation: lower case, commas and other punctuation removed, the
/// articles (and "and") dropped, whitespace collapsed.
pub fn normalize_answer(s: &str) -> String {
    let lowered = s.to_lowercase().replace(',', "");
    let no_punct: String = lowered
        .chars()
        .filter(|c| !c.is_ascii_punctuation())
        .collect();
    no_punct
        .split_whitespace()
        .filter(|w| !matches!(*w, "a" | "an" | "the" | "and"))
        .collect::<Vec<_>>()
        .join(" ")
}

/// Tokens of `p` matched in `r`, each reference token used at most as often as it occurs.
fn overlap(p: &[String], r: &[String]) -> usize {
    let mut remaining: BTreeMap<&str, usize> = BTreeMap::new();
    for t in r {
        *remaining.entry(t).or_default() += 1;
    }
    p.iter()
        .filter(|t| match remaining.get_mut(t.as_str()) {
            Some(c) if *c > 0 => {
                *c -= 1;
                true
            }
            _ => false,
        })
        .count()
}

fn stemmed_tokens(s: &str) -> Vec<String> {
    let stemmer = Stemmer::create(Algorithm::English);
    normalize_answer(s)
        .split_whitespace()
        .map(|w| stemmer.stem(w).into_owned())
        .collect()
}

/// Token F1 between a prediction and a reference, on stemmed normalised tokens.
pub fn token_f1(prediction: &str, reference: &str) -> f64 {
    let p = stemmed_tokens(prediction);
    let r = stemmed_tokens(reference);
    if p.is_empty() || r.is_empty() {
        return if p.is_empty() && r.is_empty() {
            1.0
        } else {
            0.0
        };
    }
    let common = overlap(&p, &r);
    if common == 0 {
        return 0.0;
    }
    let precision = common as f64 / p.len() as f64;
    let recall = common as f64 / r.len() as f64;
    2.0 * precision * recall / (precision + recall)
}

/// Multi-hop F1: both sides split on commas; each reference part takes its best prediction part;
/// the mean over reference parts.
pub fn multi_answer_f1(prediction: &str, reference: &str) -> f64 {
    let preds: Vec<&str> = prediction.split(',').collect();
    let refs: Vec<&str> = reference
        .split(',')
        .filter(|r| !r.trim().is_empty())
        .collect();
    if refs.is_empty() {
        return token_f1(prediction, reference);
    }
    refs.iter()
        .map(|r| preds.iter().map(|p| token_f1(p, r)).fold(0.0, f64::max))
        .sum::<f64>()
        / refs.len() as f64
}

/// True when an answer declines, the way the LoCoMo paper scores adversarial questions.
pub fn declines(prediction: &str) -> bool {
    let p = prediction.to_lowercase();
    p.contains("no information available") || p.contains("not mentioned")
}

/// The LoCoMo F1 for a question of the given category.
pub fn answer_f1(category: u8, prediction: &str, reference: &str) -> f64 {
    match category {
        1 => multi_answer_f1(prediction, reference),
        // Open-domain references sometimes add a rationale after ';'.
        3 => token_f1(prediction, reference.split(';').next().unwrap_or(reference)),
        5 => {
            if declines(prediction) {
                1.0
            } else {
                0.0
            }
        }
        _ => token_f1(prediction, reference),
    }
}

/// BLEU-1: clipped unigram precision times the brevity penalty, on normalised tokens.
pub fn bleu1(prediction: &str, reference: &str) -> f64 {
    let p: Vec<String> = normalize_answer(prediction)
        .split_whitespace()
        .map(str::to_string)
        .collect();
    let r: Vec<String> = normalize_answer(reference)
        .split_whitespace()
        .map(str::to_string)
        .collect();
    if p.is_empty() || r.is_empty() {
        return 0.0;
    }
    let precision = overlap(&p, &r) as f64 / p.len() as f64;
    let bp = if p.len() >= r.len() {
        1.0
    } else {
        (1.0 - r.len() as f64 / p.len() as f64).exp()
    };
    precision * bp
}
