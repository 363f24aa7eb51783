//! Step 1, per conversation: every session added to every engine of the run, and the map from
//! each engine's stored messages back to the dataset's turn ids (what retrieval is scored on).

use super::engines::Engines;
use super::requests::{add_request, note_request};
use super::{EvalMode, EvalOptions, Tally};
use crate::locomo::{Conversation, Turn};
use anyhow::{bail, Result};
use indicatif::ProgressBar;
use mnemo::Memory;
use mnemo_core::{MessageId, Scope};
use std::collections::HashMap;
use std::time::Instant;

/// Stored message → turn id, per engine (empty for an engine the run does not have).
pub(super) struct TurnMaps {
    pub mnemo: HashMap<MessageId, String>,
    pub plain: HashMap<MessageId, String>,
    pub notes: HashMap<MessageId, String>,
    pub compare: HashMap<MessageId, String>,
}

/// Ingests conversation `c` into every engine, recording add latencies and failed adds.
pub(super) async fn conversation(
    engines: &Engines,
    scope: &Scope,
    c: &Conversation,
    opts: &EvalOptions,
    bar: &ProgressBar,
    tally: &mut Tally,
) -> Result<TurnMaps> {
    let (lat, mnemo, failed) = into_engine(&engines.mnemo, scope, c, opts.mode, false, bar).await?;
    tally.add_ms.extend(lat);
    tally.counts.failed_adds += failed;
    let plain = match &engines.plain {
        Some(plain) => {
            into_engine(plain, scope, c, EvalMode::Raw, false, bar)
                .await?
                .1
        }
        None => HashMap::new(),
    };
    let notes = match &engines.notes {
        Some(notes) => {
            let (lat, map, _) = into_engine(notes, scope, c, EvalMode::Raw, true, bar).await?;
            tally.notes_add_ms.extend(lat);
            map
        }
        None => HashMap::new(),
    };
    let compare = match &engines.compare {
        Some(compare) => {
            let (lat, map, _) = into_engine(compare, scope, c, opts.mode, false, bar).await?;
            tally.compare_add_ms.extend(lat);
            map
        }
        None => HashMap::new(),
    };
    tally.counts.sessions += c.sessions.len();
    tally.counts.turns += c.turns().count();
    Ok(TurnMaps {
        mnemo,
        plain,
        notes,
        compare,
    })
}

/// Ingests one conversation into an engine; returns add-call latencies, the map from the
/// stored messages to turn ids, and the inferred adds a model failed (counted, not fatal: the
/// session's messages are still logged, and its questions are scored on what was remembered).
async fn into_engine(
    engine: &Memory,
    scope: &Scope,
    c: &Conversation,
    mode: EvalMode,
    notes: bool,
    progress: &ProgressBar,
) -> Result<(Vec<f64>, HashMap<MessageId, String>, usize)> {
    let mut latencies = Vec::new();
    let mut failed = 0;
    for s in 0..c.sessions.len() {
        let req = if notes {
            note_request(scope, c, s)
        } else {
            add_request(scope, c, s, mode)
        };
        let t = Instant::now();
        match engine.add(req).await {
            Ok(_) => {}
            Err(e) if mode == EvalMode::Infer && e.kind().is_retryable() => {
                tracing::warn!(
                    session = c.sessions[s].number,
                    error_kind = e.kind().as_str(),
                    "inferred add failed"
                );
                failed += 1;
            }
            Err(e) => {
                return Err(anyhow::Error::new(e)
                    .context(format!("adding session {}", c.sessions[s].number)))
            }
        }
        latencies.push(t.elapsed().as_secs_f64() * 1e3);
        progress.inc(c.sessions[s].turns.len() as u64);
    }
    let turns: Vec<&Turn> = c.turns().collect();
    let (store_scope, n) = (scope.clone(), turns.len());
    let store = engine.store().clone();
    let messages =
        tokio::task::spawn_blocking(move || store.messages(&store_scope, None, n)).await??;
    if messages.len() != turns.len()
        || messages
            .iter()
            .zip(&turns)
            .any(|(m, t)| m.content != t.text)
    {
        bail!(
            "the message log of {} does not match its turns ({} messages for {} turns)",
            c.sample_id,
            messages.len(),
            turns.len()
        );
    }
    let map = messages
        .iter()
        .zip(&turns)
        .map(|(m, t)| (m.id, t.dia_id.clone()))
        .collect();
    Ok((latencies, map, failed))
}
