//! Erasure: the [`Erasure`] capability and its reports.

use super::*;

/// What an erase removed (see [`Erasure::erase`]). Counts, never content.
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

/// The part of the conversation log an erase covers (see [`Erasure::erase_log`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EraseTarget<'a> {
    /// One session of the scope.
    Session(&'a str),
    /// Everything the scope covers ("forget this user").
    Scope,
}

/// What an erase of a session or a scope removed (see [`Erasure::erase_log`]). Counts, never
/// content.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct EraseLogReport {
    /// Memories erased, each as [`Erasure::erase`] erases one and with its `ERASE` event: for a
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
    fn erase(&self, memory: &EraseMemory<'_>, ctx: &WritePlan) -> Result<EraseReport>;
    /// Erases a session of the scope or the whole scope in one transaction: every memory it
    /// covers as [`Erasure::erase`] does (with `sources`), then the content of every message of
    /// it, the text of its pages and the summaries of the segments those pages joined. Ids,
    /// counts, times and `ERASE` events remain. A session the scope has no message in is
    /// `invalid_input` naming `session_id`, and nothing is written. Required: only the backend
    /// knows where its copies live.
    fn erase_log(&self, log: &EraseLog<'_>, ctx: &WritePlan) -> Result<EraseLogReport>;
    /// The erase gate of the scope parts `parts` (`u=…`, `a=…`, `r=…`, as [`Scope::key`]
    /// names them) across every process writing this store, held until the returned value
    /// drops: shared for an add that quotes its session's earlier turns (from before its
    /// window re-check to its commit), exclusive for an erase (its whole run). An erase then
    /// never commits between an add's re-check and that add's commit, whichever server runs
    /// each. Waits while the other kind holds a part. `None`: the store's writers all share
    /// the caller's process, whose own gates (the facade's) are then all there is.
    fn erase_gate(
        &self,
        parts: &[String],
        exclusive: bool,
    ) -> Result<Option<crate::store::PlanTurn>> {
        let _ = (parts, exclusive);
        Ok(None)
    }
}

/// What one [`Erasure::erase`] erases: memory `id` of (or under) `scope`, and the content of its
/// source messages too when `sources` (a raw memory's always).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EraseMemory<'a> {
    pub scope: &'a Scope,
    pub id: MemoryId,
    pub sources: bool,
}

impl<'a> EraseMemory<'a> {
    /// The erase of memory `id` of `scope`, its source messages' content too when `sources`.
    pub fn new(scope: &'a Scope, id: MemoryId, sources: bool) -> Self {
        Self { scope, id, sources }
    }
}

/// What one [`Erasure::erase_log`] erases: `target` of `scope`, checked when made (a session is
/// named by a non-blank id), so a backend reads nothing for an erase that cannot apply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EraseLog<'a> {
    scope: &'a Scope,
    target: EraseTarget<'a>,
}

impl<'a> EraseLog<'a> {
    /// The erase of `target` of `scope`; invalid input naming `session_id` for a blank session.
    pub fn new(scope: &'a Scope, target: EraseTarget<'a>) -> Result<Self> {
        if let EraseTarget::Session(s) = target {
            if s.trim().is_empty() {
                return Err(crate::Error::invalid("session_id", "must not be empty"));
            }
        }
        Ok(Self { scope, target })
    }

    pub fn scope(&self) -> &'a Scope {
        self.scope
    }

    pub fn target(&self) -> EraseTarget<'a> {
        self.target
    }

    /// The erase of one memory it covers (with its sources: the log they are in goes too).
    pub fn memory(&self, id: MemoryId) -> EraseMemory<'a> {
        EraseMemory::new(self.scope, id, true)
    }
}

impl EraseLogReport {
    /// The report of an erase of the log that covers `memories` memories (not erased before)
    /// and `messages` messages that still hold content or a speaker name, counted before any
    /// row changes; the hierarchy's counts grow as the backend scrubs.
    pub fn new(memories: usize, messages: u64) -> Self {
        Self {
            memories_erased: memories as u64,
            messages_erased: messages,
            pages_scrubbed: 0,
            segments_scrubbed: 0,
        }
    }
}

/// The refusal of a session erase when the scope has no message in `session`.
pub fn no_session(session: &str) -> crate::Error {
    crate::Error::invalid(
        "session_id",
        format!("the scope has no session {session:?}"),
    )
}

/// The refusal of an erase of a memory erased before (nothing is written).
pub fn already_erased(id: MemoryId) -> crate::Error {
    crate::Error::invalid("id", format!("memory {id} is already erased"))
}

/// What the erase of one memory scrubs, decided from the memory and its history before any
/// row changes; the backend finds the copies, this says what they are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScrubPlan {
    /// Every text the memory ever had — its row's and its history's old and new texts —
    /// without blanks, sorted and unique.
    pub texts: Vec<String>,
    /// Whether the contents of its source messages go too: when asked, and always for a raw
    /// memory (the raw memory *is* its message).
    pub sources: bool,
}

impl ScrubPlan {
    /// The plan for erasing `memory`, whose history events hold `history` (old and new texts).
    pub fn new(
        memory: &Memory,
        history: impl IntoIterator<Item = Option<String>>,
        sources: bool,
    ) -> Self {
        let mut texts: Vec<String> = std::iter::once(memory.text.clone())
            .chain(history.into_iter().flatten())
            .filter(|t| !t.trim().is_empty())
            .collect();
        texts.sort();
        texts.dedup();
        Self {
            texts,
            sources: sources || memory.kind == MemoryKind::Raw,
        }
    }

    /// A neighbour's index text without the lines that quote the memory: `None` when it quotes
    /// none (left as it is), `Some(None)` when no line is left (the neighbour's own text is
    /// indexed again).
    pub fn reindexed(&self, index: &str) -> Option<Option<String>> {
        without_quotes(index, &self.texts).map(|i| (!i.trim().is_empty()).then_some(i))
    }

    /// The texts the hierarchy's pages and segment summaries are scrubbed of: the memory's, and
    /// the contents of the source messages the erase removes (`messages`, read when
    /// [`ScrubPlan::sources`]).
    pub fn tier_texts(&self, messages: impl IntoIterator<Item = String>) -> Vec<String> {
        self.texts.iter().cloned().chain(messages).collect()
    }

    /// The report of erasing memory `id` with `source_count` source messages, before anything
    /// is scrubbed: its `messages_kept` are the sources the erase leaves as they were (none
    /// when they go too); the counts grow as the backend scrubs.
    pub fn report(&self, id: MemoryId, source_count: u64) -> EraseReport {
        EraseReport {
            id,
            history_scrubbed: 0,
            messages_erased: 0,
            messages_kept: if self.sources { 0 } else { source_count },
            neighbours_reindexed: 0,
            entities_removed: 0,
            replays_scrubbed: 0,
            pages_scrubbed: 0,
        }
    }
}

/// Removes every line of `index` that quotes one of `texts`; `None` when nothing changes.
pub fn without_quotes(index: &str, texts: &[String]) -> Option<String> {
    let kept: Vec<&str> = index
        .split('\n')
        .filter(|line| !texts.iter().any(|t| line.contains(t.as_str())))
        .collect();
    let out = kept.join("\n");
    (out.len() != index.len()).then_some(out)
}

impl AddOutcome {
    /// A stored add result after erasing memory `id`: its ids and events stay (a retry with the
    /// same key still gets the original answer), the erased text and the reasons quoting it go.
    pub fn without_text_of(&mut self, id: MemoryId) {
        for r in &mut self.results {
            if r.id == id {
                r.memory = String::new();
                r.reason = None;
            }
            if r.previous_id == Some(id) {
                r.previous_memory = None;
            }
        }
    }
}

/// A stored add result (the JSON an idempotency row keeps) after erasing memory `id` (see
/// [`AddOutcome::without_text_of`]), as JSON again.
pub fn scrubbed_replay(stored: &str, id: MemoryId) -> Result<String> {
    let mut outcome: AddOutcome = serde_json::from_str(stored)
        .map_err(|e| crate::Error::internal(format!("stored idempotency result: {e}")))?;
    outcome.without_text_of(id);
    serde_json::to_string(&outcome)
        .map_err(|e| crate::Error::internal(format!("idempotency result: {e}")))
}

/// How an erase scrubs the hierarchy's copies of erased texts: each occurrence in a page's
/// text or a segment's summary becomes `[erased]`, and a keyword taken from an erased text
/// (contained in one, ignoring case) is dropped.
#[derive(Debug)]
pub struct TierScrub<'a> {
    texts: Vec<&'a str>,
    lowered: Vec<String>,
}

impl<'a> TierScrub<'a> {
    /// The scrub of `texts`; `None` when none is more than blank (nothing to scrub).
    pub fn new(texts: &'a [String]) -> Option<Self> {
        let texts: Vec<&str> = texts
            .iter()
            .map(String::as_str)
            .filter(|t| !t.trim().is_empty())
            .collect();
        let lowered = texts.iter().map(|t| t.to_lowercase()).collect();
        (!texts.is_empty()).then_some(Self { texts, lowered })
    }

    /// `body` with every erased text replaced; `None` when it quotes none (the row stays as it
    /// is, keywords included).
    pub fn body(&self, body: &str) -> Option<String> {
        if !self.texts.iter().any(|t| body.contains(t)) {
            return None;
        }
        let mut body = body.to_string();
        for t in &self.texts {
            body = body.replace(t, "[erased]");
        }
        Some(body)
    }

    /// The keywords not taken from an erased text.
    pub fn keywords(&self, keywords: Vec<String>) -> Vec<String> {
        keywords
            .into_iter()
            .filter(|k| {
                let k = k.to_lowercase();
                !self.lowered.iter().any(|t| t.contains(&k))
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::fixtures::memory;

    #[test]
    fn quoting_lines_are_dropped_and_others_kept() {
        let texts = vec!["I live in Oslo".to_string()];
        assert_eq!(
            without_quotes("Ann: hi\nAnn: hi\nBo: I live in Oslo\nAnn: nice", &texts).as_deref(),
            Some("Ann: hi\nAnn: hi\nAnn: nice")
        );
        assert_eq!(without_quotes("Ann: hi", &texts), None);
    }

    #[test]
    fn a_plan_holds_every_text_once_and_a_raw_memory_takes_its_message() {
        let m = memory(MemoryKind::Fact, "Ann lives in Oslo");
        let plan = ScrubPlan::new(
            &m,
            [
                Some("Ann lives in Bergen".into()),
                Some("Ann lives in Oslo".into()),
                Some("  ".into()),
                None,
            ],
            false,
        );
        assert_eq!(plan.texts, ["Ann lives in Bergen", "Ann lives in Oslo"]);
        assert!(!plan.sources);
        assert_eq!(plan.report(MemoryId::new(), 2).messages_kept, 2);
        let raw = ScrubPlan::new(&memory(MemoryKind::Raw, "hi"), [], false);
        assert!(raw.sources);
        assert_eq!(raw.report(MemoryId::new(), 1).messages_kept, 0);
        assert_eq!(
            plan.reindexed("x\nAnn lives in Oslo"),
            Some(Some("x".into()))
        );
        assert_eq!(plan.reindexed("Ann lives in Oslo"), Some(None));
        assert_eq!(plan.reindexed("unrelated"), None);
        assert_eq!(plan.tier_texts(["said".to_string()]).len(), 3);
    }

    #[test]
    fn a_replayed_outcome_keeps_ids_and_events_but_not_the_text() {
        let (gone, kept) = (MemoryId::new(), MemoryId::new());
        let mut o = AddOutcome {
            results: vec![
                AddResult {
                    id: gone,
                    memory: "secret".into(),
                    event: HistoryKind::Add,
                    previous_memory: None,
                    previous_id: None,
                    reason: Some("said secret".into()),
                },
                AddResult {
                    id: kept,
                    memory: "newer".into(),
                    event: HistoryKind::Update,
                    previous_memory: Some("secret".into()),
                    previous_id: Some(gone),
                    reason: Some("moved".into()),
                },
            ],
            replayed: false,
            warnings: Vec::new(),
            usage: Vec::new(),
            relations: Vec::new(),
        };
        let stored = serde_json::to_string(&o).unwrap();
        let scrubbed: AddOutcome =
            serde_json::from_str(&scrubbed_replay(&stored, gone).unwrap()).unwrap();
        o.without_text_of(gone);
        assert_eq!(scrubbed, o);
        assert!(scrubbed_replay("not json", gone).is_err());
        assert_eq!(
            (o.results[0].memory.as_str(), &o.results[0].reason),
            ("", &None)
        );
        assert_eq!(o.results[0].id, gone);
        assert_eq!(o.results[1].previous_memory, None);
        assert_eq!(o.results[1].memory, "newer");
        assert_eq!(o.results[1].reason.as_deref(), Some("moved"));
    }

    #[test]
    fn a_tier_scrub_replaces_quotes_and_drops_their_keywords() {
        assert!(TierScrub::new(&[" ".to_string()]).is_none());
        let texts = vec!["Ann lives in Oslo".to_string()];
        let s = TierScrub::new(&texts).unwrap();
        assert_eq!(
            s.body("Bo: hi. Ann lives in Oslo.").as_deref(),
            Some("Bo: hi. [erased].")
        );
        assert_eq!(s.body("Bo: hi."), None);
        assert_eq!(
            s.keywords(vec!["OSLO".into(), "ferry".into()]),
            vec!["ferry".to_string()]
        );
    }

    #[test]
    fn a_session_erase_names_its_session() {
        let s = Scope::user("ann").unwrap();
        assert!(EraseLog::new(&s, EraseTarget::Session(" ")).is_err());
        let log = EraseLog::new(&s, EraseTarget::Session("s1")).unwrap();
        assert_eq!(log.target(), EraseTarget::Session("s1"));
        assert!(log.memory(MemoryId::new()).sources);
        assert!(EraseLog::new(&s, EraseTarget::Scope).is_ok());
        assert!(no_session("s9").to_string().contains("\"s9\""));
        let id = MemoryId::new();
        assert!(already_erased(id).to_string().contains("is already erased"));
        let report = EraseLogReport::new(3, 5);
        assert_eq!((report.memories_erased, report.messages_erased), (3, 5));
        assert_eq!((report.pages_scrubbed, report.segments_scrubbed), (0, 0));
    }
}
