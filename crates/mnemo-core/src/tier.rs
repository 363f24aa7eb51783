//! The memory hierarchy (MemoryOS lineage): pages, the short-term window, mid-term segments
//! with heat, and the settings that shape them.
//!
//! A **page** is one exchange (a user turn and the reply that follows it, or a lone turn) made
//! from the messages an add logs. Each (scope, session) keeps its newest
//! [`TierConfig::short_term_capacity`] pages in the **short-term** window; when an add pushes the
//! window over, the oldest pages move to **mid-term**, where each joins the most similar
//! **segment** (a topic thread of pages with a summary, keywords and a vector) or opens a new one.
//! Segments warm up when retrieval returns their pages and cool with time ([`heat`]); above
//! [`TierConfig::mid_term_capacity`] the coldest is evicted: its pages leave mid-term (tier
//! `evicted`), while the messages, the memories derived from them and their provenance stay.
//!
//! The pipeline in `mnemo` plans every change from a snapshot read through [`crate::Store`]
//! ([`crate::Tiers::pages`], [`crate::Tiers::segments`]) and hands it to the store as a
//! [`TierWrite`] inside the add's [`crate::WriteBatch`], so a page is never in neither tier: the
//! store checks the snapshot still holds (pages still short, segment versions unchanged) and
//! fails the whole batch with a conflict otherwise; the pipeline then plans again.

pub mod plan;

use crate::error::{Error, Result};
use crate::memory::{Author, MessageId, PageId, PageTier, SegmentId, Timestamp};
use crate::scope::Scope;
use serde::{Deserialize, Serialize};

/// The hierarchy's settings. Every field is in `MemoryConfig`, `mnemo.toml`, the environment and
/// the CLI flags.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TierConfig {
    /// Pages each (scope, session) keeps verbatim in its short-term window (≥ 1).
    pub short_term_capacity: usize,
    /// Active segments per scope; above it the coldest (lowest [`heat`]) is evicted. `None`:
    /// unbounded.
    pub mid_term_capacity: Option<usize>,
    /// A moving page joins the best segment when [`join_score`] reaches this.
    pub join_threshold: f32,
    /// Without a chat model, a page continues the previous page of its session when the cosine
    /// similarity of their vectors reaches this.
    pub continuity_threshold: f32,
    /// Heat weights and time constant.
    pub heat: HeatWeights,
    /// A segment whose heat reaches this has its unanalysed pages analysed into the profile and
    /// knowledge (needs a chat model). `None`: only on demand.
    pub profile_heat_threshold: Option<f64>,
}

impl Default for TierConfig {
    fn default() -> Self {
        Self {
            short_term_capacity: 10,
            mid_term_capacity: None,
            join_threshold: 0.55,
            continuity_threshold: 0.35,
            heat: HeatWeights::default(),
            profile_heat_threshold: Some(5.0),
        }
    }
}

/// `heat = visits·visits + length·(interaction tokens / 1000) + recency·exp(−age / tau)`, where
/// age is the time since the segment was last visited (or created).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct HeatWeights {
    /// α: per visit (a retrieval that returned the segment's pages).
    pub visits: f64,
    /// β: per 1,000 tokens of the segment's pages.
    pub length: f64,
    /// γ: weight of recency, which is 1 at the last visit and decays exponentially.
    pub recency: f64,
    /// The decay's time constant, in hours (recency falls to 1/e after this long).
    pub tau_hours: f64,
}

impl Default for HeatWeights {
    fn default() -> Self {
        Self {
            visits: 1.0,
            length: 1.0,
            recency: 1.0,
            tau_hours: 24.0,
        }
    }
}

impl TierConfig {
    /// Checks every field; the error names the first bad one.
    pub fn validate(&self) -> Result<()> {
        if self.short_term_capacity == 0 {
            return Err(Error::invalid("short_term_capacity", "must be at least 1"));
        }
        if self.short_term_capacity > 10_000 {
            return Err(Error::invalid(
                "short_term_capacity",
                "must be at most 10000",
            ));
        }
        if self.mid_term_capacity == Some(0) {
            return Err(Error::invalid(
                "mid_term_capacity",
                "must be at least 1 (leave it unset for no limit)",
            ));
        }
        for (field, v) in [
            ("join_threshold", self.join_threshold),
            ("continuity_threshold", self.continuity_threshold),
        ] {
            if !(0.0..=1.0).contains(&v) {
                return Err(Error::invalid(field, "must be a number in [0, 1]"));
            }
        }
        let h = &self.heat;
        for (field, v) in [
            ("heat.visits", h.visits),
            ("heat.length", h.length),
            ("heat.recency", h.recency),
        ] {
            if !(v.is_finite() && v >= 0.0) {
                return Err(Error::invalid(field, "must be a non-negative number"));
            }
        }
        if !(h.tau_hours.is_finite() && h.tau_hours > 0.0) {
            return Err(Error::invalid(
                "heat.tau_hours",
                "must be a positive number",
            ));
        }
        if let Some(t) = self.profile_heat_threshold {
            if !(t.is_finite() && t > 0.0) {
                return Err(Error::invalid(
                    "profile_heat_threshold",
                    "must be a positive number",
                ));
            }
        }
        Ok(())
    }
}

/// A page about to be written into its session's short-term window.
#[derive(Debug, Clone, PartialEq)]
pub struct NewPage {
    pub id: PageId,
    pub scope: Scope,
    pub session_id: Option<String>,
    /// The messages of the exchange, in order (all logged by the same batch or earlier).
    pub message_ids: Vec<MessageId>,
    /// The exchange as the pack shows it: one `speaker: text` line per message.
    pub text: String,
    /// Tokens of `text` (the configured tokenizer; used for interaction length and budgets).
    pub tokens: u32,
    /// The time of the exchange's first message.
    pub at: Timestamp,
    /// The page's vector (same model and dimension as memories).
    pub vector: Vec<f32>,
    /// Its distinctive terms (rules) for joining segments by keyword overlap.
    pub keywords: Vec<String>,
}

/// A page as stored. Its JSON form (an export record) leaves out the store-local `seq` and the
/// vector, which an import recomputes from the text.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StoredPage {
    pub id: PageId,
    pub scope: Scope,
    pub session_id: Option<String>,
    /// Store-assigned, increasing in write order across the store: orders a window.
    #[serde(skip)]
    pub seq: i64,
    pub message_ids: Vec<MessageId>,
    pub text: String,
    pub tokens: u32,
    pub at: Timestamp,
    #[serde(skip)]
    pub vector: Vec<f32>,
    pub keywords: Vec<String>,
    pub tier: PageTier,
    /// The segment it joined (mid-term or evicted pages).
    pub segment: Option<SegmentId>,
    /// The page of the same session this one continues (a `continues` link).
    pub continues: Option<PageId>,
    /// Whether a profile analysis has consumed it.
    pub analysed: bool,
}

/// A mid-term topic thread.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Segment {
    pub id: SegmentId,
    pub scope: Scope,
    pub summary: String,
    /// `model` when a chat model wrote the summary and keywords, `rule` when code chose them.
    pub summary_author: Author,
    pub keywords: Vec<String>,
    #[serde(skip)]
    pub vector: Vec<f32>,
    pub page_count: u32,
    /// Tokens of all its pages (interaction length).
    pub length_tokens: u64,
    pub visits: u64,
    /// The last visit, or creation when never visited.
    pub last_visit_at: Timestamp,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
    pub evicted_at: Option<Timestamp>,
    /// Incremented by the store on every write of the segment (optimistic concurrency).
    pub version: u64,
    /// When what its pages talk about happened: the span of the event times their messages
    /// state, each read against the time its page was said ([`page_event_time`]); `None` when
    /// no page states one (never invented). Cleared with the summary when an erase scrubs it.
    /// Absent from exports made before segments had it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub event_time: Option<crate::time::EventTime>,
}

/// The event time a page's messages state: each `speaker: text` line read by the rule tagger
/// against the page's time (the exchange's first message), the span of what they give.
pub fn page_event_time(text: &str, at: Timestamp) -> Option<crate::time::EventTime> {
    let opts = crate::time::TaggerOptions::default();
    text.lines()
        .map(|line| line.split_once(": ").map_or(line, |(_, said)| said))
        .filter_map(|said| crate::time::event_time_of(said, at, &opts))
        .reduce(|a, b| a.span(&b))
}

/// The heat of a segment at `now` (see [`HeatWeights`]).
pub fn heat(segment: &Segment, weights: &HeatWeights, now: Timestamp) -> f64 {
    let age_h = (now - segment.last_visit_at).num_milliseconds().max(0) as f64 / 3_600_000.0;
    weights.visits * segment.visits as f64
        + weights.length * segment.length_tokens as f64 / 1000.0
        + weights.recency * (-age_h / weights.tau_hours).exp()
}

/// How well a page fits a segment: `0.7 · cosine(vectors) + 0.3 · keyword overlap`, where the
/// overlap is the share of the page's keywords among the segment's (0 when the page has none).
pub fn join_score(page_vector: &[f32], page_keywords: &[String], segment: &Segment) -> f32 {
    let cos = cosine(page_vector, &segment.vector);
    let overlap = if page_keywords.is_empty() {
        0.0
    } else {
        let hits = page_keywords
            .iter()
            .filter(|k| segment.keywords.iter().any(|s| s.eq_ignore_ascii_case(k)))
            .count();
        hits as f32 / page_keywords.len() as f32
    };
    0.7 * cos + 0.3 * overlap
}

/// Cosine similarity; 0 for empty, mismatched or zero vectors.
pub fn cosine(a: &[f32], b: &[f32]) -> f32 {
    if a.len() != b.len() || a.is_empty() {
        return 0.0;
    }
    // Three sums of independent lanes ([`crate::embed::dot`]) instead of one scalar pass: a plan
    // scores every moving page against every active segment of the scope.
    let (dot, na, nb) = (
        crate::embed::dot(a, b),
        crate::embed::dot(a, a),
        crate::embed::dot(b, b),
    );
    if na == 0.0 || nb == 0.0 {
        0.0
    } else {
        dot / (na.sqrt() * nb.sqrt())
    }
}

/// The hierarchy changes of one add, written in its transaction (see the module docs).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TierWrite {
    /// New pages, into their session's short-term window.
    pub pages: Vec<NewPage>,
    /// Segments to create or rewrite, before `moves` are applied.
    pub segments: Vec<SegmentWrite>,
    /// Pages moving from short-term to a segment. Each must still be `short` when the batch
    /// commits, else the batch fails with a conflict.
    pub moves: Vec<PageMove>,
    /// Segments evicted after the moves (their pages become `evicted`; an `EVICT` history
    /// event is recorded under the segment's id).
    pub evictions: Vec<Eviction>,
    /// Pages a profile analysis consumed (written with the profile and knowledge it produced).
    pub analysed: Vec<PageId>,
}

impl TierWrite {
    pub fn is_empty(&self) -> bool {
        self.pages.is_empty()
            && self.segments.is_empty()
            && self.moves.is_empty()
            && self.evictions.is_empty()
            && self.analysed.is_empty()
    }
}

/// A segment's new state. With `expected_version`, the stored segment must have that version
/// (else the batch fails with a conflict); without, the segment is new. The store sets
/// `version` (new: 1; rewrite: expected + 1), and ignores the given one.
#[derive(Debug, Clone, PartialEq)]
pub struct SegmentWrite {
    pub segment: Segment,
    pub expected_version: Option<u64>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct PageMove {
    pub page: PageId,
    pub segment: SegmentId,
    /// The earlier page of the same session this one continues.
    pub continues: Option<PageId>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Eviction {
    pub segment: SegmentId,
    /// The version the plan saw (a visit or join since then fails the batch with a conflict).
    pub expected_version: u64,
    /// Recorded in the `EVICT` event, e.g. `coldest of 11 segments (heat 1.2)`.
    pub reason: String,
}

/// Which pages [`crate::Tiers::pages`] returns: those whose owner the scope covers (exactly the
/// scope when `exact`), narrowed by the optional fields, oldest first (by `seq`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PageQuery {
    pub scope: Option<Scope>,
    pub exact: bool,
    /// `Some(None)`: pages without a session; `None`: any session.
    pub session: Option<Option<String>>,
    pub tier: Option<PageTier>,
    pub segment: Option<SegmentId>,
    pub analysed: Option<bool>,
    pub ids: Option<Vec<PageId>>,
    /// Newest `limit` pages (still returned oldest first); `None`: all.
    pub limit: Option<usize>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn segment(visits: u64, tokens: u64, last: Timestamp) -> Segment {
        Segment {
            id: SegmentId::new(),
            scope: Scope::user("u").unwrap(),
            summary: String::new(),
            summary_author: Author::Rule,
            keywords: vec!["tea".into(), "garden".into()],
            vector: vec![1.0, 0.0],
            page_count: 1,
            length_tokens: tokens,
            visits,
            last_visit_at: last,
            created_at: last,
            updated_at: last,
            evicted_at: None,
            version: 1,
            event_time: None,
        }
    }

    #[test]
    fn heat_adds_visits_length_and_decaying_recency() {
        let now = chrono::Utc::now();
        let w = HeatWeights::default();
        let fresh = heat(&segment(2, 500, now), &w, now);
        assert!((fresh - (2.0 + 0.5 + 1.0)).abs() < 1e-9, "{fresh}");
        let day_old = heat(&segment(2, 500, now - chrono::Duration::hours(24)), &w, now);
        assert!(
            (day_old - (2.5 + (-1.0f64).exp())).abs() < 1e-9,
            "{day_old}"
        );
        assert!(heat(&segment(3, 0, now), &w, now) > heat(&segment(2, 0, now), &w, now));
    }

    #[test]
    fn join_score_mixes_cosine_and_keyword_overlap() {
        let s = segment(0, 0, chrono::Utc::now());
        let same = join_score(&[1.0, 0.0], &["tea".into()], &s);
        assert!((same - 1.0).abs() < 1e-6);
        let orthogonal = join_score(&[0.0, 1.0], &["chess".into()], &s);
        assert!(orthogonal.abs() < 1e-6);
        let half = join_score(&[0.0, 1.0], &["tea".into(), "chess".into()], &s);
        assert!((half - 0.15).abs() < 1e-6);
    }

    #[test]
    fn validate_names_the_bad_field() {
        let mut c = TierConfig {
            short_term_capacity: 0,
            ..TierConfig::default()
        };
        assert!(c
            .validate()
            .unwrap_err()
            .to_string()
            .contains("short_term_capacity"));
        c.short_term_capacity = 10;
        c.mid_term_capacity = Some(0);
        assert!(c
            .validate()
            .unwrap_err()
            .to_string()
            .contains("mid_term_capacity"));
        c.mid_term_capacity = None;
        c.heat.tau_hours = 0.0;
        assert!(c.validate().unwrap_err().to_string().contains("tau_hours"));
        assert!(TierConfig::default().validate().is_ok());
    }
}
