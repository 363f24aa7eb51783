//! Whole-store work on the hierarchy: re-embedding pages and segments on a model change,
//! scrubbing erased texts out of pages and summaries, and the consistency count `integrity`
//! reports.

use super::{json_list, strings_of};
use crate::codec::col;
use crate::{pg_err, PgStore};
use mnemo_core::*;
use pgvector::Vector;
use postgres::{GenericClient, Transaction};
use std::collections::BTreeSet;

impl PgStore {
    /// Re-embeds every page's text through `embed` (batches of at most `batch`) and sets each
    /// segment's vector to the normalised mean of its pages' new vectors; part of a rebind's
    /// transaction, so no page or segment keeps a vector of the old model. Returns the pages
    /// re-embedded.
    pub(crate) fn rebind_tiers(
        &self,
        tx: &mut Transaction<'_>,
        dimension: usize,
        batch: usize,
        embed: &mut EmbedBatch<'_>,
    ) -> Result<u64> {
        // Streamed in `batch`-sized fetches, so a large store's pages are never all in memory;
        // the portal reads the snapshot it started with, not the rows updated meanwhile.
        let portal = tx
            .bind(
                "SELECT scope_key, id, text, segment_id FROM pages ORDER BY seq",
                &[],
            )
            .map_err(pg_err)?;
        let fetch = i32::try_from(batch.max(1)).unwrap_or(i32::MAX);
        let mut segments: BTreeSet<(String, uuid::Uuid)> = BTreeSet::new();
        let mut n = 0u64;
        loop {
            let chunk = tx.query_portal(&portal, fetch).map_err(pg_err)?;
            if chunk.is_empty() {
                break;
            }
            n += chunk.len() as u64;
            let texts = chunk
                .iter()
                .map(|r| col::<&str>(r, "text"))
                .collect::<Result<Vec<_>>>()?;
            let vectors = embed_checked(embed, &texts, dimension)?;
            for (row, v) in chunk.iter().zip(vectors) {
                let key: String = col(row, "scope_key")?;
                let id: uuid::Uuid = col(row, "id")?;
                tx.execute(
                    "UPDATE pages SET embedding = $1 WHERE scope_key = $2 AND id = $3",
                    &[&Vector::from(v), &key, &id],
                )
                .map_err(pg_err)?;
                if let Some(s) = col::<Option<uuid::Uuid>>(row, "segment_id")? {
                    segments.insert((key, s));
                }
            }
        }
        for (key, segment) in &segments {
            set_vector_from_pages(tx, key, SegmentId(*segment))?;
            tx.execute(
                "UPDATE segments SET version = version + 1 WHERE scope_key = $1 AND id = $2",
                &[key, segment],
            )
            .map_err(pg_err)?;
        }
        Ok(n)
    }
}

/// Sets a segment's vector to the normalised mean of its pages' vectors (a rebind's new model,
/// an import's re-embedded pages). A segment without pages keeps its vector.
pub(crate) fn set_vector_from_pages(
    tx: &mut impl GenericClient,
    key: &str,
    segment: SegmentId,
) -> Result<()> {
    let rows = tx
        .query(
            "SELECT embedding FROM pages WHERE scope_key = $1 AND segment_id = $2",
            &[&key, &segment.0],
        )
        .map_err(pg_err)?;
    let pages = rows
        .iter()
        .map(|row| Ok(col::<Vector>(row, "embedding")?.to_vec()))
        .collect::<Result<Vec<_>>>()?;
    let Some(sum) = segment_vector(pages) else {
        return Ok(());
    };
    tx.execute(
        "UPDATE segments SET embedding = $1 WHERE scope_key = $2 AND id = $3",
        &[&Vector::from(sum), &key, &segment.0],
    )
    .map_err(pg_err)?;
    Ok(())
}

/// Removes erased texts from the pages and segments of `owner` (exact scope) that quote them:
/// each occurrence in a page's text or a segment's summary becomes `[erased]`, and keywords
/// taken from an erased text are dropped from both; the event time of a segment so touched, or
/// holding a page so touched, is read again from what its pages say now (an erased message's
/// date goes with it). Returns how many rows changed.
pub(crate) fn scrub_tiers(
    tx: &mut Transaction<'_>,
    owner: &Scope,
    texts: &[String],
) -> Result<u64> {
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
        let rows = tx
            .query(
                &format!(
                    "SELECT id, {column}, keywords, {segment} AS segment FROM {table} \
                     WHERE scope_key = $1"
                ),
                &[&key],
            )
            .map_err(pg_err)?;
        for row in &rows {
            let id: uuid::Uuid = col(row, "id")?;
            let Some(body) = scrub.body(col(row, column)?) else {
                continue;
            };
            touched.extend(col::<Option<uuid::Uuid>>(row, "segment")?);
            let kept = scrub.keywords(strings_of("keywords", col(row, "keywords")?)?);
            tx.execute(
                &format!(
                    "UPDATE {table} SET {column} = $1, keywords = $2 \
                     WHERE scope_key = $3 AND id = $4"
                ),
                &[&body, &json_list(&kept), &key, &id],
            )
            .map_err(pg_err)?;
            n += 1;
        }
    }
    for segment in &touched {
        retag_segment(tx, &key, segment)?;
    }
    Ok(n)
}

/// Sets a segment's event time to the span of what its pages state now (`tier::page_event_time`).
fn retag_segment(tx: &mut Transaction<'_>, key: &str, segment: &uuid::Uuid) -> Result<()> {
    let rows = tx
        .query(
            "SELECT text, at FROM pages WHERE scope_key = $1 AND segment_id = $2",
            &[&key, segment],
        )
        .map_err(pg_err)?;
    let mut event: Option<mnemo_core::time::EventTime> = None;
    for row in &rows {
        let text: &str = col(row, "text")?;
        if let Some(e) = tier::page_event_time(text, crate::codec::from_ms(col(row, "at")?)) {
            event = Some(match event {
                Some(old) => old.span(&e),
                None => e,
            });
        }
    }
    tx.execute(
        "UPDATE segments SET event_start = $1, event_end = $2, event_time = $3 \
         WHERE scope_key = $4 AND id = $5",
        &[
            &event.as_ref().map(|e| e.start.timestamp_millis()),
            &event.as_ref().map(|e| e.end.timestamp_millis()),
            &event.as_ref().map(crate::codec::event_time_value),
            &key,
            segment,
        ],
    )
    .map_err(pg_err)?;
    Ok(())
}

/// Mid-term pages without an active segment of their owner: 0 in a consistent store.
pub(crate) fn inconsistent_pages(client: &mut impl GenericClient) -> Result<u64> {
    let row = client
        .query_one(
            "SELECT COUNT(*) AS n FROM pages p WHERE p.tier = 'mid' AND NOT EXISTS \
             (SELECT 1 FROM segments s WHERE s.scope_key = p.scope_key \
              AND s.id = p.segment_id AND s.evicted_at IS NULL)",
            &[],
        )
        .map_err(pg_err)?;
    Ok(col::<i64>(&row, "n")? as u64)
}
