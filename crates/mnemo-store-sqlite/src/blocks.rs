//! Core memory blocks (`blocks`, `block_agents`, `block_history`): the [`Blocks`] capability.
//! Every write is one `IMMEDIATE` transaction that reads the block it changes first, so two
//! editors serialise on the write lock and core's edit rule ([`BlockChange::apply`]) always
//! sees the latest version. The SQL of [`seen`] implements core's visibility rule
//! ([`MemoryBlock::seen_by`]).

use crate::codec::{from_ms, sql_err};
use crate::SqliteStore;
use mnemo_core::blocks::BlockActor;
use mnemo_core::*;
use rusqlite::types::Value as Sql;
use rusqlite::{params, params_from_iter, Connection, OptionalExtension, TransactionBehavior};

/// The tables (schema migration appended to `schema::MIGRATIONS`).
pub(crate) const BLOCKS_DDL: &str = r#"
    CREATE TABLE blocks (
        id TEXT PRIMARY KEY,
        user_id TEXT,
        agent_id TEXT,
        label TEXT NOT NULL,
        value TEXT NOT NULL,
        description TEXT NOT NULL,
        char_limit INTEGER NOT NULL,
        read_only INTEGER NOT NULL,
        version INTEGER NOT NULL,
        created_at INTEGER NOT NULL,
        updated_at INTEGER NOT NULL
    );
    CREATE UNIQUE INDEX blocks_by_owner_label
        ON blocks (COALESCE(user_id, ''), COALESCE(agent_id, ''), label);
    CREATE INDEX blocks_by_agent ON blocks (agent_id, label) WHERE agent_id IS NOT NULL;
    CREATE TABLE block_agents (
        block_id TEXT NOT NULL,
        agent_id TEXT NOT NULL,
        PRIMARY KEY (block_id, agent_id)
    );
    CREATE INDEX block_agents_by_agent ON block_agents (agent_id);
    CREATE TABLE block_history (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        block_id TEXT NOT NULL,
        user_id TEXT,
        agent_id TEXT,
        label TEXT NOT NULL,
        version INTEGER NOT NULL,
        op TEXT NOT NULL,
        actor TEXT,
        reason TEXT,
        before_value TEXT,
        after_value TEXT,
        created_at INTEGER NOT NULL
    );
    CREATE INDEX block_history_by_block ON block_history (block_id, id);
"#;

const COLS: &str = "b.id, b.user_id, b.agent_id, b.label, b.value, b.description, b.char_limit, \
     b.read_only, b.version, b.created_at, b.updated_at, \
     (SELECT group_concat(agent_id, char(31)) FROM \
        (SELECT x.agent_id FROM block_agents x WHERE x.block_id = b.id ORDER BY x.agent_id))";

fn block_from_row(r: &rusqlite::Row<'_>) -> Result<MemoryBlock> {
    let get = |e: rusqlite::Error| sql_err(e);
    let id: String = r.get(0).map_err(get)?;
    let user: Option<String> = r.get(1).map_err(get)?;
    let agent: Option<String> = r.get(2).map_err(get)?;
    let agents: Option<String> = r.get(11).map_err(get)?;
    Ok(MemoryBlock {
        id: uuid::Uuid::parse_str(&id).map_err(Error::storage)?,
        owner: Scope::from_parts(user.as_deref(), agent.as_deref(), None)?,
        label: BlockLabel::new(&r.get::<_, String>(3).map_err(get)?)?,
        value: r.get(4).map_err(get)?,
        description: r.get(5).map_err(get)?,
        limit: r.get(6).map_err(get)?,
        read_only: r.get(7).map_err(get)?,
        agents: agents
            .unwrap_or_default()
            .split('\u{1f}')
            .filter(|s| !s.is_empty())
            .map(AgentId::new)
            .collect::<Result<_>>()?,
        version: r.get::<_, i64>(8).map_err(get)? as u64,
        created_at: from_ms(r.get(9).map_err(get)?),
        updated_at: from_ms(r.get(10).map_err(get)?),
    })
}

/// The visibility rule of blocks (core's `MemoryBlock::seen_by`) for alias `b`, with its
/// parameters; `pinned` narrows it to `MemoryBlock::pinned_for`.
fn seen(scope: &Scope, pinned: bool) -> (String, Vec<Sql>) {
    let mut sql = vec!["1 = 1".to_string()];
    let mut params = Vec::new();
    if let Some(u) = scope.user_id() {
        sql.push("b.user_id = ?".into());
        params.push(Sql::Text(u.to_string()));
    }
    match scope.agent_id() {
        Some(a) => {
            sql.push(
                "(b.agent_id = ? OR (b.agent_id IS NULL AND EXISTS (SELECT 1 FROM block_agents x \
                 WHERE x.block_id = b.id AND x.agent_id = ?)))"
                    .into(),
            );
            params.push(Sql::Text(a.to_string()));
            params.push(Sql::Text(a.to_string()));
        }
        None if pinned => sql.push("b.agent_id IS NULL".into()),
        None => {}
    }
    (sql.join(" AND "), params)
}

/// The block labelled `label` that `scope` sees (the trait's order when several do).
fn find(conn: &Connection, scope: &Scope, label: &BlockLabel) -> Result<Option<MemoryBlock>> {
    let (pred, mut p) = seen(scope, false);
    p.push(Sql::Text(label.to_string()));
    p.push(Sql::Text(scope.user_id().map_or("", |u| u.as_str()).into()));
    p.push(Sql::Text(
        scope.agent_id().map_or("", |a| a.as_str()).into(),
    ));
    let sql = format!(
        "SELECT {COLS} FROM blocks b WHERE {pred} AND b.label = ? \
         ORDER BY (COALESCE(b.user_id, '') = ? AND COALESCE(b.agent_id, '') = ?) DESC, \
         b.agent_id IS NULL DESC, b.created_at, b.id LIMIT 1"
    );
    let mut st = conn.prepare_cached(&sql).map_err(sql_err)?;
    let mut rows = st.query(params_from_iter(p.iter())).map_err(sql_err)?;
    match rows.next().map_err(sql_err)? {
        Some(r) => block_from_row(r).map(Some),
        None => Ok(None),
    }
}

fn query_blocks(conn: &Connection, sql: &str, p: &[Sql]) -> Result<Vec<MemoryBlock>> {
    let mut st = conn.prepare_cached(sql).map_err(sql_err)?;
    let mut rows = st.query(params_from_iter(p.iter())).map_err(sql_err)?;
    let mut out = Vec::new();
    while let Some(r) = rows.next().map_err(sql_err)? {
        out.push(block_from_row(r)?);
    }
    Ok(out)
}

fn insert_block(tx: &Connection, b: &MemoryBlock) -> Result<()> {
    tx.execute(
        "INSERT INTO blocks (id, user_id, agent_id, label, value, description, char_limit, \
         read_only, version, created_at, updated_at) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
        params![
            b.id.to_string(),
            b.owner.user_id().map(|u| u.as_str()),
            b.owner.agent_id().map(|a| a.as_str()),
            b.label.as_str(),
            b.value,
            b.description,
            b.limit,
            b.read_only,
            b.version as i64,
            b.created_at.timestamp_millis(),
            b.updated_at.timestamp_millis(),
        ],
    )
    .map_err(sql_err)?;
    set_agents(tx, b)
}

fn set_agents(tx: &Connection, b: &MemoryBlock) -> Result<()> {
    tx.execute(
        "DELETE FROM block_agents WHERE block_id = ?1",
        [b.id.to_string()],
    )
    .map_err(sql_err)?;
    for a in &b.agents {
        tx.execute(
            "INSERT INTO block_agents (block_id, agent_id) VALUES (?1, ?2)",
            params![b.id.to_string(), a.as_str()],
        )
        .map_err(sql_err)?;
    }
    Ok(())
}

fn insert_event(tx: &Connection, owner: &Scope, e: &BlockEvent) -> Result<()> {
    tx.execute(
        "INSERT INTO block_history (block_id, user_id, agent_id, label, version, op, actor, \
         reason, before_value, after_value, created_at) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
        params![
            e.block_id.to_string(),
            owner.user_id().map(|u| u.as_str()),
            owner.agent_id().map(|a| a.as_str()),
            e.label.as_str(),
            e.version as i64,
            e.op.as_str(),
            e.actor,
            e.reason,
            e.before,
            e.after,
            e.at.timestamp_millis(),
        ],
    )
    .map_err(sql_err)?;
    Ok(())
}

fn events(conn: &Connection, block: uuid::Uuid, limit: usize) -> Result<Vec<BlockEvent>> {
    let mut st = conn
        .prepare_cached(
            "SELECT block_id, label, version, op, actor, reason, before_value, after_value, \
             created_at FROM block_history WHERE block_id = ?1 ORDER BY id DESC LIMIT ?2",
        )
        .map_err(sql_err)?;
    let mut rows = st
        .query(params![
            block.to_string(),
            limit.min(i64::MAX as usize) as i64
        ])
        .map_err(sql_err)?;
    let mut out = Vec::new();
    while let Some(r) = rows.next().map_err(sql_err)? {
        let id: String = r.get(0).map_err(sql_err)?;
        out.push(BlockEvent {
            block_id: uuid::Uuid::parse_str(&id).map_err(Error::storage)?,
            label: BlockLabel::new(&r.get::<_, String>(1).map_err(sql_err)?)?,
            version: r.get::<_, i64>(2).map_err(sql_err)? as u64,
            op: BlockOp::parse(&r.get::<_, String>(3).map_err(sql_err)?)?,
            actor: r.get(4).map_err(sql_err)?,
            reason: r.get(5).map_err(sql_err)?,
            before: r.get(6).map_err(sql_err)?,
            after: r.get(7).map_err(sql_err)?,
            at: from_ms(r.get(8).map_err(sql_err)?),
        });
    }
    out.reverse();
    Ok(out)
}

impl SqliteStore {
    /// Runs `f` in one `IMMEDIATE` transaction on the writer.
    fn block_write<T>(&self, f: impl FnOnce(&Connection) -> Result<T>) -> Result<T> {
        let mut conn = self.writer.lock();
        let tx = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(sql_err)?;
        let out = f(&tx)?;
        tx.commit().map_err(sql_err)?;
        Ok(out)
    }
}

impl Blocks for SqliteStore {
    fn create_block(&self, new: &NewBlock, limits: &BlockLimits) -> Result<MemoryBlock> {
        let (block, event) = new.build(limits, chrono::Utc::now())?;
        self.block_write(|tx| {
            let owner = [
                block.owner.user_id().map(|u| u.to_string()),
                block.owner.agent_id().map(|a| a.to_string()),
            ];
            let held: i64 = tx
                .query_row(
                    "SELECT COUNT(*) FROM blocks WHERE user_id IS ?1 AND agent_id IS ?2",
                    params![owner[0], owner[1]],
                    |r| r.get(0),
                )
                .map_err(sql_err)?;
            let taken: Option<i64> = tx
                .query_row(
                    "SELECT 1 FROM blocks WHERE user_id IS ?1 AND agent_id IS ?2 AND label = ?3",
                    params![owner[0], owner[1], block.label.as_str()],
                    |r| r.get(0),
                )
                .optional()
                .map_err(sql_err)?;
            if taken.is_some() {
                return Err(label_taken(&block.label));
            }
            if held >= i64::from(limits.max_per_scope) {
                return Err(too_many_blocks(limits));
            }
            insert_block(tx, &block)?;
            insert_event(tx, &block.owner, &event)?;
            Ok(block)
        })
    }

    fn block(&self, scope: &Scope, label: &BlockLabel) -> Result<Option<MemoryBlock>> {
        self.read(|c| find(c, scope, label))
    }

    fn list_blocks(&self, query: &BlockQuery) -> Result<BlockPage> {
        let after = query.after()?;
        let (pred, mut p) = seen(&query.scope, false);
        let mut sql = format!("SELECT {COLS} FROM blocks b WHERE {pred}");
        if let Some((label, id)) = after {
            sql.push_str(" AND (b.label > ? OR (b.label = ? AND b.id > ?))");
            p.extend([
                Sql::Text(label.clone()),
                Sql::Text(label),
                Sql::Text(id.to_string()),
            ]);
        }
        sql.push_str(" ORDER BY b.label, b.id LIMIT ?");
        p.push(Sql::Integer(query.limit as i64 + 1));
        let mut blocks = self.read(|c| query_blocks(c, &sql, &p))?;
        let next_cursor = if blocks.len() > query.limit {
            blocks.truncate(query.limit);
            blocks.last().map(BlockQuery::cursor_after)
        } else {
            None
        };
        Ok(BlockPage {
            blocks,
            next_cursor,
        })
    }

    fn edit_block(&self, edit: &BlockEdit) -> Result<MemoryBlock> {
        self.block_write(|tx| {
            let current =
                find(tx, &edit.scope, &edit.label)?.ok_or_else(|| no_block(&edit.label))?;
            let (next, event) = edit.change.apply(
                &current,
                &edit.actor,
                edit.expected_version,
                edit.reason.as_deref(),
                chrono::Utc::now(),
            )?;
            tx.execute(
                "UPDATE blocks SET value = ?1, version = ?2, updated_at = ?3 WHERE id = ?4",
                params![
                    next.value,
                    next.version as i64,
                    next.updated_at.timestamp_millis(),
                    next.id.to_string()
                ],
            )
            .map_err(sql_err)?;
            if next.agents != current.agents {
                set_agents(tx, &next)?;
            }
            insert_event(tx, &next.owner, &event)?;
            Ok(next)
        })
    }

    fn delete_block(
        &self,
        scope: &Scope,
        label: &BlockLabel,
        actor: &BlockActor,
        reason: Option<&str>,
    ) -> Result<MemoryBlock> {
        self.block_write(|tx| {
            let current = find(tx, scope, label)?.ok_or_else(|| no_block(label))?;
            let event = delete_event(&current, actor, reason, chrono::Utc::now())?;
            tx.execute(
                "DELETE FROM block_agents WHERE block_id = ?1",
                [current.id.to_string()],
            )
            .map_err(sql_err)?;
            tx.execute("DELETE FROM blocks WHERE id = ?1", [current.id.to_string()])
                .map_err(sql_err)?;
            insert_event(tx, &current.owner, &event)?;
            Ok(current)
        })
    }

    fn block_history(
        &self,
        scope: &Scope,
        label: &BlockLabel,
        limit: usize,
    ) -> Result<Vec<BlockEvent>> {
        self.read(|c| {
            let b = find(c, scope, label)?.ok_or_else(|| no_block(label))?;
            events(c, b.id, limit)
        })
    }

    fn pinned_blocks(&self, scope: &Scope) -> Result<Vec<MemoryBlock>> {
        let (pred, p) = seen(scope, true);
        let sql = format!("SELECT {COLS} FROM blocks b WHERE {pred} ORDER BY b.label, b.id");
        self.read(|c| query_blocks(c, &sql, &p))
    }
}

/// Every block with its history, for an export.
pub(crate) fn export(
    conn: &Connection,
    sink: &mut dyn FnMut(ExportRecord) -> Result<()>,
) -> Result<()> {
    let all = query_blocks(
        conn,
        &format!("SELECT {COLS} FROM blocks b ORDER BY b.created_at, b.id"),
        &[],
    )?;
    for block in all {
        let history = events(conn, block.id, usize::MAX)?;
        sink(ExportRecord::Block(Box::new(BlockRecord {
            block,
            history,
        })))?;
    }
    Ok(())
}

/// Writes an exported block and its history unless the store holds its id; rows written.
pub(crate) fn import(tx: &Connection, r: &BlockRecord) -> Result<u64> {
    let b = &r.block;
    mnemo_core::blocks::block_owner(&b.owner)?;
    let known: Option<i64> = tx
        .query_row(
            "SELECT 1 FROM blocks WHERE id = ?1",
            [b.id.to_string()],
            |r| r.get(0),
        )
        .optional()
        .map_err(sql_err)?;
    if known.is_some() {
        return Ok(0);
    }
    if find(tx, &b.owner, &b.label)?.is_some_and(|x| x.owner == b.owner) {
        return Err(label_taken(&b.label));
    }
    insert_block(tx, b)?;
    for e in &r.history {
        insert_event(tx, &b.owner, e)?;
    }
    Ok(1)
}

/// A scope's erase: its blocks, their attachments and history go (rows deleted under
/// `secure_delete`, so no byte is left), and its agent is detached from its user's blocks.
/// A run owns no block: a scope with a run part erases none.
pub(crate) fn erase_scope(tx: &Connection, scope: &Scope) -> Result<u64> {
    if scope.run_id().is_some() {
        return Ok(0);
    }
    let mut owned = vec!["1 = 1".to_string()];
    let mut p: Vec<Sql> = Vec::new();
    if let Some(u) = scope.user_id() {
        owned.push("user_id = ?".into());
        p.push(Sql::Text(u.to_string()));
    }
    if let Some(a) = scope.agent_id() {
        owned.push("agent_id = ?".into());
        p.push(Sql::Text(a.to_string()));
    }
    let owned = owned.join(" AND ");
    let run = |sql: String, p: &[Sql]| {
        tx.execute(&sql, params_from_iter(p.iter()))
            .map_err(sql_err)
    };
    run(format!("DELETE FROM block_history WHERE {owned}"), &p)?;
    run(
        format!("DELETE FROM block_agents WHERE block_id IN (SELECT id FROM blocks WHERE {owned})"),
        &p,
    )?;
    let n = run(format!("DELETE FROM blocks WHERE {owned}"), &p)?;
    if let Some(a) = scope.agent_id() {
        let mut q = vec![Sql::Text(a.to_string())];
        let users = match scope.user_id() {
            Some(u) => {
                q.push(Sql::Text(u.to_string()));
                " AND block_id IN (SELECT id FROM blocks WHERE user_id = ?)"
            }
            None => "",
        };
        run(
            format!("DELETE FROM block_agents WHERE agent_id = ?{users}"),
            &q,
        )?;
    }
    Ok(n as u64)
}
