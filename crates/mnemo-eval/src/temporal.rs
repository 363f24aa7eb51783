//! `mnemo eval temporal`: does the tagger date what LoCoMo's temporal questions ask about?
//!
//! Over the category-2 questions, each gold answer is read as an interval
//! (`mnemo_core::time::parse_answer`; relative answers such as "last year" against the session
//! date of the question's first evidence turn). Answers that are not a date or period ("4
//! years", "her mother") are counted and listed, not scored. For each parsed answer, every
//! evidence turn is tagged against its own session's date, and the question is *matched* when
//! some evidence turn's event time overlaps the answer's interval (half-open intervals sharing
//! an instant: "last week" said on Monday 8 May 2023 is 1–7 May, and "the week before 8 May
//! 2023" is the seven days before it, so they match).
//!
//! Three readings of an evidence turn are scored: its one event time (`event_time_of`, what the
//! write path stores; `matched_share`), any of its sentences' (`tag`;
//! `matched_share_any_sentence`), and its event time or, when the text states none, the day it
//! was said (`matched_share_with_said_day`: what a search that falls back on the anchor sees).

use crate::locomo::{Conversation, Turn};
use chrono::{NaiveTime, TimeDelta};
use mnemo_core::time::{event_time_of, parse_answer, tag, EventTime, Granularity, TaggerOptions};
use mnemo_core::Timestamp;
use serde::Serialize;
use std::collections::{BTreeMap, HashMap};

/// The JSON report of `mnemo eval temporal`. Compatible growth: fields are only added, and
/// every added field is optional.
#[derive(Debug, Clone, Serialize, Default)]
pub struct TemporalReport {
    /// Category-2 questions in the file.
    pub questions: usize,
    /// Of those, answers read as an interval.
    pub parsed: usize,
    /// Parsed answers some evidence turn's event time overlaps.
    pub matched: usize,
    /// `matched / parsed` (0 when nothing parsed).
    pub matched_share: f64,
    /// The same when every sentence's event time of an evidence turn counts.
    pub matched_share_any_sentence: f64,
    /// The same when a turn with no event time counts as happening on the day it was said.
    pub matched_share_with_said_day: f64,
    /// Parsed answers whose evidence carries an event time at all.
    pub tagged_share: f64,
    /// Keyed by the answer's granularity (`day`, `week`, …).
    pub per_granularity: BTreeMap<String, GranularityScore>,
    /// Recall@10 of the temporal category with temporal search on and off, measured in one
    /// run by the retrieval evaluation; absent from a tagger-only run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub recall_at_10_on: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub recall_at_10_off: Option<f64>,
    /// Answers that are not a date or period.
    pub unparsed: Vec<Unparsed>,
    /// Parsed answers no evidence event time overlaps, with what the tagger read.
    pub misses: Vec<Miss>,
}

#[derive(Debug, Clone, Serialize, Default, PartialEq)]
pub struct GranularityScore {
    pub questions: usize,
    pub matched: usize,
    pub matched_share: f64,
}

#[derive(Debug, Clone, Serialize)]
pub struct Unparsed {
    pub question: String,
    pub answer: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct Miss {
    pub question: String,
    pub answer: String,
    pub answer_start: Timestamp,
    pub answer_end: Timestamp,
    pub evidence: Vec<EvidenceReading>,
}

#[derive(Debug, Clone, Serialize)]
pub struct EvidenceReading {
    pub dia_id: String,
    pub said: Timestamp,
    pub event_time: Option<EventTime>,
}

fn share(part: usize, whole: usize) -> f64 {
    if whole == 0 {
        0.0
    } else {
        part as f64 / whole as f64
    }
}

/// Scores the tagger on the conversations' temporal questions (pure: no store, no model).
pub fn run_temporal(conversations: &[Conversation], opts: &TaggerOptions) -> TemporalReport {
    let mut report = TemporalReport::default();
    let (mut any_sentence, mut tagged, mut said_day) = (0, 0, 0);
    let mut counts: BTreeMap<Granularity, (usize, usize)> = BTreeMap::new();
    for conversation in conversations {
        let turns: HashMap<&str, (&Turn, Timestamp)> = conversation
            .sessions
            .iter()
            .flat_map(|s| {
                s.turns
                    .iter()
                    .map(move |t| (t.dia_id.as_str(), (t, s.date)))
            })
            .collect();
        for q in conversation.questions.iter().filter(|q| q.category == 2) {
            report.questions += 1;
            let evidence: Vec<(&Turn, Timestamp)> = q
                .evidence
                .iter()
                .filter_map(|id| turns.get(id.as_str()).copied())
                .collect();
            let question_anchor = evidence.first().map(|(_, said)| *said);
            let Some((start, end, granularity)) = parse_answer(&q.answer, question_anchor) else {
                report.unparsed.push(Unparsed {
                    question: q.question.clone(),
                    answer: q.answer.clone(),
                });
                continue;
            };
            report.parsed += 1;
            let readings: Vec<EvidenceReading> = evidence
                .iter()
                .map(|(turn, said)| EvidenceReading {
                    dia_id: turn.dia_id.clone(),
                    said: *said,
                    event_time: event_time_of(&turn.text, *said, opts),
                })
                .collect();
            let hit = readings.iter().any(|r| {
                r.event_time
                    .as_ref()
                    .is_some_and(|e| e.overlaps(start, end))
            });
            tagged += usize::from(readings.iter().any(|r| r.event_time.is_some()));
            said_day += usize::from(readings.iter().any(|r| match &r.event_time {
                Some(e) => e.overlaps(start, end),
                None => {
                    let day = r.said.date_naive().and_time(NaiveTime::MIN).and_utc();
                    day < end && start < day + TimeDelta::days(1)
                }
            }));
            any_sentence += usize::from(evidence.iter().any(|(turn, said)| {
                tag(&turn.text, *said, opts)
                    .iter()
                    .any(|e| e.overlaps(start, end))
            }));
            let entry = counts.entry(granularity).or_default();
            entry.0 += 1;
            if hit {
                entry.1 += 1;
                report.matched += 1;
            } else {
                report.misses.push(Miss {
                    question: q.question.clone(),
                    answer: q.answer.clone(),
                    answer_start: start,
                    answer_end: end,
                    evidence: readings,
                });
            }
        }
    }
    report.matched_share = share(report.matched, report.parsed);
    report.matched_share_any_sentence = share(any_sentence, report.parsed);
    report.tagged_share = share(tagged, report.parsed);
    report.matched_share_with_said_day = share(said_day, report.parsed);
    report.per_granularity = counts
        .into_iter()
        .map(|(g, (questions, matched))| {
            let score = GranularityScore {
                questions,
                matched,
                matched_share: share(matched, questions),
            };
            (g.as_str().to_string(), score)
        })
        .collect();
    report
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two sessions; questions whose evidence says "yesterday" (matched), "last week" against
    /// "the week before" (matched), nothing datable (missed, but the said day matches), a
    /// wrong day (missed) and a duration answer (not parsed).
    #[test]
    fn answers_are_parsed_matched_and_listed_per_granularity() {
        let v = serde_json::json!([{
            "sample_id": "s1",
            "conversation": {
                "speaker_a": "Ann", "speaker_b": "Bo",
                "session_1_date_time": "1:56 pm on 8 May, 2023",
                "session_1": [
                    {"speaker": "Ann", "dia_id": "D1:1", "text": "I went to a support group yesterday."},
                    {"speaker": "Bo", "dia_id": "D1:2", "text": "We had a picnic last week!"},
                    {"speaker": "Ann", "dia_id": "D1:3", "text": "My store is open!"}
                ],
                "session_2_date_time": "10:00 am on 2 June, 2023",
                "session_2": [
                    {"speaker": "Bo", "dia_id": "D2:1", "text": "I ran a race last Saturday."}
                ]
            },
            "qa": [
                {"question": "When group?", "answer": "7 May 2023", "evidence": ["D1:1"], "category": 2},
                {"question": "When picnic?", "answer": "The week before 8 May 2023", "evidence": ["D1:2"], "category": 2},
                {"question": "When open?", "answer": "8 May, 2023", "evidence": ["D1:3"], "category": 2},
                {"question": "When race?", "answer": "The sunday before 2 June 2023", "evidence": ["D2:1"], "category": 2},
                {"question": "How long?", "answer": "4 years", "evidence": ["D1:1"], "category": 2},
                {"question": "Not temporal", "answer": "7 May 2023", "evidence": ["D1:1"], "category": 1}
            ]
        }]);
        let conversations = crate::locomo::parse(&v).unwrap();
        let r = run_temporal(&conversations, &TaggerOptions::default());
        assert_eq!((r.questions, r.parsed, r.matched), (5, 4, 2));
        assert!((r.matched_share - 0.5).abs() < 1e-9);
        assert!((r.matched_share_with_said_day - 0.75).abs() < 1e-9);
        assert!((r.tagged_share - 0.75).abs() < 1e-9);
        assert_eq!(r.unparsed.len(), 1);
        assert_eq!(r.unparsed[0].answer, "4 years");
        let day = &r.per_granularity["day"];
        assert_eq!((day.questions, day.matched), (3, 1));
        assert_eq!(r.per_granularity["week"].matched, 1);
        let race = r
            .misses
            .iter()
            .find(|m| m.question == "When race?")
            .unwrap();
        let read = race.evidence[0].event_time.as_ref().unwrap();
        assert_eq!(read.phrase, "last Saturday");
        let json = serde_json::to_value(&r).unwrap();
        assert_eq!(json["matched_share"], 0.5);
        assert!(
            json.get("recall_at_10_on").is_none(),
            "absent until measured"
        );
    }
}
