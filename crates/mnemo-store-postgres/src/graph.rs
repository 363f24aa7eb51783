//! [`mnemo_core::Graph`] on PostgreSQL: a memory's links and entities, adding and removing
//! links, and the linked memories a search expands to.
use crate::codec::entity_from_row;
use crate::codec::link_from_row;
use crate::codec::ENTITY_COLUMNS;
use crate::codec::LINK_COLUMNS;
use crate::encode::write_link;
use crate::links::owner_in;
use crate::pg_err;
use crate::predicate;
use crate::read::owned_key;
use crate::read::query_memories;
use crate::PgStore;
use mnemo_core::*;
use std::collections::HashMap;

impl Graph for PgStore {
    fn links(&self, scope: &Scope, id: MemoryId) -> Result<Vec<Link>> {
        self.with(|c| {
            let key = owned_key(c, scope, id)?.ok_or_else(|| Error::not_found("memory", id))?;
            let rows = c
                .query(
                    &format!(
                        "SELECT {LINK_COLUMNS} FROM links l WHERE l.scope_key = $1 \
                         AND (l.from_id = $2 OR l.to_id = $2) \
                         ORDER BY l.created_at, l.from_id, l.to_id, l.kind"
                    ),
                    &[&key, &id.0],
                )
                .map_err(pg_err)?;
            rows.iter().map(link_from_row).collect()
        })
    }

    fn add_links(&self, scope: &Scope, links: &[Link]) -> Result<()> {
        validate_links(links)?;
        self.write_tx(|tx| {
            for l in links {
                let owner = check_link(scope, l, &HashMap::new(), |id| owner_in(tx, id))?;
                self.step(WriteStep::Link)?;
                write_link(tx, &owner.key(), l, true)?;
            }
            Ok(())
        })
    }

    fn remove_link(&self, scope: &Scope, key: &LinkKey) -> Result<bool> {
        let LinkKey { from, to, kind } = *key;
        self.write_tx(|tx| {
            let owner = crate::read::owned_key(tx, scope, from)?
                .ok_or_else(|| Error::not_found("memory", from))?;
            let n = tx
                .execute(
                    "DELETE FROM links WHERE scope_key = $1 AND from_id = $2 AND to_id = $3 \
                     AND kind = $4",
                    &[&owner, &from.0, &to.0, &kind.as_str()],
                )
                .map_err(pg_err)?;
            Ok(n > 0)
        })
    }

    fn linked(&self, req: &LinkedQuery<'_>) -> Result<Vec<LinkedMemory>> {
        if req.finds_nothing() {
            return Ok(Vec::new());
        }
        let id_list: Vec<uuid::Uuid> = req.ids.iter().map(|i| i.0).collect();
        let kind_list: Vec<String> = req.kinds.iter().map(|k| k.as_str().to_string()).collect();
        // The owners of the given memories narrow the links to their rows (the links' keys
        // start with the owner).
        let sql = format!(
            "SELECT {LINK_COLUMNS} FROM links l \
             WHERE l.scope_key IN (SELECT m.scope_key FROM memories m WHERE m.id = ANY($1::uuid[])) \
             AND (l.from_id = ANY($1::uuid[]) OR l.to_id = ANY($1::uuid[])) \
             AND l.kind = ANY($2::text[]) \
             ORDER BY l.strength DESC, l.created_at, l.from_id, l.to_id"
        );
        self.with(|c| {
            let links = c
                .query(&sql, &[&id_list, &kind_list])
                .map_err(pg_err)?
                .iter()
                .map(link_from_row)
                .collect::<Result<Vec<_>>>()?;
            let walk = LinkWalk::new(req.ids, links);
            let mut loaded: HashMap<MemoryId, (i64, Memory)> = HashMap::new();
            for chunk in walk.others().chunks(1000) {
                let mut p = predicate::candidate(&req.query)?;
                let a = p.arg(chunk.iter().map(|i| i.0).collect::<Vec<uuid::Uuid>>());
                p.and(&format!("m.id = ANY({a}::uuid[])"));
                for (key, m) in query_memories(c, &p, "")? {
                    loaded.insert(m.id, (key, m));
                }
            }
            Ok(walk.finish(&loaded, req.query.limit))
        })
    }

    fn entities_of(&self, scope: &Scope, id: MemoryId) -> Result<Vec<Entity>> {
        self.with(|c| {
            let key = owned_key(c, scope, id)?.ok_or_else(|| Error::not_found("memory", id))?;
            let rows = c
                .query(
                    &format!(
                        "SELECT {ENTITY_COLUMNS} FROM entity_memories em \
                         JOIN entities e ON e.scope_key = em.scope_key AND e.id = em.entity_id \
                         WHERE em.scope_key = $1 AND em.memory_id = $2 \
                         ORDER BY e.normalized COLLATE \"C\", e.id"
                    ),
                    &[&key, &id.0],
                )
                .map_err(pg_err)?;
            rows.iter().map(entity_from_row).collect()
        })
    }
}
