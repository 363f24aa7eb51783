//! `mnemo migrate --to <store>`: copies the configured store into another one (a PostgreSQL
//! URL or a SQLite file path), in either direction.
//!
//! The copy is the store's own export read back by the target's import (`Store::export`,
//! `Store::import`): memories with their metadata types, messages, history, links, entity
//! links, the hierarchy's pages and segments, idempotency results. Vectors are not part of an
//! export; the target embeds with the configured embedder, the same model as the source, so
//! they come out as they were. Records whose id the target already holds are skipped, so a
//! migration that stopped half-way (or ran twice) is finished by running it again. The source
//! is only read. API keys are copied too, keeping their hashes and revocations.

use crate::io::outln;
use crate::io::print_json;
use mnemo::{Memory, StoreConfig, WindowIndexing};
use mnemo_core::{ErrorKind, ExportRecord, RankParams, Store};
use std::collections::BTreeMap;
use std::sync::Arc;

/// Records per kind (`memory`, `message`, `history`, …), as the export names them.
fn census(records: &[ExportRecord]) -> BTreeMap<String, u64> {
    let mut out = BTreeMap::new();
    for r in records {
        let kind = serde_json::to_value(r)
            .ok()
            .and_then(|v| v["type"].as_str().map(str::to_string))
            .unwrap_or_else(|| "unknown".into());
        *out.entry(kind).or_insert(0) += 1;
    }
    out
}

/// Copies the API keys the target does not hold yet; returns how many it copied.
fn copy_keys(from: &dyn Store, to: &dyn Store) -> mnemo::Result<u64> {
    let (Some(src), Some(dst)) = (from.api_keys(), to.api_keys()) else {
        return Ok(0);
    };
    let mut n = 0;
    for key in src.list_keys()? {
        match dst.insert_key(&key) {
            Ok(()) => n += 1,
            Err(e) if e.kind() == ErrorKind::Conflict => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

pub(super) async fn run(
    memory: &Memory,
    from: &StoreConfig,
    to: &str,
    pool_size: usize,
    json: bool,
) -> anyhow::Result<()> {
    let target = StoreConfig::parse(to, pool_size)?;
    if target == *from {
        return Err(mnemo::Error::invalid("to", "names the store being copied").into());
    }
    let records = memory.export().await?;
    // Before the target is opened or written: every offending record is named at once.
    mnemo_core::store::check_records(&records)?;
    let before = census(&records);
    let embedder = memory.embedder().await?;
    // Opening, binding and dropping a PostgreSQL store are blocking: never on an async worker.
    let (source, t) = (memory.store().clone(), target.clone());
    let (dest, keys) = tokio::task::spawn_blocking(move || {
        let store: Arc<dyn Store> = mnemo::open_store(&t)?;
        let keys = copy_keys(source.as_ref(), store.as_ref())?;
        let dest = Memory::from_parts_with(
            store,
            embedder,
            RankParams::default(),
            WindowIndexing::default(),
        )?;
        Ok::<_, mnemo::Error>((dest, keys))
    })
    .await??;
    let written = dest.import_records(records).await?;
    let after = census(&dest.export().await?);
    // The target may have held records of its own; it must hold at least every copied one.
    let short: Vec<String> = before
        .iter()
        .filter(|(kind, n)| after.get(*kind).copied().unwrap_or(0) < **n)
        .map(|(kind, n)| {
            format!(
                "{kind}: {n} exported, {} in the target",
                after.get(kind).copied().unwrap_or(0)
            )
        })
        .collect();
    tokio::task::spawn_blocking(move || drop(dest)).await?;
    if !short.is_empty() {
        return Err(mnemo::Error::internal(format!(
            "the target holds fewer records than were copied ({}); run `mnemo migrate` again",
            short.join("; ")
        ))
        .into());
    }
    let summary = serde_json::json!({"migrated": {
        "from": from.describe(), "to": target.describe(),
        "records": before, "written": written, "api_keys": keys,
    }});
    if json {
        print_json(&summary)?;
    } else {
        outln!(
            "copied {} into {}: {written} records written, {keys} API keys",
            from.describe(),
            target.describe()
        );
    }
    Ok(())
}
