//! Choosing and rendering a pack's items under its budget.
//!
//! The caller (the facade) gathers [`Candidate`]s — the profile, the current session's window,
//! conversation turns or pages reached by retrieval with their neighbours, segment summaries and
//! memories — each with a value (how likely it is to matter). [`assemble`] then:
//!
//! 1. drops a verbatim memory (a raw turn) whose source messages an exchange candidate already
//!    shows (the exchange takes the memory's value when higher), so nothing is shown twice;
//! 2. takes candidates greedily by `value / tokens^size_exponent`, charging each the tokens of
//!    its line plus the headers it opens (its section, its session block);
//! 3. spends what is left of the budget on showing excerpted items whole, most valuable first
//!    (a small pack of a small conversation then shows its turns as they were said);
//! 4. renders the chosen items compactly (one header per section, one date header per session
//!    block, pages in conversation order) and counts the rendered text exactly; while it is over
//!    the budget — token merges across lines can make the sum of parts differ from the whole —
//!    the least valuable item is dropped and the text rendered again.
//!
//! So `used_tokens`, the count of the final `rendered`, never exceeds the budget.

use super::{ContextPack, PackItem, PackSection, Reason, Section, TokenCounter};
use crate::memory::MessageId;
use std::collections::{HashMap, HashSet};

/// Tunes the choice of items (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PackParams {
    /// How strongly a long item is penalised: candidates are taken by
    /// `value / tokens^size_exponent` (0, the default: by value alone, each taken while it
    /// fits; 1: by value per token). On LoCoMo any penalty lost recall: it prefers short
    /// chit-chat ("Wow!") to the longer turns that hold the facts.
    pub size_exponent: f32,
}

impl Default for PackParams {
    fn default() -> Self {
        Self { size_exponent: 0.0 }
    }
}

/// A block of a section that shares one header: the turns of one session.
#[derive(Debug, Clone, PartialEq)]
pub struct Block {
    /// Identifies the block (a session id).
    pub key: String,
    /// Its header line, e.g. `[2023-05-08 13:56]`.
    pub header: String,
    /// Orders blocks within their section (e.g. the session's first message time, in ms).
    pub order: i64,
}

/// An item the pack may show.
#[derive(Debug, Clone, PartialEq)]
pub struct Candidate {
    pub section: Section,
    /// The item as it will be reported; `tokens` is filled in by [`assemble`].
    pub item: PackItem,
    /// How likely it is to matter (a retrieval score, decayed along links); ≥ 0.
    pub value: f32,
    /// The session block it is rendered in (turns and pages); `None`: a line of its own.
    pub block: Option<Block>,
    /// Orders items within their block or section (log position for turns; for lines of their
    /// own, lower first).
    pub order: i64,
    /// A memory whose text only repeats its source messages (a raw turn): left out when an
    /// exchange in the pack shows those messages.
    pub verbatim: bool,
    /// The whole text when `item.text` is an excerpt of it: shown instead when the budget has
    /// room for it once every item that fits is chosen.
    pub full: Option<String>,
}

impl Candidate {
    /// Exchanges (pages and logged turns) show their messages verbatim.
    fn is_exchange(&self) -> bool {
        matches!(self.item.kind.as_str(), "page" | "turn")
    }

    /// The line (or lines) the item renders as.
    fn line(&self) -> String {
        match self.item.kind.as_str() {
            "memory" => {
                let mut line = match self.item.at {
                    Some(at) => format!("- [{}] {}", at.format("%Y-%m-%d"), self.item.text),
                    None => format!("- {}", self.item.text),
                };
                if let (Some(e), Some(at)) = (&self.item.event_time, self.item.at) {
                    line.push_str(&format!(" ({})", super::dates::event_note(e, at)));
                }
                line
            }
            // A segment's event time spans several exchanges said on different days, so it
            // reads as dates alone (no "said on").
            "segment" => match &self.item.event_time {
                Some(e) => format!("Topic: {} ({})", self.item.text, super::dates::when(e)),
                None => format!("Topic: {}", self.item.text),
            },
            "relation" => format!("- {}", self.item.text),
            _ => self.item.text.clone(),
        }
    }
}

/// The header line of a section.
pub fn section_header(section: Section) -> &'static str {
    match section {
        Section::Blocks => crate::blocks::BLOCKS_HEADER,
        Section::Profile => "## User profile",
        Section::ShortTerm => "## This session (most recent last)",
        Section::Segments => "## Earlier conversation excerpts",
        Section::Memories => "## Memories",
        Section::Relations => "## Relations (current)",
    }
}

/// Chooses and renders the pack (see the module docs).
pub fn assemble(
    candidates: Vec<Candidate>,
    budget_tokens: u32,
    counter: &dyn TokenCounter,
    params: &PackParams,
) -> ContextPack {
    assemble_after(None, candidates, budget_tokens, counter, params)
}

/// Text rendered before a pack's sections (the core memory blocks), with its own token count.
#[derive(Debug, Clone, Copy)]
pub struct Prefix<'a> {
    pub text: &'a str,
    pub tokens: u32,
}

/// [`assemble`] under a `prefix` that the pack's rendering starts with (then a blank line): the
/// items are chosen in what the prefix leaves of `budget_tokens`, and the exact check counts
/// the whole — prefix, seam and items — so the rendering is counted once per check, as without
/// a prefix. `used_tokens` and `rendered` include the prefix; the prefix must fit the budget.
pub fn assemble_after(
    prefix: Option<Prefix<'_>>,
    candidates: Vec<Candidate>,
    budget_tokens: u32,
    counter: &dyn TokenCounter,
    params: &PackParams,
) -> ContextPack {
    let whole_budget = budget_tokens;
    // The separator's newline is estimated as one token, as each line's own.
    let budget_tokens = match prefix {
        Some(p) => budget_tokens.saturating_sub(p.tokens.saturating_add(1)),
        None => budget_tokens,
    };
    let mut cands = dedupe(candidates);
    for c in &mut cands {
        c.item.tokens = counter.count(&c.line());
    }
    let header_cost: HashMap<Section, u32> = [
        Section::Profile,
        Section::ShortTerm,
        Section::Segments,
        Section::Memories,
        Section::Relations,
    ]
    .into_iter()
    .map(|s| (s, counter.count(section_header(s)) + 2))
    .collect();
    let priority = |c: &Candidate| {
        let size = (c.item.tokens.max(1) as f32).powf(params.size_exponent);
        c.value.max(0.0) / size
    };
    let mut order: Vec<usize> = (0..cands.len()).collect();
    order.sort_by(|&a, &b| {
        priority(&cands[b])
            .total_cmp(&priority(&cands[a]))
            .then(a.cmp(&b))
    });

    // Greedy by priority on estimated costs (each line plus its newline, each header once).
    let mut chosen: Vec<usize> = Vec::new();
    let mut shown: HashSet<MessageId> = HashSet::new();
    let mut open_sections: HashSet<Section> = HashSet::new();
    let mut open_blocks: HashSet<(Section, String)> = HashSet::new();
    let mut used: u64 = 0;
    for &i in &order {
        let c = &cands[i];
        if c.verbatim
            && !c.item.message_ids.is_empty()
            && c.item.message_ids.iter().all(|m| shown.contains(m))
        {
            continue;
        }
        let mut cost = u64::from(c.item.tokens) + 1;
        if !open_sections.contains(&c.section) {
            cost += u64::from(header_cost[&c.section]);
        }
        if let Some(b) = &c.block {
            if !open_blocks.contains(&(c.section, b.key.clone())) {
                cost += u64::from(counter.count(&b.header)) + 1;
            }
        }
        if used + cost > u64::from(budget_tokens) {
            continue;
        }
        used += cost;
        open_sections.insert(c.section);
        if let Some(b) = &c.block {
            open_blocks.insert((c.section, b.key.clone()));
        }
        if c.is_exchange() {
            shown.extend(c.item.message_ids.iter().copied());
        }
        chosen.push(i);
    }
    // A memory taken before the exchange that shows its messages is now a repeat.
    chosen.retain(|&i| {
        let c = &cands[i];
        !c.verbatim
            || c.item.message_ids.is_empty()
            || !c.item.message_ids.iter().all(|m| shown.contains(m))
    });

    expand(&mut cands, &chosen, budget_tokens, counter);

    // Exact check: drop the least valuable items (last taken) until the whole fits.
    let render_whole = |chosen: &[usize]| match prefix {
        None => render_and_count(cands.as_slice(), chosen, counter),
        Some(p) => {
            let rest = render(&cands, chosen);
            let text = if rest.is_empty() {
                p.text.to_string()
            } else {
                format!("{}\n{rest}", p.text)
            };
            let n = counter.count(&text);
            (text, n)
        }
    };
    let (mut rendered, mut used_tokens) = render_whole(&chosen);
    let mut rounds = 0;
    while used_tokens > whole_budget && !chosen.is_empty() {
        rounds += 1;
        drop_for(&cands, &mut chosen, used_tokens - whole_budget, rounds);
        (rendered, used_tokens) = render_whole(&chosen);
    }
    let budget_tokens = whole_budget;
    let omitted = u32::try_from(cands.len() - chosen.len()).unwrap_or(u32::MAX);
    let sections = layout(&cands, &chosen)
        .into_iter()
        .map(|(section, items)| PackSection {
            section,
            items: merge_runs(items.iter().map(|&i| &cands[i])),
        })
        .collect();
    ContextPack {
        budget_tokens,
        used_tokens,
        tokenizer: counter.name().to_string(),
        sections,
        omitted,
        rendered,
    }
}

/// How many rounds of dropping go by each item's estimate before each round drops at least half
/// of what is left.
const ESTIMATED_ROUNDS: u32 = 2;

/// Drops the last chosen items until their estimated tokens cover `excess`. Each round renders
/// and counts the whole pack again, so once the estimates have proved wrong for
/// [`ESTIMATED_ROUNDS`] rounds a round drops at least half of the items left: at most a
/// logarithmic number of renderings, whatever the counter (one item per rendering was
/// quadratic in the items when the whole counts more than its lines).
fn drop_for(cands: &[Candidate], chosen: &mut Vec<usize>, excess: u32, round: u32) {
    let at_least = if round > ESTIMATED_ROUNDS {
        chosen.len().div_ceil(2)
    } else {
        1
    };
    let (mut freed, mut dropped) = (0u64, 0usize);
    while let Some(&i) = chosen.last() {
        if dropped >= at_least && freed >= u64::from(excess) {
            break;
        }
        freed += u64::from(cands[i].item.tokens) + 1;
        dropped += 1;
        chosen.pop();
    }
}

/// Shows chosen excerpts whole, in the order they were chosen, while the rendered pack stays
/// within `budget` by the per-line estimate (the exact check after it has the last word).
fn expand(cands: &mut [Candidate], chosen: &[usize], budget: u32, counter: &dyn TokenCounter) {
    let (_, mut used) = render_and_count(cands, chosen, counter);
    for &i in chosen {
        let Some(full) = cands[i].full.take() else {
            continue;
        };
        let shown = std::mem::replace(&mut cands[i].item.text, full);
        let tokens = counter.count(&cands[i].line());
        let extra = tokens.saturating_sub(cands[i].item.tokens);
        if used.saturating_add(extra) <= budget {
            used += extra;
            cands[i].item.tokens = tokens;
        } else {
            cands[i].item.text = shown;
        }
    }
}

/// Merges each memory into the exchange that shows all its source messages: the memory is
/// dropped, and the exchange keeps the higher value (with the memory's reason and score when
/// the memory's is higher: the exchange is then what retrieval matched).
fn dedupe(candidates: Vec<Candidate>) -> Vec<Candidate> {
    let mut by_message: HashMap<MessageId, usize> = HashMap::new();
    for (i, c) in candidates.iter().enumerate() {
        if c.is_exchange() {
            for m in &c.item.message_ids {
                by_message.entry(*m).or_insert(i);
            }
        }
    }
    let mut dropped = vec![false; candidates.len()];
    let mut lift: Vec<(usize, usize)> = Vec::new();
    for (i, c) in candidates.iter().enumerate() {
        if !c.verbatim || c.is_exchange() || c.item.message_ids.is_empty() {
            continue;
        }
        let holders: HashSet<usize> = c
            .item
            .message_ids
            .iter()
            .filter_map(|m| by_message.get(m).copied())
            .collect();
        let all_shown = c
            .item
            .message_ids
            .iter()
            .all(|m| by_message.contains_key(m));
        if all_shown && holders.len() == 1 {
            dropped[i] = true;
            lift.extend(holders.into_iter().map(|h| (h, i)));
        }
    }
    let mut out = candidates.clone();
    for (holder, memory) in lift {
        let m = &candidates[memory];
        if m.value > out[holder].value {
            out[holder].value = m.value;
            out[holder].item.reason = m.item.reason;
            out[holder].item.score = m.item.score;
            out[holder].item.from = None;
        }
    }
    out.into_iter()
        .zip(dropped)
        .filter(|(_, d)| !d)
        .map(|(c, _)| c)
        .collect()
}

/// The chosen items by section (in [`Section`] order), each section's items in display order:
/// blocks by their order, items within a block or section by theirs.
fn layout(cands: &[Candidate], chosen: &[usize]) -> Vec<(Section, Vec<usize>)> {
    let mut sections: Vec<(Section, Vec<usize>)> = Vec::new();
    for &i in chosen {
        let s = cands[i].section;
        match sections.iter_mut().find(|(x, _)| *x == s) {
            Some((_, items)) => items.push(i),
            None => sections.push((s, vec![i])),
        }
    }
    sections.sort_by_key(|(s, _)| *s);
    for (_, items) in &mut sections {
        items.sort_by(|&a, &b| {
            let (x, y) = (&cands[a], &cands[b]);
            let bx = x.block.as_ref().map(|b| (b.order, b.key.clone()));
            let by = y.block.as_ref().map(|b| (b.order, b.key.clone()));
            // Lines of their own (summaries, memories) come before session blocks.
            bx.cmp(&by).then(x.order.cmp(&y.order)).then(a.cmp(&b))
        });
    }
    sections
}

/// Items in display order, consecutive lines of one page (same kind and id, same block) joined
/// into one item: its lines, tokens and messages together, the strongest reason (a match, with
/// the best score) and the earliest time.
fn merge_runs<'c>(cands: impl Iterator<Item = &'c Candidate>) -> Vec<PackItem> {
    let mut out: Vec<(PackItem, Option<String>)> = Vec::new();
    for c in cands {
        let block = c.block.as_ref().map(|b| b.key.clone());
        match out.last_mut() {
            Some((last, b))
                if c.is_exchange()
                    && last.kind == c.item.kind
                    && last.id == c.item.id
                    && *b == block =>
            {
                last.text.push('\n');
                last.text.push_str(&c.item.text);
                last.tokens = last.tokens.saturating_add(c.item.tokens);
                last.message_ids.extend(c.item.message_ids.iter().copied());
                if c.item.reason == Reason::Matched
                    && (last.reason != Reason::Matched || c.item.score > last.score)
                {
                    last.reason = Reason::Matched;
                    last.score = c.item.score;
                    last.from = None;
                }
            }
            _ => out.push((c.item.clone(), block)),
        }
    }
    out.into_iter().map(|(i, _)| i).collect()
}

fn render(cands: &[Candidate], chosen: &[usize]) -> String {
    let mut out = String::new();
    for (section, items) in layout(cands, chosen) {
        if !out.is_empty() {
            out.push('\n');
        }
        out.push_str(section_header(section));
        out.push('\n');
        let mut block: Option<&str> = None;
        for i in items {
            let c = &cands[i];
            if let Some(b) = &c.block {
                if block != Some(b.key.as_str()) {
                    out.push_str(&b.header);
                    out.push('\n');
                    block = Some(b.key.as_str());
                }
            }
            out.push_str(&c.line());
            out.push('\n');
        }
    }
    out
}

fn render_and_count(
    cands: &[Candidate],
    chosen: &[usize],
    counter: &dyn TokenCounter,
) -> (String, u32) {
    let text = render(cands, chosen);
    let n = counter.count(&text);
    (text, n)
}
