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
        // And the store's gate, for erases run by other processes on the same store (servers
        // on one database): held from before the re-check to the commit, like the above.
        let sessioned: Vec<String> = to_write
            .iter()
            .filter(|b| b.messages.iter().any(|m| m.session_id.is_some()))
            .map(|b| b.scope.key())
            .collect();
        let _store_gate = crate::scope_lock::take_store_gate(store, &sessioned, false)?;
        // Waiting for the turn may be long: a request abandoned meanwhile writes nothing.
        crate::cancel::check_cancelled("the add")?;
        for b in &mut to_write {
            recheck_window(store, b)?;
        }
        #[cfg(feature = "testing")]
        crate::testing::after_window_recheck(&sessioned);
        // And across processes, where the store keeps turns (servers on one database).
        let _store_turn = if planned.is_empty() {
            None
        } else {
            store.plan_turn(&planned)?
        };
        let mut attempt = 1;
        loop {
            let (written, (calls, tiers)) =
                plan_and_write(store, planner, to_write.clone(), &drafts);
            tier_usage.resize_with(calls.len(), Vec::new);
            tier_usage
                .iter_mut()
                .zip(calls)
                .for_each(|(all, c)| all.extend(c));
            match written {
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

/// The model calls of a plan, one list per batch, and whether it changed the hierarchy (none
/// and `false` when no plan was made).
type PlanCalls = (Vec<Vec<ModelCall>>, bool);

/// One try of the write: the tier plan and the transaction. A rule plan (no chat model) is made
/// on a thread of its own while the store writes the batches' records, and the store writes it
/// last in the same transaction (`Store::write_planned`): the two halves run on two cores. A
/// plan that asks a chat model is made first, so no transaction waits for a model, and so is
/// the empty plan of a write without pages (no thread for nothing). A planning error is the
/// write's error (nothing is written).
fn plan_and_write(
    store: &dyn Store,
    planner: &tiers::TierPlanner,
    mut batches: Vec<WriteBatch>,
    drafts: &[Vec<tiers::PageDraft>],
) -> (Result<Vec<AddOutcome>>, PlanCalls) {
    if planner.chat.is_some() || drafts.iter().all(Vec::is_empty) {
        return match planner.plan_all(store, &mut batches, drafts) {
            Ok(calls) => {
                let changed = batches.iter().any(|b| !b.tiers.is_empty());
                (store.write(batches), (calls, changed))
            }
            Err(e) => (Err(e), (Vec::new(), false)),
        };
    }
    let scopes: Vec<Scope> = batches.iter().map(|b| b.scope.clone()).collect();
    std::thread::scope(|s| {
        let planning = s.spawn(|| {
            let scopes: Vec<&Scope> = scopes.iter().collect();
            // A panic stays on this thread as an error (the scope would raise it again).
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                planner.plan_tiers(store, &scopes, drafts)
            }))
            .unwrap_or_else(|_| Err(Error::internal("the tier planner panicked")))
        });
        let mut calls: PlanCalls = (Vec::new(), false);
        let written = store.write_planned(
            batches,
            Box::new(|| {
                let (tiers, made) = planning
                    .join()
                    .unwrap_or_else(|_| Err(Error::internal("the tier planner panicked")))?;
                calls = (made, tiers.iter().any(|t| !t.is_empty()));
                Ok(tiers)
            }),
        );
        (written, calls)
    })
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
