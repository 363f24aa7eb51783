//! The commit of prepared adds: the scope's erase gates and turns, a cancellation check, the
//! window re-check, the store's cross-process turn, then the tier plan and the one transaction,
//! planned again on a conflict ([`super::tiers`]).

use super::tiers;
use mnemo_core::pipeline::raw;
use mnemo_core::*;

/// One request's write, ready to commit, or the stored outcome of a retry.
pub(super) enum Prepared {
    Replayed(AddOutcome),
    Write {
        batch: Box<WriteBatch>,
        warnings: Vec<String>,
        usage: Vec<ModelCall>,
        /// The add's exchanges, planned into `batch.tiers` at write time.
        pages: Vec<tiers::PageDraft>,
    },
}

/// Commits every prepared write in one transaction and returns one outcome per preparation, in
/// order. The hierarchy changes are planned here, just before the transaction, and planned
/// again when the store finds the snapshot they came from stale (see [`super::tiers`]).
pub(super) fn write_prepared(
    store: &dyn Store,
    prepared: Vec<Prepared>,
    planner: &tiers::TierPlanner,
) -> Result<Vec<AddOutcome>> {
    let mut to_write = Vec::new();
    let mut drafts = Vec::new();
    // Per preparation: its outcome already, or what to attach to the next written one.
    let mut slots = Vec::with_capacity(prepared.len());
    for p in prepared {
        match p {
            Prepared::Replayed(o) => slots.push(Ok(o)),
            Prepared::Write {
                batch,
                warnings,
                usage,
                pages,
            } => {
                to_write.push(*batch);
                drafts.push(pages);
                slots.push(Err((warnings, usage)));
            }
        }
    }
    let mut tier_usage: Vec<Vec<ModelCall>> = Vec::new();
    let mut written = if to_write.is_empty() {
        Vec::new()
    } else {
        // Writers of one scope in this process take turns from snapshot to commit (see
        // `crate::scope_lock`); batches without pages plan nothing and need no turn.
        let planned: Vec<String> = to_write
            .iter()
            .zip(&drafts)
            .filter(|(_, d)| !d.is_empty())
            .map(|(b, _)| b.scope.key())
            .collect();
        // Adds of a session take their turn too: an erase (which holds the erase gates of its scope) then cannot
        // commit between the window re-check below and this add's commit.
        let turns: Vec<String> = to_write
            .iter()
            .filter(|b| b.messages.iter().any(|m| m.session_id.is_some()))
            .map(|b| b.scope.key())
            .chain(planned.iter().cloned())
            .collect();
        // The erase gates first (an erase over this scope waits for this add, or this add for
        // it), then the turns; nothing is held while waiting for a gate.
        let _gates = crate::scope_lock::take_add_gates(&turns);
        let _turns = crate::scope_lock::take_turns(&turns);
        // Waiting for the turn may be long: a request abandoned meanwhile writes nothing.
        crate::cancel::check_cancelled("the add")?;
        for b in &mut to_write {
            recheck_window(store, b)?;
        }
        // And across processes, where the store keeps turns (servers on one database).
        let _store_turn = if planned.is_empty() {
            None
        } else {
            store.plan_turn(&planned)?
        };
        let mut attempt = 1;
        loop {
            let mut batches = to_write.clone();
            let calls = planner.plan_all(store, &mut batches, &drafts)?;
            tier_usage.resize_with(calls.len(), Vec::new);
            tier_usage
                .iter_mut()
                .zip(calls)
                .for_each(|(all, c)| all.extend(c));
            let tiers = batches.iter().any(|b| !b.tiers.is_empty());
            match store.write(batches) {
                Err(e) if attempt < tiers::MAX_ATTEMPTS && tiers::retry_worthy(&e, tiers) => {
                    attempt += 1;
                    tiers::backoff(attempt);
                }
                Err(e) if tiers::retry_worthy(&e, tiers) => return Err(tiers::exhausted(e)),
                other => break other?,
            }
        }
    }
    .into_iter();
    let mut tier_usage = tier_usage.into_iter();
    slots
        .into_iter()
        .map(|slot| match slot {
            Ok(o) => Ok(o),
            Err((warnings, usage)) => {
                let mut o = written
                    .next()
                    .ok_or_else(|| Error::internal("store returned too few outcomes"))?;
                let tiers = tier_usage.next().unwrap_or_default();
                if !o.replayed {
                    o.warnings = warnings;
                    o.usage = usage.into_iter().chain(tiers).collect();
                }
                Ok(o)
            }
        })
        .collect()
}

/// Earlier turns of a session an add's window re-check reads (windows reach a few turns back).
const WINDOW_RECHECK: usize = 256;

/// Under the scope's turn, just before the commit: the add read its session's earlier turns
/// for its raw memories' index texts before it embedded; a delete or erase that committed
/// since must not be quoted by them. Lines that are neither one of the add's own turns nor a
/// turn the log still shows are dropped.
fn recheck_window(store: &dyn Store, b: &mut WriteBatch) -> Result<()> {
    let Some(session) = b.messages.iter().find_map(|m| m.session_id.clone()) else {
        return Ok(());
    };
    if !b
        .memories
        .iter()
        .any(|m| m.kind == MemoryKind::Raw && m.index_text.is_some())
    {
        return Ok(());
    }
    let log = store.messages(&b.scope, Some(&session), WINDOW_RECHECK)?;
    let total = log.len();
    let visible = visible_messages(store, &b.scope, log, &ReadOptions::default())?;
    if visible.len() == total {
        return Ok(());
    }
    let allowed: Vec<String> = visible
        .iter()
        .chain(&b.messages)
        .flat_map(|m| [raw::line(m, true), raw::line(m, false)])
        .collect();
    raw::drop_unlisted_lines(&mut b.memories, &allowed);
    Ok(())
}
