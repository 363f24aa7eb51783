//! Core memory blocks through the facade: create, read, list, edit, delete, history, and the
//! explicit seeding of a `human` block from what mnemo knows of a user. The rules are core's
//! (`mnemo_core::blocks`), the transactions the store's; packs show the pinned blocks first
//! (see `context`).

use crate::Memory;
use mnemo_core::blocks::BlockActor;
use mnemo_core::*;

/// Facts a seeded block takes at most (the most recent), when its limit allows.
const SEED_FACTS: usize = 50;

/// Where a seeded `human` block came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SeedSource {
    /// The profile a chat model distilled for the user.
    Profile,
    /// The user's most recent facts (no profile was built).
    Facts,
}

impl Memory {
    /// The same engine with other bounds on blocks (largest per-block limit, most blocks per
    /// owner).
    pub fn with_block_limits(self, limits: BlockLimits) -> Self {
        Self {
            inner: std::sync::Arc::new(crate::Inner {
                block_limits: limits,
                ..(*self.inner).clone()
            }),
        }
    }

    /// The bounds on blocks in force.
    pub fn block_limits(&self) -> BlockLimits {
        self.inner.block_limits
    }

    /// Creates a block (see [`Blocks::create_block`]).
    pub async fn create_block(&self, new: NewBlock) -> Result<MemoryBlock> {
        let limits = self.inner.block_limits;
        self.with_store(move |s| s.create_block(&new, &limits))
            .await
    }

    /// The block labelled `label` that `scope` sees; `not_found` when there is none.
    pub async fn block(&self, scope: Scope, label: BlockLabel) -> Result<MemoryBlock> {
        self.with_store(move |s| s.block(&scope, &label)?.ok_or_else(|| no_block(&label)))
            .await
    }

    /// A page of the blocks `query.scope` sees, by label.
    pub async fn blocks(&self, query: BlockQuery) -> Result<BlockPage> {
        self.with_store(move |s| s.list_blocks(&query)).await
    }

    /// Appends, replaces, rewrites, attaches or detaches (see [`Blocks::edit_block`]).
    pub async fn edit_block(&self, edit: BlockEdit) -> Result<MemoryBlock> {
        self.with_store(move |s| s.edit_block(&edit)).await
    }

    /// Deletes a block; returns it as it was.
    pub async fn delete_block(
        &self,
        scope: Scope,
        label: BlockLabel,
        actor: BlockActor,
        reason: Option<String>,
    ) -> Result<MemoryBlock> {
        self.with_store(move |s| s.delete_block(&scope, &label, &actor, reason.as_deref()))
            .await
    }

    /// A block's history, oldest first (the newest `limit` events).
    pub async fn block_history(
        &self,
        scope: Scope,
        label: BlockLabel,
        limit: usize,
    ) -> Result<Vec<BlockEvent>> {
        self.with_store(move |s| s.block_history(&scope, &label, limit))
            .await
    }

    /// The blocks a pack of `scope` starts with.
    pub async fn pinned_blocks(&self, scope: Scope) -> Result<Vec<MemoryBlock>> {
        self.with_store(move |s| s.pinned_blocks(&scope)).await
    }

    /// Writes the `human` block of `scope`'s user from what mnemo knows: the profile a chat
    /// model built, else the user's most recent facts (no model is called). Creates the block
    /// or rewrites it (one versioned edit by `actor`). The text is whole lines up to the
    /// block's limit; a first line longer than the limit is refused, never cut. Only ever run
    /// when asked: nothing seeds a block on its own.
    pub async fn seed_human_block(
        &self,
        scope: Scope,
        actor: BlockActor,
    ) -> Result<(MemoryBlock, SeedSource)> {
        let user = scope
            .user_id()
            .cloned()
            .ok_or_else(|| Error::invalid("user_id", "seeding a human block needs a user"))?;
        let owner = Scope::of_user(user);
        let limits = self.inner.block_limits;
        self.with_store(move |s| seed(s, &owner, &actor, &limits))
            .await
    }
}

fn seed(
    s: &dyn Store,
    owner: &Scope,
    actor: &BlockActor,
    limits: &BlockLimits,
) -> Result<(MemoryBlock, SeedSource)> {
    let label = BlockLabel::new("human")?;
    let read = |kinds: Vec<MemoryKind>, limit: usize| {
        s.list(&ListQuery::new(owner.clone(), limit).with_kinds(kinds))
    };
    let (lines, source) = match read(vec![MemoryKind::Profile], 1)?.results.pop() {
        Some(p) => (
            p.text
                .lines()
                .map(|l| l.trim().to_string())
                .collect::<Vec<_>>(),
            SeedSource::Profile,
        ),
        None => {
            // Facts a pipeline inferred; without a model, what the user said themselves.
            let mut facts = all_of(s, owner, vec![MemoryKind::Fact, MemoryKind::Knowledge])?;
            if facts.is_empty() {
                facts = all_of(s, owner, vec![MemoryKind::Raw])?;
                facts.retain(|m| m.role.is_none_or(|r| r == Role::User));
            }
            // Lists are oldest first; the most recent facts are what the user is now.
            let recent = facts.split_off(facts.len().saturating_sub(SEED_FACTS));
            let lines = recent
                .iter()
                .map(|m| format!("- {}", m.text.trim()))
                .collect();
            (lines, SeedSource::Facts)
        }
    };
    let existing = s.block(owner, &label)?.filter(|b| b.owner == *owner);
    let limit = existing
        .as_ref()
        .map_or(blocks::DEFAULT_BLOCK_LIMIT, |b| b.limit) as usize;
    let text = whole_lines(&lines, limit)?;
    if text.is_empty() {
        return Err(Error::invalid(
            "user_id",
            "the user has no profile and no facts to seed a human block from",
        ));
    }
    let reason = Some(format!(
        "seeded from the {}",
        match source {
            SeedSource::Profile => "profile",
            SeedSource::Facts => "user's facts",
        }
    ));
    let block = match existing {
        Some(b) => s.edit_block(&BlockEdit {
            scope: owner.clone(),
            label,
            change: BlockChange::Rewrite { value: text },
            expected_version: Some(b.version),
            actor: actor.clone(),
            reason,
        })?,
        None => s.create_block(
            &NewBlock {
                description: "What the agent knows about the user; keep it current.".into(),
                actor: actor.name(),
                reason,
                ..NewBlock::new(owner.clone(), label, text)
            },
            limits,
        )?,
    };
    Ok((block, source))
}

/// Every active memory of `kinds` of the owner, oldest first.
fn all_of(s: &dyn Store, owner: &Scope, kinds: Vec<MemoryKind>) -> Result<Vec<mnemo_core::Memory>> {
    let mut out = Vec::new();
    let mut cursor = None;
    loop {
        let page = s.list(
            &ListQuery::new(owner.clone(), 500)
                .with_kinds(kinds.clone())
                .with_cursor(cursor),
        )?;
        out.extend(page.results);
        match page.next_cursor {
            Some(c) => cursor = Some(c),
            None => return Ok(out),
        }
    }
}

/// The non-empty lines that fit in `limit` characters together (joined by newlines).
fn whole_lines(lines: &[String], limit: usize) -> Result<String> {
    let mut out = String::new();
    let mut used = 0usize;
    for l in lines.iter().filter(|l| !l.is_empty()) {
        let add = l.chars().count() + usize::from(!out.is_empty());
        if used + add > limit {
            if out.is_empty() {
                return Err(Error::invalid(
                    "value",
                    format!("the first line to seed is {} characters, over the block's limit of {limit}", add),
                ));
            }
            break;
        }
        if !out.is_empty() {
            out.push('\n');
        }
        out.push_str(l);
        used += add;
    }
    Ok(out)
}
