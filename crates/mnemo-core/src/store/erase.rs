//! Erasure: the [`Erasure`] capability and its reports.

use super::*;

/// What an erase removed (see [`Store::erase`]). Counts, never content.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct EraseReport {
    pub id: MemoryId,
    /// History events of the memory whose texts, metadata and reasons were removed, plus events
    /// of other memories of the scope that quoted one of its texts.
    pub history_scrubbed: u64,
    /// Source messages whose content was removed: a raw memory's message always (the raw
    /// memory *is* the message), a derived memory's sources only when asked.
    pub messages_erased: u64,
    /// Source messages left as they were (the evidence of an erased fact erased without
    /// `sources`); 0 for a raw memory.
    #[serde(default)]
    pub messages_kept: u64,
    /// Other memories of the scope whose index text quoted it and was re-indexed without it.
    pub neighbours_reindexed: u64,
    /// Entities that named only this memory, removed.
    pub entities_removed: u64,
    /// Stored idempotency results that quoted it, scrubbed.
    pub replays_scrubbed: u64,
    /// Pages and segment summaries of the owner that quoted it, scrubbed.
    #[serde(default)]
    pub pages_scrubbed: u64,
}

/// The part of the conversation log an erase covers (see [`Store::erase_log`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EraseTarget<'a> {
    /// One session of the scope.
    Session(&'a str),
    /// Everything the scope covers ("forget this user").
    Scope,
}

/// What an erase of a session or a scope removed (see [`Store::erase_log`]). Counts, never
/// content.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct EraseLogReport {
    /// Memories erased, each as [`Store::erase`] erases one and with its `ERASE` event: for a
    /// session, every memory with a source message in it (raw turns and what was derived from
    /// them — facts, notes, summaries a model wrote); for a scope, every memory of the scope.
    /// Memories erased before are left as they are.
    pub memories_erased: u64,
    /// Messages whose content and speaker name were removed (ids, order and times kept).
    pub messages_erased: u64,
    /// Pages whose text and keywords were removed.
    pub pages_scrubbed: u64,
    /// Segment summaries (model or rule paraphrases of the pages) removed, with their keywords:
    /// a segment holding a page of the session, or every segment of the scope.
    pub segments_scrubbed: u64,
}

/// Erasure: removing content from every copy the store keeps.
pub trait Erasure: Send + Sync {
    /// Erases a memory of the scope in any state, in one transaction: its text, metadata, vector,
    /// lexical entry and entity links; the texts, metadata and reasons of its history events
    /// (and of other events of the scope that quote one of its texts); the lines quoting it in
    /// other memories' index texts (re-indexed without them); the copies in stored idempotency
    /// results; and the content of the messages it came from — always for a raw memory (its
    /// message is the memory), with `sources` for any other kind. What remains is
    /// its id, scope, kind, times and state (`deleted`), and an `ERASE` history event carrying
    /// `ctx` (actor, reason, request id). When it returns no read of the store can see the
    /// erased text, and an embedded store's own files no longer hold it (a database server may
    /// keep dead row versions until its vacuum reuses them; see ARCHITECTURE.md). A memory
    /// already erased is `invalid_input` naming `id`, and nothing is written. Required: only
    /// the backend knows where its copies live.
    fn erase(
        &self,
        scope: &Scope,
        id: MemoryId,
        sources: bool,
        ctx: &WriteContext,
    ) -> Result<EraseReport>;
    /// Erases a session of the scope or the whole scope in one transaction: every memory it
    /// covers as [`Store::erase`] does (with `sources`), then the content of every message of
    /// it, the text of its pages and the summaries of the segments those pages joined. Ids,
    /// counts, times and `ERASE` events remain. A session the scope has no message in is
    /// `invalid_input` naming `session_id`, and nothing is written. Required: only the backend
    /// knows where its copies live.
    fn erase_log(
        &self,
        scope: &Scope,
        target: EraseTarget<'_>,
        ctx: &WriteContext,
    ) -> Result<EraseLogReport>;
}
