//! Whole-store work on the hierarchy: erase's scrubbing of erased texts out of pages and
//! summaries (with the event times it changes), the consistency count `integrity` reports, and
//! re-embedding pages and segments on a model change. Named as in the PostgreSQL store.

use crate::codec::{blob_to_vector, from_ms, sql_err, vector_to_blob, Cached};
use mnemo_core::*;
use rusqlite::{params, Connection, Transaction};

/// Removes erased texts from the pages and segments of `owner` (exact scope) that quote them:
/// each occurrence in a page's text or a segment's summary becomes `[erased]`, and keywords
/// taken from an erased text are dropped from both; the event time of a segment so touched, or
/// holding a page so touched, is read again from what its pages say now (an erased message's
/// date goes with it). Returns how many rows changed.
pub(crate) fn scrub(tx: &Transaction<'_>, owner: &Scope, texts: &[String]) -> Result<u64> {
    let key = owner.key();
    let Some(scrub) = TierScrub::new(texts) else {
        return Ok(0);
    };
    let mut n = 0u64;
    let mut touched = std::collections::BTreeSet::new();
    for (table, column, segment) in [
        ("pages", "text", "segment_id"),
        ("segments", "summary", "id"),
    ] {
        let rows: Vec<(String, String, String, Option<String>)> = {
            let mut st = tx
                .prepare(&format!(
                    "SELECT id, {column}, keywords, {segment} FROM {table} WHERE scope_key = ?1"
                ))
                .map_err(sql_err)?;
            let it = st
                .query_map([&key], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
                .map_err(sql_err)?;
            it.collect::<rusqlite::Result<_>>().map_err(sql_err)?
        };
        for (id, body, keywords, segment) in rows {
            let Some(body) = scrub.body(&body) else {
                continue;
            };
            touched.extend(segment);
            let keywords = scrub.keywords(serde_json::from_str(&keywords).map_err(Error::storage)?);
            tx.execute_cached(
                &format!("UPDATE {table} SET {column} = ?1, keywords = ?2 WHERE id = ?3"),
                params![
                    body,
                    serde_json::to_string(&keywords).map_err(Error::storage)?,
                    id
                ],
            )
            .map_err(sql_err)?;
            n += 1;
        }
    }
    for segment in &touched {
        retag_segment(tx, segment)?;
    }
    Ok(n)
}

/// Sets a segment's event time to the span of what its pages state now (`tier::page_event_time`).
fn retag_segment(tx: &Transaction<'_>, segment: &str) -> Result<()> {
    let pages: Vec<(String, i64)> = {
        let mut st = tx
            .prepare_cached("SELECT text, at FROM pages WHERE segment_id = ?1")
            .map_err(sql_err)?;
        let it = st
            .query_map([segment], |r| Ok((r.get(0)?, r.get(1)?)))
            .map_err(sql_err)?;
        it.collect::<rusqlite::Result<_>>().map_err(sql_err)?
    };
    let event = pages
        .iter()
        .filter_map(|(text, at)| tier::page_event_time(text, from_ms(*at)))
        .reduce(|a, b| a.span(&b));
    tx.execute_cached(
        "UPDATE segments SET event_start = ?1, event_end = ?2, event_time = ?3 WHERE id = ?4",
        params![
            event.as_ref().map(|e| e.start.timestamp_millis()),
            event.as_ref().map(|e| e.end.timestamp_millis()),
            event.as_ref().map(crate::codec::event_time_text),
            segment
        ],
    )
    .map_err(sql_err)?;
    Ok(())
}

/// Pages with a message that is no longer in the log, or mid-term pages without an active
/// segment: both must be 0 in a consistent store.
pub(crate) fn inconsistent_pages(conn: &Connection) -> Result<u64> {
    let orphans: i64 = conn
        .query_row_cached(
            "SELECT COUNT(*) FROM pages p WHERE p.tier = 'mid' AND NOT EXISTS \
             (SELECT 1 FROM segments s WHERE s.id = p.segment_id AND s.evicted_at IS NULL)",
            [],
            |r| r.get(0),
        )
        .map_err(sql_err)?;
    Ok(orphans as u64)
}

/// Re-embeds every page's text through `embed` (batches of at most `batch`) and recomputes each
/// segment's vector as the normalised mean of its pages' new vectors; part of a rebind's
/// transaction, so no page or segment keeps a vector of the old model.
pub(crate) fn rebind_pages(
    tx: &Transaction<'_>,
    dimension: usize,
    batch: usize,
    embed: &mut EmbedBatch<'_>,
) -> Result<u64> {
    let rows: Vec<(i64, String, Option<String>)> = {
        let mut st = tx
            .prepare("SELECT seq, text, segment_id FROM pages ORDER BY seq")
            .map_err(sql_err)?;
        let it = st
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .map_err(sql_err)?;
        it.collect::<rusqlite::Result<_>>().map_err(sql_err)?
    };
    let mut segments: std::collections::BTreeSet<String> = Default::default();
    reembed(
        &rows,
        (dimension, batch),
        embed,
        |(_, text, _)| text.clone(),
        |(seq, _, segment), v| {
            tx.execute_cached(
                "UPDATE pages SET vector = ?1 WHERE seq = ?2",
                params![vector_to_blob(&v), seq],
            )
            .map_err(sql_err)?;
            segments.extend(segment.clone());
            Ok(())
        },
    )?;
    for segment in &segments {
        set_vector_from_pages(tx, segment)?;
        tx.execute_cached(
            "UPDATE segments SET version = version + 1 WHERE id = ?1",
            [segment],
        )
        .map_err(sql_err)?;
    }
    Ok(rows.len() as u64)
}

/// Sets a segment's vector to the normalised mean of its pages' vectors (a rebind's new model,
/// an import's re-embedded pages). A segment without pages keeps its vector.
pub(crate) fn set_vector_from_pages(tx: &Transaction<'_>, segment: &str) -> Result<()> {
    let pages: Vec<Vec<f32>> = {
        let mut st = tx
            .prepare_cached("SELECT vector FROM pages WHERE segment_id = ?1")
            .map_err(sql_err)?;
        let rows = st
            .query_map([segment], |r| r.get::<_, Vec<u8>>(0))
            .map_err(sql_err)?;
        let blobs = rows
            .collect::<rusqlite::Result<Vec<_>>>()
            .map_err(sql_err)?;
        blobs.iter().map(|b| blob_to_vector(b)).collect()
    };
    let Some(vector) = segment_vector(pages) else {
        return Ok(());
    };
    tx.execute_cached(
        "UPDATE segments SET vector = ?1 WHERE id = ?2",
        params![vector_to_blob(&vector), segment],
    )
    .map_err(sql_err)?;
    Ok(())
}
