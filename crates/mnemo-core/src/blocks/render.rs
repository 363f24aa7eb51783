//! Blocks at the head of a pack. The scope's pinned blocks are rendered first, in label order,
//! each with its label, its `used/limit` characters and its description, and their tokens are
//! taken from the budget before anything else is chosen. A budget that cannot hold them is an
//! error that says how many tokens they need: a pack never drops a block silently.

use super::MemoryBlock;
use crate::error::{Error, Result};
use crate::pack::{
    assemble, assemble_after, Candidate, ContextPack, PackItem, PackParams, PackSection, Prefix,
    Reason, Section, TokenCounter,
};

/// The header of the blocks' section.
pub const BLOCKS_HEADER: &str = "## Core memory (pinned; kept current by the agent)";

/// One block as the pack shows it: a title line, the description line, then the value.
pub fn blocks_text(block: &MemoryBlock) -> String {
    let mut out = format!(
        "### {} [{}/{} chars{}]\n",
        block.label,
        block.used(),
        block.limit,
        if block.read_only { ", read-only" } else { "" }
    );
    if !block.description.trim().is_empty() {
        out.push_str("Purpose: ");
        out.push_str(block.description.trim());
        out.push('\n');
    }
    if block.value.is_empty() {
        out.push_str("(empty)");
    } else {
        out.push_str(&block.value);
    }
    out
}

/// The pack's order of blocks: by label, then id (labels repeat only across owners).
fn in_order(blocks: &[MemoryBlock]) -> Vec<&MemoryBlock> {
    let mut sorted: Vec<&MemoryBlock> = blocks.iter().collect();
    sorted.sort_by(|a, b| a.label.cmp(&b.label).then(a.id.cmp(&b.id)));
    sorted
}

/// The blocks' section of a pack (empty for no blocks), in label order then id.
pub fn render_blocks(blocks: &[MemoryBlock]) -> String {
    if blocks.is_empty() {
        return String::new();
    }
    let mut out = String::from(BLOCKS_HEADER);
    out.push('\n');
    for b in in_order(blocks) {
        out.push_str(&blocks_text(b));
        out.push('\n');
    }
    out
}

/// A pack that starts with `blocks` and fills the rest of `budget` with `candidates` as
/// [`assemble`] chooses them. `invalid_input` naming `budget_tokens` (with the tokens the blocks
/// need) when the blocks alone do not fit.
pub fn pack_with_blocks(
    blocks: &[MemoryBlock],
    candidates: Vec<Candidate>,
    budget: u32,
    counter: &dyn TokenCounter,
    params: &PackParams,
) -> Result<ContextPack> {
    if blocks.is_empty() {
        return Ok(assemble(candidates, budget, counter, params));
    }
    let head = render_blocks(blocks);
    let need = counter.count(&head);
    if need > budget {
        return Err(Error::invalid(
            "budget_tokens",
            format!(
                "the core memory blocks need {need} tokens and the budget is {budget}; raise \
                 the budget to at least {need}, shorten the blocks, or leave them out (no_blocks)"
            ),
        ));
    }
    let items: Vec<PackItem> = in_order(blocks)
        .into_iter()
        .map(|b| PackItem {
            kind: "block".into(),
            id: b.id.to_string(),
            text: b.value.clone(),
            tokens: counter.count(&blocks_text(b)),
            reason: Reason::Pinned,
            score: None,
            from: None,
            message_ids: Vec::new(),
            at: Some(b.updated_at),
            event_time: None,
        })
        .collect();
    // The rest is chosen under what the blocks leave, and the whole (blocks, seam, rest) is
    // counted in the same exact check that fits the rest: token merges across the seam can make
    // the whole count more than its parts, and one count of the whole is all this costs beyond a
    // pack without blocks.
    let rest = assemble_after(
        Some(Prefix {
            text: &head,
            tokens: need,
        }),
        candidates,
        budget,
        counter,
        params,
    );
    let mut sections = vec![PackSection {
        section: Section::Blocks,
        items,
    }];
    sections.extend(rest.sections);
    Ok(ContextPack {
        budget_tokens: budget,
        used_tokens: rest.used_tokens,
        tokenizer: counter.name().to_string(),
        sections,
        omitted: rest.omitted,
        rendered: rest.rendered,
    })
}
