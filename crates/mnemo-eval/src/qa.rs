//! Question answering over retrieved memories, scored the LoCoMo way, plus an LLM judge.
//!
//! The answer prompt gives the model the retrieved memories with their dates and speakers and
//! asks for a short answer, or "No information available" when the memories do not say — which
//! is what category 5 (adversarial) rewards.

use crate::metrics::{answer_f1, bleu1};
use mnemo_core::{ChatMessage, ChatModel, ChatRequest, Hit, Result};
use serde::Serialize;
use std::collections::BTreeMap;
use std::sync::Arc;

/// The models QA uses; the judge may be the answer model.
#[derive(Clone)]
pub struct QaModels {
    pub answer: Arc<dyn ChatModel>,
    pub judge: Arc<dyn ChatModel>,
}

impl std::fmt::Debug for QaModels {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("QaModels")
            .field("answer", &self.answer.model_id())
            .field("judge", &self.judge.model_id())
            .finish()
    }
}

/// The context lines shown to the answer model, one per memory, oldest first.
pub fn context_lines(hits: &[Hit]) -> Vec<String> {
    let mut ordered: Vec<&Hit> = hits.iter().collect();
    ordered.sort_by_key(|h| h.memory.created_at);
    ordered
        .iter()
        .map(|h| {
            let date = h.memory.created_at.format("%-d %B %Y");
            match &h.memory.actor {
                Some(a) => format!("[{date}] {a}: {}", h.memory.text),
                None => format!("[{date}] {}", h.memory.text),
            }
        })
        .collect()
}

pub fn answer_request(question: &str, hits: &[Hit]) -> ChatRequest {
    let context = context_lines(hits).join("\n");
    ChatRequest {
        messages: vec![
            ChatMessage::system(
                "You answer questions about a long conversation between two people, using only \
                 the memories given. Each memory starts with the date it was said. Resolve \
                 relative dates (\"last week\") against that date. Answer in a few words — a \
                 name, a date, a short phrase; list several items separated by commas. If the \
                 memories do not contain the answer, reply exactly: No information available.",
            ),
            ChatMessage::user(format!(
                "Memories:\n{context}\n\nQuestion: {question}\nAnswer:"
            )),
        ],
        max_tokens: Some(64),
        temperature: Some(0.0),
        json: false,
    }
}

pub fn judge_request(question: &str, reference: &str, prediction: &str) -> ChatRequest {
    ChatRequest {
        messages: vec![
            ChatMessage::system(
                "You grade answers. Given a question, the reference answer and a candidate \
                 answer, decide whether the candidate means the same as the reference. Be \
                 generous with wording and format (dates written differently, extra detail) but \
                 strict on facts. Reply with one word: CORRECT or WRONG.",
            ),
            ChatMessage::user(format!(
                "Question: {question}\nReference: {reference}\nCandidate: {prediction}\nVerdict:"
            )),
        ],
        max_tokens: Some(4),
        temperature: Some(0.0),
        json: false,
    }
}

/// Words that make a verdict negative wherever they appear, checked before CORRECT is looked
/// for: "INCORRECT" holds "CORRECT", and "NOT CORRECT" holds the word itself.
const NEGATIVE: &[&str] = &["INCORRECT", "WRONG", "NOT", "ISN'T", "FALSE", "NO"];

/// Reads a judge's verdict; anything but a clear CORRECT counts as wrong. Whole words only,
/// negative forms first: a verdict is correct when it says CORRECT and nothing negative.
pub fn verdict(text: &str) -> bool {
    let upper = text.to_uppercase().replace('’', "'");
    let words: Vec<&str> = upper
        .split(|c: char| !(c.is_alphanumeric() || c == '\''))
        .map(|w| w.trim_matches('\''))
        .filter(|w| !w.is_empty())
        .collect();
    if words.iter().any(|w| NEGATIVE.contains(w)) {
        return false;
    }
    words.contains(&"CORRECT")
}

/// One answered question.
#[derive(Debug, Clone, Serialize)]
pub struct QaOutcome {
    pub category: u8,
    pub prediction: String,
    pub f1: f64,
    pub bleu1: f64,
    pub judged_correct: bool,
    pub prompt_tokens: u64,
}

/// Answers one question and scores it; model failures are errors, not zero scores.
pub fn answer_and_score(
    models: &QaModels,
    category: u8,
    question: &str,
    reference: &str,
    hits: &[Hit],
) -> Result<QaOutcome> {
    let resp = models.answer.complete(&answer_request(question, hits))?;
    let prediction = resp.content.trim().to_string();
    let judged_correct = if category == 5 {
        // The paper's rule for adversarial questions: declining is the right answer.
        crate::metrics::declines(&prediction)
    } else {
        verdict(
            &models
                .judge
                .complete(&judge_request(question, reference, &prediction))?
                .content,
        )
    };
    Ok(QaOutcome {
        category,
        f1: answer_f1(category, &prediction, reference),
        bleu1: if category == 5 {
            0.0
        } else {
            bleu1(&prediction, reference)
        },
        judged_correct,
        prompt_tokens: resp.usage.prompt_tokens,
        prediction,
    })
}

/// Mean QA scores; category 5 is reported apart and kept out of `overall`.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct QaSummary {
    pub answer_model: String,
    pub judge_model: String,
    /// Categories 1–4.
    pub overall: BTreeMap<String, f64>,
    pub per_category: BTreeMap<String, BTreeMap<String, f64>>,
    /// Category 5: the share of questions the model declined.
    pub adversarial: BTreeMap<String, f64>,
    pub mean_prompt_tokens: f64,
    pub questions: usize,
}

pub fn summarize(models: &QaModels, outcomes: &[QaOutcome]) -> QaSummary {
    fn means(items: &[&QaOutcome]) -> BTreeMap<String, f64> {
        let n = items.len().max(1) as f64;
        let mut m = BTreeMap::new();
        m.insert("f1".into(), items.iter().map(|o| o.f1).sum::<f64>() / n);
        m.insert(
            "bleu1".into(),
            items.iter().map(|o| o.bleu1).sum::<f64>() / n,
        );
        m.insert(
            "judge_accuracy".into(),
            items.iter().filter(|o| o.judged_correct).count() as f64 / n,
        );
        m.insert("count".into(), items.len() as f64);
        m
    }
    let main: Vec<&QaOutcome> = outcomes.iter().filter(|o| o.category != 5).collect();
    let adv: Vec<&QaOutcome> = outcomes.iter().filter(|o| o.category == 5).collect();
    let mut per_category = BTreeMap::new();
    for c in 1..=5u8 {
        let items: Vec<&QaOutcome> = outcomes.iter().filter(|o| o.category == c).collect();
        if !items.is_empty() {
            per_category.insert(c.to_string(), means(&items));
        }
    }
    let mut adversarial = BTreeMap::new();
    adversarial.insert(
        "declined".into(),
        adv.iter().filter(|o| o.judged_correct).count() as f64 / adv.len().max(1) as f64,
    );
    adversarial.insert("count".into(), adv.len() as f64);
    QaSummary {
        answer_model: models.answer.model_id().to_string(),
        judge_model: models.judge.model_id().to_string(),
        overall: means(&main),
        per_category,
        adversarial,
        mean_prompt_tokens: outcomes.iter().map(|o| o.prompt_tokens as f64).sum::<f64>()
            / outcomes.len().max(1) as f64,
        questions: outcomes.len(),
    }
}

#[cfg(test)]
mod tests {
    use super::verdict;

    #[test]
    fn verdicts_are_read_by_whole_words_negative_forms_first() {
        for (text, correct) in [
            ("CORRECT", true),
            ("correct", true),
            ("Correct.", true),
            ("  **CORRECT**\n", true),
            ("Verdict: CORRECT", true),
            ("The candidate is correct", true),
            ("INCORRECT", false),
            ("Incorrect.", false),
            ("incorrect", false),
            ("NOT CORRECT", false),
            ("not correct", false),
            ("It isn't correct", false),
            ("It isn’t correct", false),
            ("WRONG", false),
            ("CORRECT or WRONG", false),
            ("Correct? No.", false),
            ("FALSE", false),
            ("CORRECTLY", false),
            ("UNCORRECTED", false),
            ("", false),
            ("I cannot judge this.", false),
        ] {
            assert_eq!(verdict(text), correct, "{text:?}");
        }
    }
}
