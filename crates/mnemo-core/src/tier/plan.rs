//! Planning the hierarchy's changes for one add (see [`crate::tier`] for the model). Pure: it
//! reads a snapshot the caller took through the store and returns a [`TierWrite`] for the add's
//! transaction; the only outside call is to the chat model, made here, before that transaction.
//!
//! Order of work in [`plan()`]:
//! 1. The add's pages ([`pages`]: one per exchange) join their session's short-term window.
//! 2. While the window holds more than `short_term_capacity` pages, the oldest move. Each
//!    joins the active segment of the scope with the best [`crate::tier::join_score`] when it
//!    reaches `join_threshold` — segments this plan opened or grew are candidates too, as they
//!    stand after the pages before it — else it opens a new segment.
//! 3. **Continuity.** A moving page of a named session `continues` the page before it in the
//!    session (the previous moving page, or the last page that left the window earlier).
//!    Without a chat model the rule is: cosine similarity of the two pages' vectors at least
//!    `continuity_threshold`. With one, one `continuity` call judges every pair of the add.
//!    Pages without a session never continue anything.
//! 4. **Segment contents.** Vector: the normalised running mean of its pages' vectors (the old
//!    unit vector weighted by its page count, plus the page's). Keywords (rules): the old ones
//!    weighted by the pages they summarised (rank `r` of `K` counts `n·(K−r)/K`) plus one per
//!    joining page that lists the word, best [`MAX_SEGMENT_KEYWORDS`]. Summary (rules,
//!    `summary_author = rule`): lines of the old summary and of the joining pages, the ones
//!    naming the most segment keywords first (earlier first on a tie), as many as fit in
//!    [`MAX_SUMMARY_WORDS`] words, kept in their original order. With a chat model one
//!    `summarise` call per touched segment writes both (`summary_author = model`). Event time:
//!    the span of the old one and what each joining page states ([`page_event_time`]).
//! 5. **LFU eviction.** With `mid_term_capacity` set and more active segments than that, the
//!    coldest by [`crate::tier::heat`] are evicted; a segment this plan wrote is not a
//!    candidate (it was just used), so one add opening more segments than the capacity leaves
//!    the excess to the next add.
//!
//! Rewrites of existing segments and evictions carry the version the snapshot saw; the store
//! refuses the batch with a conflict when a segment changed since, and the caller re-plans.

mod model;
pub mod pages;

pub use pages::{estimate_tokens, exchanges, new_page, page_text};

use crate::chat::ChatModel;
use crate::error::Result;
use crate::memory::{Author, PageId, PageTier, SegmentId, Timestamp};
use crate::pipeline::CallLog;
use crate::scope::Scope;
use crate::tier::*;
use std::borrow::Cow;

/// The most keywords a segment keeps.
pub const MAX_SEGMENT_KEYWORDS: usize = 12;
/// The longest rule-made summary, in words.
pub const MAX_SUMMARY_WORDS: usize = 60;

/// One (scope, session)'s short-term window as a plan sees it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Window {
    /// Its pages, oldest first (`Store::pages` with `tier = short`).
    pub pages: Vec<StoredPage>,
    /// The session's newest page that already left the window (for continuity), if any.
    pub before: Option<StoredPage>,
}

/// What one add's plan starts from.
pub struct PlanInput<'a> {
    pub scope: &'a Scope,
    pub window: &'a Window,
    /// The scope's active segments (exactly the scope), as the store holds them.
    pub segments: &'a [Segment],
    /// The add's new pages, in order (all of the window's session).
    pub pages: Vec<NewPage>,
    pub config: &'a TierConfig,
    pub now: Timestamp,
}

/// The hierarchy changes of one add (see the module doc). An error only from the chat model.
pub fn plan(
    input: PlanInput<'_>,
    chat: Option<&dyn ChatModel>,
    log: &mut CallLog,
) -> Result<TierWrite> {
    let cfg = input.config;
    let stored = input.window.pages.iter().map(|p| Slot {
        id: p.id,
        text: &p.text,
        vector: &p.vector,
        keywords: &p.keywords,
        tokens: p.tokens,
        at: p.at,
    });
    let fresh = input.pages.iter().map(|p| Slot {
        id: p.id,
        text: &p.text,
        vector: &p.vector,
        keywords: &p.keywords,
        tokens: p.tokens,
        at: p.at,
    });
    let window: Vec<Slot<'_>> = stored.chain(fresh).collect();
    let excess = window.len().saturating_sub(cfg.short_term_capacity.max(1));
    let moving = &window[..excess];
    let sessioned = input
        .pages
        .first()
        .map(|p| p.session_id.is_some())
        .or_else(|| input.window.pages.first().map(|p| p.session_id.is_some()))
        .unwrap_or(false);

    // Continuity of each moving page with the one before it.
    let before = input.window.before.as_ref().map(|p| Slot {
        id: p.id,
        text: &p.text,
        vector: &p.vector,
        keywords: &p.keywords,
        tokens: p.tokens,
        at: p.at,
    });
    let pairs: Vec<(usize, Slot<'_>, Slot<'_>)> = if sessioned {
        moving
            .iter()
            .enumerate()
            .filter_map(|(i, page)| {
                let prev = if i == 0 { before } else { Some(moving[i - 1]) };
                prev.map(|prev| (i, prev, *page))
            })
            .collect()
    } else {
        Vec::new()
    };
    let judged: Vec<bool> = match chat {
        Some(chat) if !pairs.is_empty() => {
            let texts: Vec<(&str, &str)> = pairs.iter().map(|(_, a, b)| (a.text, b.text)).collect();
            model::continuity(chat, log, &texts)?
        }
        _ => pairs
            .iter()
            .map(|(_, a, b)| cosine(a.vector, b.vector) >= cfg.continuity_threshold)
            .collect(),
    };
    let mut continues: Vec<Option<PageId>> = vec![None; moving.len()];
    for ((i, prev, _), yes) in pairs.iter().zip(judged) {
        if yes {
            continues[*i] = Some(prev.id);
        }
    }

    // Joins.
    // Segments are borrowed from the snapshot and copied only when a page joins one: a scope
    // may hold many, and a plan touches a few.
    let mut work: Vec<Work<'_>> = input
        .segments
        .iter()
        .map(|s| Work {
            seg: Cow::Borrowed(s),
            was: Some(s.version),
            old_keywords: &s.keywords,
            joined: Vec::new(),
        })
        .collect();
    let mut moves = Vec::with_capacity(moving.len());
    for (page, continues) in moving.iter().zip(continues) {
        let best = work
            .iter()
            .enumerate()
            .map(|(i, w)| (i, join_score(page.vector, page.keywords, &w.seg)))
            .filter(|(_, s)| *s >= cfg.join_threshold)
            .max_by(|a, b| a.1.total_cmp(&b.1));
        let at = match best {
            Some((i, _)) => i,
            None => {
                work.push(Work::open(input.scope, input.now));
                work.len() - 1
            }
        };
        work[at].join(page, input.now);
        moves.push(PageMove {
            page: page.id,
            segment: work[at].seg.id,
            continues,
        });
    }

    // Summaries and keywords of the touched segments.
    for w in work.iter_mut().filter(|w| !w.joined.is_empty()) {
        match chat {
            Some(chat) => {
                let texts: Vec<&str> = w.joined.iter().map(String::as_str).collect();
                let (summary, keywords) =
                    model::summarise(chat, log, &w.seg.summary, w.old_keywords, &texts)?;
                let seg = w.seg.to_mut();
                seg.summary = summary;
                seg.keywords = keywords;
                seg.summary_author = Author::Model;
            }
            None => {
                let mut lines: Vec<&str> = w.seg.summary.lines().collect();
                lines.extend(w.joined.iter().flat_map(|t| t.lines()));
                let summary = extractive_summary(&lines, &w.seg.keywords);
                let seg = w.seg.to_mut();
                seg.summary = summary;
                seg.summary_author = Author::Rule;
            }
        }
    }

    let evictions = evictions(&work, cfg, input.now);
    let segments = work
        .into_iter()
        .filter(|w| !w.joined.is_empty())
        .map(|w| SegmentWrite {
            segment: w.seg.into_owned(),
            expected_version: w.was,
        })
        .collect();
    Ok(TierWrite {
        pages: input.pages,
        segments,
        moves,
        evictions,
        analysed: Vec::new(),
    })
}

/// A page as the planner reads it (stored or new).
#[derive(Clone, Copy)]
struct Slot<'a> {
    id: PageId,
    text: &'a str,
    vector: &'a [f32],
    keywords: &'a [String],
    tokens: u32,
    /// When the exchange was said (the anchor of its event time).
    at: Timestamp,
}

/// A segment while the plan changes it (the snapshot's own until a page joins it).
struct Work<'a> {
    seg: Cow<'a, Segment>,
    /// Its stored version; `None` for a segment this plan opens.
    was: Option<u64>,
    /// Its keywords before this plan (what the model is shown; joins merge into `seg`).
    old_keywords: &'a [String],
    /// The texts of the pages joining it in this plan.
    joined: Vec<String>,
}

impl Work<'_> {
    fn open(scope: &Scope, now: Timestamp) -> Self {
        Work {
            seg: Cow::Owned(Segment {
                id: SegmentId::new(),
                scope: scope.clone(),
                summary: String::new(),
                summary_author: Author::Rule,
                keywords: Vec::new(),
                vector: Vec::new(),
                page_count: 0,
                length_tokens: 0,
                visits: 0,
                last_visit_at: now,
                created_at: now,
                updated_at: now,
                evicted_at: None,
                version: 0,
                event_time: None,
            }),
            was: None,
            old_keywords: &[],
            joined: Vec::new(),
        }
    }

    fn join(&mut self, page: &Slot<'_>, now: Timestamp) {
        let s = self.seg.to_mut();
        let n = s.page_count as f32;
        if s.vector.len() == page.vector.len() && n > 0.0 {
            s.vector
                .iter_mut()
                .zip(page.vector)
                .for_each(|(v, p)| *v = *v * n + p);
        } else {
            s.vector = page.vector.to_vec();
        }
        crate::embed::l2_normalize(&mut s.vector);
        s.keywords = merge_keywords(&s.keywords, s.page_count, page.keywords);
        s.page_count += 1;
        s.length_tokens += u64::from(page.tokens);
        if let Some(e) = page_event_time(page.text, page.at) {
            s.event_time = Some(match &s.event_time {
                Some(old) => old.span(&e),
                None => e,
            });
        }
        s.updated_at = now;
        self.joined.push(page.text.to_string());
    }
}

/// Old keywords weighted by the `pages` they summarised, plus one per joining page that lists
/// the word (case-insensitive), best [`MAX_SEGMENT_KEYWORDS`] (first seen first on a tie).
fn merge_keywords(old: &[String], pages: u32, new: &[String]) -> Vec<String> {
    let mut scored: Vec<(String, f32)> = Vec::new();
    let k = old.len() as f32;
    let weighted = old
        .iter()
        .enumerate()
        .map(|(r, w)| (w, pages.max(1) as f32 * (k - r as f32) / k))
        .chain(new.iter().map(|w| (w, 1.0)));
    for (w, score) in weighted {
        match scored.iter_mut().find(|(s, _)| s.eq_ignore_ascii_case(w)) {
            Some((_, s)) => *s += score,
            None => scored.push((w.clone(), score)),
        }
    }
    // A stable sort keeps first-seen order among equal scores.
    scored.sort_by(|a, b| b.1.total_cmp(&a.1));
    scored
        .into_iter()
        .take(MAX_SEGMENT_KEYWORDS)
        .map(|(w, _)| w)
        .collect()
}

/// The rule summary: the candidate lines naming the most keywords, up to
/// [`MAX_SUMMARY_WORDS`] words, in candidate order (see the module doc).
pub fn extractive_summary(lines: &[&str], keywords: &[String]) -> String {
    let key_words: std::collections::HashSet<String> = keywords
        .iter()
        .flat_map(|k| crate::text::words(k))
        .collect();
    let mut seen = std::collections::HashSet::new();
    let mut scored: Vec<(usize, usize, usize)> = lines
        .iter()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty() && seen.insert(l.trim()))
        .map(|(i, l)| {
            let named: std::collections::HashSet<String> = crate::text::words(l)
                .filter(|w| key_words.contains(w))
                .collect();
            (i, named.len(), l.split_whitespace().count())
        })
        .collect();
    scored.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    let (mut chosen, mut used) = (Vec::new(), 0);
    for (i, _, words) in &scored {
        if used + words <= MAX_SUMMARY_WORDS {
            chosen.push(*i);
            used += words;
        }
    }
    if chosen.is_empty() {
        // Every line is longer than the cap: the best one, cut.
        return match scored.first() {
            Some((i, _, _)) => {
                let cut: Vec<&str> = lines[*i]
                    .split_whitespace()
                    .take(MAX_SUMMARY_WORDS)
                    .collect();
                format!("{} …", cut.join(" "))
            }
            None => String::new(),
        };
    }
    chosen.sort_unstable();
    chosen
        .into_iter()
        .map(|i| lines[i].trim())
        .collect::<Vec<_>>()
        .join("\n")
}

/// The LFU evictions once the plan's joins are made (see the module doc).
fn evictions(work: &[Work<'_>], cfg: &TierConfig, now: Timestamp) -> Vec<Eviction> {
    let Some(cap) = cfg.mid_term_capacity else {
        return Vec::new();
    };
    let active = work.len();
    if active <= cap {
        return Vec::new();
    }
    let mut cold: Vec<(&Work<'_>, f64)> = work
        .iter()
        .filter(|w| w.joined.is_empty())
        .map(|w| (w, heat(&w.seg, &cfg.heat, now)))
        .collect();
    cold.sort_by(|a, b| {
        a.1.total_cmp(&b.1)
            .then(a.0.seg.last_visit_at.cmp(&b.0.seg.last_visit_at))
    });
    cold.into_iter()
        .take(active - cap)
        .map(|(w, h)| Eviction {
            segment: w.seg.id,
            expected_version: w.seg.version,
            reason: format!(
                "coldest of {active} active segments (heat {h:.3}); mid_term_capacity is {cap}"
            ),
        })
        .collect()
}

/// The window and segments after `write` commits: what the next add of the same store batch
/// plans from. Versions advance as the store advances them (new: 1, rewrite: expected + 1).
pub fn apply(write: &TierWrite, window: &mut Window, segments: &mut Vec<Segment>) {
    let last = window
        .pages
        .iter()
        .chain(&window.before)
        .map(|p| p.seq)
        .max()
        .unwrap_or(0);
    for (seq, p) in (last + 1..).zip(&write.pages) {
        window.pages.push(StoredPage {
            id: p.id,
            scope: p.scope.clone(),
            session_id: p.session_id.clone(),
            seq,
            message_ids: p.message_ids.clone(),
            text: p.text.clone(),
            tokens: p.tokens,
            at: p.at,
            vector: p.vector.clone(),
            keywords: p.keywords.clone(),
            tier: PageTier::Short,
            segment: None,
            continues: None,
            analysed: false,
        });
    }
    for m in &write.moves {
        if let Some(at) = window.pages.iter().position(|p| p.id == m.page) {
            let mut p = window.pages.remove(at);
            p.tier = PageTier::Mid;
            p.segment = Some(m.segment);
            p.continues = m.continues;
            window.before = Some(p);
        }
    }
    for w in &write.segments {
        let mut s = w.segment.clone();
        s.version = w.expected_version.map_or(1, |v| v + 1);
        match segments.iter_mut().find(|x| x.id == s.id) {
            Some(x) => *x = s,
            None => segments.push(s),
        }
    }
    segments.retain(|s| !write.evictions.iter().any(|e| e.segment == s.id));
}

#[cfg(test)]
mod tests;
