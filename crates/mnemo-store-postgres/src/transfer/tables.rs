//! Exported records that an import writes back as they were: entities with their memory
//! links, segments and pages. An id the store holds already is kept (`ON CONFLICT DO
//! NOTHING`), so each returns the rows it wrote.

use crate::codec::{ms, opt_ms};
use crate::encode::scope_parts;
use crate::pg_err;
use crate::tiers::json_list;
use mnemo_core::tier::{Segment, StoredPage};
use mnemo_core::*;
use pgvector::Vector;
use postgres::Transaction;

/// An entity of an exact scope, linked to those of its memories the store holds; its
/// `mentions` is recounted from the links.
pub(super) fn entity(tx: &mut Transaction<'_>, r: &EntityRecord) -> Result<u64> {
    let owner = Scope::from_parts(
        r.user_id.as_deref(),
        r.agent_id.as_deref(),
        r.run_id.as_deref(),
    )?;
    let key = owner.key();
    let e = &r.entity;
    let mut n = tx
        .execute(
            "INSERT INTO entities (scope_key, id, user_id, agent_id, run_id, name, normalized, \
             entity_type, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) \
             ON CONFLICT DO NOTHING",
            &[
                &key,
                &e.id.0,
                &r.user_id,
                &r.agent_id,
                &r.run_id,
                &e.name,
                &e.normalized,
                &e.entity_type,
                &ms(e.created_at),
            ],
        )
        .map_err(pg_err)?;
    // Only memories of the entity's own scope are linked to it.
    let memories: Vec<uuid::Uuid> = r.memories.iter().map(|m| m.0).collect();
    n += tx
        .execute(
            "INSERT INTO entity_memories (scope_key, entity_id, memory_id) \
             SELECT $1, $2, m.id FROM memories m WHERE m.scope_key = $1 AND m.id = ANY($3) \
             ON CONFLICT DO NOTHING",
            &[&key, &e.id.0, &memories],
        )
        .map_err(pg_err)?;
    tx.execute(
        "UPDATE entities SET mentions = (SELECT COUNT(*) FROM entity_memories em \
         WHERE em.scope_key = $1 AND em.entity_id = $2) WHERE scope_key = $1 AND id = $2",
        &[&key, &e.id.0],
    )
    .map_err(pg_err)?;
    Ok(n)
}

/// An exported segment as it was, with a zero vector until the import's end sets it from its
/// pages; an existing id is kept.
pub(super) fn segment(tx: &mut Transaction<'_>, s: &Segment, dim: usize) -> Result<u64> {
    let [u, a, r] = scope_parts(&s.scope);
    let event = crate::tiers::event_cols(s);
    tx.execute(
        "INSERT INTO segments (scope_key, id, user_id, agent_id, run_id, summary, \
         summary_author, keywords, embedding, page_count, length_tokens, visits, last_visit_at, \
         created_at, updated_at, evicted_at, version, event_start, event_end, event_time) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, \
         $18, $19, $20) ON CONFLICT DO NOTHING",
        &[
            &s.scope.key(),
            &s.id.0,
            &u,
            &a,
            &r,
            &s.summary,
            &s.summary_author.as_str(),
            &json_list(&s.keywords),
            &Vector::from(vec![0.0; dim]),
            &(s.page_count as i32),
            &(s.length_tokens as i64),
            &(s.visits as i64),
            &ms(s.last_visit_at),
            &ms(s.created_at),
            &ms(s.updated_at),
            &opt_ms(s.evicted_at),
            &(s.version as i64),
            &event.0,
            &event.1,
            &event.2,
        ],
    )
    .map_err(pg_err)
}

/// An exported page as it was, with `vector`; an existing id is kept.
pub(super) fn page(tx: &mut Transaction<'_>, p: &StoredPage, vector: &[f32]) -> Result<u64> {
    let [u, a, r] = scope_parts(&p.scope);
    tx.execute(
        "INSERT INTO pages (scope_key, id, user_id, agent_id, run_id, session_id, message_ids, \
         text, tokens, at, embedding, keywords, tier, segment_id, continues, analysed) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16) \
         ON CONFLICT DO NOTHING",
        &[
            &p.scope.key(),
            &p.id.0,
            &u,
            &a,
            &r,
            &p.session_id,
            &json_list(&p.message_ids),
            &p.text,
            &(p.tokens as i32),
            &ms(p.at),
            &Vector::from(vector.to_vec()),
            &json_list(&p.keywords),
            &p.tier.as_str(),
            &p.segment.map(|s| s.0),
            &p.continues.map(|c| c.0),
            &p.analysed,
        ],
    )
    .map_err(pg_err)
}
