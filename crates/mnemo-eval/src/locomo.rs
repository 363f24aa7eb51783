//! The LoCoMo dataset (Maharana et al., ACL 2024): conversations of many dated sessions, with
//! questions whose evidence is a set of turn ids (`D3:7` = session 3, turn 7).
//!
//! Parsing is lenient where the published files are inconsistent — answers may be numbers,
//! adversarial questions carry `adversarial_answer` instead of `answer`, and a few evidence
//! fields pack several ids into one string — and strict where a mistake would skew scores: a
//! session without a parseable date is an error, not a turn dated "now".

use anyhow::{anyhow, bail, Context, Result};
use chrono::{NaiveDateTime, TimeZone, Utc};
use mnemo_core::Timestamp;
use serde_json::Value;
use std::path::Path;

#[derive(Debug, Clone, PartialEq)]
pub struct Turn {
    /// `D<session>:<turn>`.
    pub dia_id: String,
    pub speaker: String,
    /// The spoken text, with the caption of a shared image appended.
    pub text: String,
}

#[derive(Debug, Clone)]
pub struct Session {
    pub number: u32,
    pub date: Timestamp,
    pub turns: Vec<Turn>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Question {
    pub question: String,
    /// The reference answer (for category 5, the adversarial answer when there is no other).
    pub answer: String,
    pub evidence: Vec<String>,
    pub category: u8,
}

#[derive(Debug, Clone)]
pub struct Conversation {
    pub sample_id: String,
    pub speakers: [String; 2],
    pub sessions: Vec<Session>,
    pub questions: Vec<Question>,
}

impl Conversation {
    pub fn turns(&self) -> impl Iterator<Item = &Turn> {
        self.sessions.iter().flat_map(|s| s.turns.iter())
    }
}

pub fn load(path: &Path) -> Result<Vec<Conversation>> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("reading LoCoMo data from {}", path.display()))?;
    let value: Value = serde_json::from_str(&text)
        .with_context(|| format!("{} is not valid JSON", path.display()))?;
    parse(&value)
}

pub fn parse(value: &Value) -> Result<Vec<Conversation>> {
    let items = value
        .as_array()
        .ok_or_else(|| anyhow!("LoCoMo data must be a JSON array of conversations"))?;
    items
        .iter()
        .enumerate()
        .map(|(i, c)| parse_conversation(c).with_context(|| format!("conversation {i}")))
        .collect()
}

fn text_of(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

fn parse_conversation(c: &Value) -> Result<Conversation> {
    let sample_id = c
        .get("sample_id")
        .and_then(text_of)
        .unwrap_or_else(|| "conversation".into());
    let conv = c
        .get("conversation")
        .and_then(Value::as_object)
        .ok_or_else(|| anyhow!("missing object `conversation`"))?;
    let speaker = |k: &str| conv.get(k).and_then(text_of).unwrap_or_default();
    let mut numbers: Vec<u32> = conv
        .keys()
        .filter_map(|k| k.strip_prefix("session_")?.parse().ok())
        .collect();
    numbers.sort_unstable();
    let mut sessions = Vec::new();
    for n in numbers {
        let Some(turns) = conv.get(&format!("session_{n}")).and_then(Value::as_array) else {
            continue;
        };
        let date_text = conv
            .get(&format!("session_{n}_date_time"))
            .and_then(Value::as_str)
            .ok_or_else(|| anyhow!("session {n} has no date"))?;
        let date = parse_date(date_text).with_context(|| format!("session {n}"))?;
        let turns = turns
            .iter()
            .map(parse_turn)
            .collect::<Result<Vec<_>>>()
            .with_context(|| format!("session {n}"))?;
        sessions.push(Session {
            number: n,
            date,
            turns,
        });
    }
    let questions = c
        .get("qa")
        .and_then(Value::as_array)
        .map(|qs| qs.iter().map(parse_question).collect::<Result<Vec<_>>>())
        .transpose()?
        .unwrap_or_default();
    Ok(Conversation {
        sample_id,
        speakers: [speaker("speaker_a"), speaker("speaker_b")],
        sessions,
        questions,
    })
}

fn parse_turn(t: &Value) -> Result<Turn> {
    let dia_id = t
        .get("dia_id")
        .and_then(text_of)
        .ok_or_else(|| anyhow!("a turn has no dia_id"))?;
    let speaker = t.get("speaker").and_then(text_of).unwrap_or_default();
    let mut text = t.get("text").and_then(text_of).unwrap_or_default();
    if let Some(caption) = t.get("blip_caption").and_then(text_of) {
        if !caption.trim().is_empty() {
            text = format!("{text} [shares {caption}]");
        }
    }
    Ok(Turn {
        dia_id,
        speaker,
        text,
    })
}

fn parse_question(q: &Value) -> Result<Question> {
    let question = q
        .get("question")
        .and_then(text_of)
        .ok_or_else(|| anyhow!("a question has no text"))?;
    let category =
        q.get("category")
            .and_then(Value::as_u64)
            .filter(|c| (1..=5).contains(c))
            .ok_or_else(|| anyhow!("question {question:?} has no category 1-5"))? as u8;
    let answer = q
        .get("answer")
        .and_then(text_of)
        .or_else(|| q.get("adversarial_answer").and_then(text_of))
        .unwrap_or_default();
    let mut evidence = Vec::new();
    for e in q
        .get("evidence")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        if let Some(s) = e.as_str() {
            evidence.extend(evidence_ids(s));
        }
    }
    evidence.dedup();
    Ok(Question {
        question,
        answer,
        evidence,
        category,
    })
}

/// Turn ids inside one evidence string (`"D8:6; D9:17"` holds two).
pub fn evidence_ids(s: &str) -> Vec<String> {
    s.split(|c: char| c == ';' || c == ',' || c.is_whitespace())
        .filter_map(|part| {
            let part = part.trim();
            let (d, t) = part.strip_prefix('D')?.split_once(':')?;
            let (d, t): (u32, u32) = (d.parse().ok()?, t.parse().ok()?);
            Some(format!("D{d}:{t}"))
        })
        .collect()
}

/// LoCoMo session dates look like `1:56 pm on 8 May, 2023`; they are read as UTC.
pub fn parse_date(s: &str) -> Result<Timestamp> {
    let cleaned = s.trim().to_lowercase().replace(" on ", " ");
    for fmt in ["%I:%M %p %d %B, %Y", "%I:%M %p %d %B %Y"] {
        if let Ok(t) = NaiveDateTime::parse_from_str(&cleaned, fmt) {
            return Ok(Utc.from_utc_datetime(&t));
        }
    }
    bail!("unrecognised session date {s:?}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_and_evidence_parse() {
        let t = parse_date("1:56 pm on 8 May, 2023").unwrap();
        assert_eq!(t.to_rfc3339(), "2023-05-08T13:56:00+00:00");
        assert!(parse_date("yesterday").is_err());
        assert_eq!(evidence_ids("D8:6; D9:17"), vec!["D8:6", "D9:17"]);
        assert_eq!(evidence_ids("D1:3"), vec!["D1:3"]);
        assert!(evidence_ids("D:").is_empty());
    }

    #[test]
    fn conversation_parses_with_captions_and_numeric_answers() {
        let v = serde_json::json!([{
            "sample_id": "s1",
            "conversation": {
                "speaker_a": "Ann", "speaker_b": "Bo",
                "session_2_date_time": "9:00 am on 2 June, 2023",
                "session_2": [{"speaker": "Bo", "dia_id": "D2:1", "text": "Look!", "blip_caption": "a photo of a cat"}],
                "session_1_date_time": "1:56 pm on 8 May, 2023",
                "session_1": [{"speaker": "Ann", "dia_id": "D1:1", "text": "Hi"}]
            },
            "qa": [
                {"question": "Year?", "answer": 2022, "evidence": ["D1:1"], "category": 2},
                {"question": "Pet?", "adversarial_answer": "cat", "evidence": ["D2:1; D1:1"], "category": 5},
                {"question": "None?", "answer": "x", "evidence": [], "category": 4}
            ]
        }]);
        let c = &parse(&v).unwrap()[0];
        assert_eq!(c.sessions[0].number, 1, "sessions are ordered by number");
        assert_eq!(
            c.sessions[1].turns[0].text,
            "Look! [shares a photo of a cat]"
        );
        assert_eq!(c.questions[0].answer, "2022");
        assert_eq!(c.questions[1].answer, "cat");
        assert_eq!(c.questions[1].evidence, vec!["D2:1", "D1:1"]);
        assert!(c.questions[2].evidence.is_empty());
        assert_eq!(c.turns().count(), 2);
    }
}
