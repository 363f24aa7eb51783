//! The layout Citus needs of tables distributed by `scope_key` (docs/postgres.md, "Scale-out
//! on Citus"), checked on the migrated schema and on the store's query strings, since no Citus
//! build is reachable here: every unique index of a distributed table carries `scope_key`;
//! every lookup of memories by key (`seq = ANY(…)`) names the query's scope predicate; every
//! statement that addresses a block by id, locks one or joins its attachments names the owner
//! key; and no path that a distributed table takes uses a per-node advisory lock.

use std::path::{Path, PathBuf};

/// Tables not distributed by `scope_key`, as docs/postgres.md lays them out: reference tables
/// (copied to every node) and tables distributed by a key of their own.
const NOT_BY_SCOPE: [&str; 4] = ["mnemo_meta", "api_keys", "jobs", "scope_gates"];

/// The one place an advisory lock may stay: schema changes (migrations, binding a model's
/// vector columns), which run once through the coordinator, never on a distributed table's
/// data path.
const DDL_FILES: [&str; 2] = ["schema.rs", "admin.rs"];

#[test]
fn every_unique_index_of_a_distributed_table_carries_its_distribution_column() {
    let (schema, url) = crate::fresh_schema("citus");
    drop(mnemo_store_postgres::PgStore::connect(&url, 1).expect("migrate"));
    let mut admin = crate::admin();
    let tables: Vec<String> = admin
        .query(
            "SELECT table_name::text FROM information_schema.tables \
             WHERE table_schema = $1 AND table_type = 'BASE TABLE'",
            &[&schema],
        )
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    let distributed: Vec<String> = admin
        .query(
            "SELECT table_name::text FROM information_schema.columns \
             WHERE table_schema = $1 AND column_name = 'scope_key'",
            &[&schema],
        )
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    for t in &tables {
        assert!(
            distributed.contains(t) || NOT_BY_SCOPE.contains(&t.as_str()),
            "table {t} has no scope_key and is not laid out as a reference table"
        );
    }
    let mut checked = 0;
    for r in admin
        .query(
            "SELECT tablename::text, indexname::text, indexdef FROM pg_indexes \
             WHERE schemaname = $1 AND indexdef LIKE 'CREATE UNIQUE%'",
            &[&schema],
        )
        .unwrap()
    {
        let (table, index, def): (String, String, String) = (r.get(0), r.get(1), r.get(2));
        if !distributed.contains(&table) {
            continue;
        }
        let columns = def.rsplit_once(" USING ").map_or(def.as_str(), |(_, c)| c);
        assert!(
            columns.contains("scope_key"),
            "unique index {index} of the distributed table {table} lacks scope_key: {def}"
        );
        checked += 1;
    }
    // Not vacuous: every distributed table's primary key is a unique index.
    assert!(
        checked >= distributed.len(),
        "{checked} unique indexes checked"
    );
    admin
        .batch_execute(&format!("DROP SCHEMA {schema} CASCADE"))
        .unwrap();
}

#[test]
fn lookups_by_key_name_their_scope_and_no_data_path_takes_an_advisory_lock() {
    let mut lookups = 0;
    let mut advisory = 0;
    for file in sources(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src")) {
        let text = std::fs::read_to_string(&file).unwrap();
        let name = file.file_name().unwrap().to_string_lossy().to_string();
        let code: String = text
            .lines()
            .filter(|l| !l.trim_start().starts_with("//"))
            .collect::<Vec<_>>()
            .join("\n");
        for (at, _) in code.match_indices("seq = ANY(") {
            // The function the lookup is built in, up to the lookup.
            let body = &code[code[..at].rfind("fn ").unwrap_or(0)..at];
            assert!(
                [
                    "predicate::scope(",
                    "predicate::candidate(",
                    "candidate_pred_into(",
                    "scope_key = "
                ]
                .iter()
                .any(|p| body.contains(p)),
                "{name}: a lookup by key without the scope predicate: {}",
                &code[at..(at + 60).min(code.len())]
            );
            lookups += 1;
        }
        for _ in code.matches("pg_advisory") {
            assert!(
                DDL_FILES.contains(&name.as_str()),
                "{name} takes an advisory lock (per node on Citus): use a row lock"
            );
            advisory += 1;
        }
    }
    // Not vacuous: the store has lookups by key, and schema changes keep their lock.
    assert!(lookups >= 3, "{lookups} lookups found");
    assert!(advisory >= 1, "{advisory} advisory locks found");
}

/// A store whose blocks were written before their layout (v10: no `scope_key`) gets every
/// row keyed by its owner on the next start: the blocks, their attachments and history read
/// back as before, and the tables' keys lead with `scope_key`. A replay of the migrations over
/// the laid-out tables changes nothing.
#[test]
fn blocks_written_before_the_layout_are_keyed_by_their_owner() {
    use mnemo_core::blocks::BlockActor;
    use mnemo_core::*;
    let (schema, url) = crate::fresh_schema("blocks_layout");
    let store = mnemo_store_postgres::PgStore::connect(&url, 1).expect("connect");
    let s = |u: Option<&str>, a: Option<&str>| Scope::from_parts(u, a, None).unwrap();
    let (ann, ann_bot, bot) = (
        s(Some("ann"), None),
        s(Some("ann"), Some("bot")),
        s(None, Some("bot")),
    );
    let label = |l: &str| BlockLabel::new(l).unwrap();
    let mut human = NewBlock::new(ann.clone(), label("human"), "Ann likes tea.");
    human.agents = vec![AgentId::new("bot").unwrap()];
    let limits = BlockLimits::default();
    store.create_block(&human, &limits).expect("user block");
    store
        .create_block(
            &NewBlock::new(ann_bot.clone(), label("task"), "Plan the trip."),
            &limits,
        )
        .expect("pair block");
    store
        .create_block(
            &NewBlock::new(bot.clone(), label("persona"), "A calm helper."),
            &limits,
        )
        .expect("agent block");
    store
        .edit_block(&BlockEdit {
            scope: ann.clone(),
            label: label("human"),
            change: BlockChange::Append {
                text: "Metric units.".into(),
            },
            expected_version: None,
            actor: BlockActor::Owner { id: None },
            reason: None,
        })
        .expect("edit");
    let before = (
        store.pinned_blocks(&ann_bot).expect("pinned"),
        store
            .block_history(&ann, &label("human"), 10)
            .expect("history"),
    );
    assert_eq!(before.0.len(), 2, "{:?}", before.0);
    drop(store);

    let mut admin = crate::admin();
    admin
        .batch_execute(&format!(
            "SET search_path = {schema}, public; \
             ALTER TABLE block_agents DROP COLUMN scope_key CASCADE; \
             ALTER TABLE block_history DROP COLUMN scope_key CASCADE; \
             ALTER TABLE blocks DROP COLUMN scope_key CASCADE; \
             UPDATE mnemo_meta SET value = '10' WHERE key = 'schema_version';"
        ))
        .expect("back to the v10 block tables");
    for replay in ["10", "7"] {
        admin
            .batch_execute(&format!(
                "UPDATE {schema}.mnemo_meta SET value = '{replay}' WHERE key = 'schema_version'"
            ))
            .expect("version");
        let store = mnemo_store_postgres::PgStore::connect(&url, 1).expect("migrate");
        let after = (
            store.pinned_blocks(&ann_bot).expect("pinned"),
            store
                .block_history(&ann, &label("human"), 10)
                .expect("history"),
        );
        assert_eq!(after, before, "after migrating from v{replay}");
        assert!(store
            .block(&bot, &label("persona"))
            .expect("read")
            .is_some());
        for table in ["blocks", "block_agents", "block_history"] {
            let keys: Vec<String> = admin
                .query(&format!("SELECT scope_key FROM {schema}.{table}"), &[])
                .expect("keys")
                .iter()
                .map(|r| r.get(0))
                .collect();
            // Attachments belong to the user's block; events to all three blocks.
            let owners = match table {
                "block_agents" => vec![ann.key()],
                _ => vec![ann.key(), ann_bot.key(), bot.key()],
            };
            assert!(
                !keys.is_empty() && keys.iter().all(|k| owners.contains(k)),
                "{table}: {keys:?}"
            );
            assert!(owners.iter().all(|o| keys.contains(o)), "{table}: {keys:?}");
            let pk: String = admin
                .query_one(
                    "SELECT pg_get_constraintdef(c.oid) FROM pg_constraint c \
                     JOIN pg_namespace n ON n.oid = c.connamespace \
                     WHERE n.nspname = $1 AND c.conname = $2",
                    &[&schema, &format!("{table}_pkey")],
                )
                .expect("primary key")
                .get(0);
            assert!(pk.starts_with("PRIMARY KEY (scope_key"), "{table}: {pk}");
        }
    }
    admin
        .batch_execute(&format!("DROP SCHEMA {schema} CASCADE"))
        .unwrap();
}

/// The block tables (issue 47) on Citus: a block, its attachments and its history share the
/// owner's `scope_key`, so the statements of the request path that address a block by id
/// (`id = $…`, `block_id = $…`), lock one (`FOR UPDATE`, refused across shards) or join the
/// attachments (`block_agents x`, a join Citus runs only on the distribution column) must name
/// it. Only the whole-store and fan-out paths of `blocks/transfer.rs` (export, import's check
/// by id) are exempt.
#[test]
fn block_statements_by_id_name_the_owner_key() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut checked = 0;
    for file in [src.join("blocks.rs"), src.join("blocks/transfer.rs")] {
        let text = std::fs::read_to_string(&file).unwrap();
        for (fun, literal) in string_literals(&text) {
            let by_id = ["id = $", "FOR UPDATE", "block_agents x"]
                .iter()
                .any(|m| literal.contains(m));
            if !by_id || (fun == "import" && literal == "SELECT 1 FROM blocks WHERE id = $1") {
                continue;
            }
            assert!(
                literal.contains("scope_key"),
                "{}: fn {fun}: a block statement without its owner key: {literal}",
                file.display()
            );
            checked += 1;
        }
    }
    // Not vacuous: lock, re-read, update, delete, attachments, history, and the joins.
    assert!(checked >= 8, "{checked} statements checked");
}

/// The string literals of Rust source (plain ones, with `\` line continuations folded), each
/// with the name of the function it is in.
fn string_literals(text: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut fun = String::new();
    let mut chars = text.char_indices().peekable();
    while let Some((at, c)) = chars.next() {
        if text[at..].starts_with("fn ") {
            fun = text[at + 3..]
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
        }
        if c == '/' && text[at..].starts_with("//") {
            while chars.next_if(|(_, c)| *c != '\n').is_some() {}
            continue;
        }
        if c == '\'' {
            // A char literal ('"', '\\'), or a lifetime: skip the quoted char either way.
            if let Some((_, '\\')) = chars.next() {
                chars.next();
            }
            continue;
        }
        if c != '"' {
            continue;
        }
        let mut lit = String::new();
        while let Some((_, c)) = chars.next() {
            match c {
                '"' => break,
                '\\' => match chars.next() {
                    Some((_, '\n')) => while chars.next_if(|(_, c)| c.is_whitespace()).is_some() {},
                    Some((_, c)) => lit.push(c),
                    None => {}
                },
                c => lit.push(c),
            }
        }
        out.push((fun.clone(), lit));
    }
    out
}

fn sources(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            out.extend(sources(&path));
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
    out
}
