//! `mnemo reembed`: moves a store to the configured embedder.
//!
//! On PostgreSQL the vectors are replaced in place, in one transaction (`in_place`). On the
//! embedded store, the current store is copied whole (`VACUUM INTO mnemo.db.reembed`: records, history, links,
//! entities, messages, idempotency keys), then every vector of the copy is replaced in one
//! transaction with the new model's (`Store::rebind_embedder`, which embeds each memory from the
//! same text as before, conversation context included). When the counts and indexes of the copy
//! check out, the copy replaces `mnemo.db` in one rename and the old file stays as
//! `mnemo.db.bak-<UTC time>`. Until that rename the original is untouched; a failure removes
//! the copy.
//!
//! A store is more than one file: SQLite's `-wal` / `-shm` and the saved vector index (`.hnsw`,
//! `.hnsw.json`, named by `sidecar_paths` in mnemo-store-sqlite's `ann.rs`). Both stores are
//! closed by a handle that only ever used the writer connection, so SQLite checkpoints and
//! deletes the WAL; a WAL that survives means another process has the store open, and the swap
//! is refused. The old index files move to the backup's name before the rename, so a graph of
//! the old vectors can never load beside the new file.

use crate::io::outln;
use crate::io::print_json;
use mnemo::{MemoryConfig, StoreConfig};
use mnemo_core::Admin;
use mnemo_core::{CachedEmbedder, Embedder, Error, IntegrityReport};
use mnemo_store_sqlite::SqliteStore;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// SQLite's companions of a database file in WAL mode.
const WAL_FILES: [&str; 2] = ["-wal", "-shm"];
/// The saved vector index beside a store file (`ann.rs`, `sidecar_paths`).
const INDEX_FILES: [&str; 2] = [".hnsw", ".hnsw.json"];

fn with_suffix(db: &Path, suffix: &str) -> PathBuf {
    let mut name = db.as_os_str().to_owned();
    name.push(suffix);
    name.into()
}

async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, Error> + Send + 'static,
) -> Result<T, Error> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| Error::internal(format!("blocking task failed: {e}")))?
}

/// The copy under construction; removed on drop unless it was swapped in.
struct Staging {
    path: PathBuf,
    swapped: bool,
}

impl Staging {
    fn new(db: &Path) -> std::io::Result<Self> {
        let path = with_suffix(db, ".reembed");
        // Leftovers of an interrupted run are ours and incomplete.
        remove_store_files(&path)?;
        Ok(Self {
            path,
            swapped: false,
        })
    }
}

impl Drop for Staging {
    fn drop(&mut self) {
        if !self.swapped {
            if let Err(e) = remove_store_files(&self.path) {
                eprintln!(
                    "warning: could not remove the unfinished copy {}: {e}",
                    self.path.display()
                );
            }
        }
    }
}

fn remove_store_files(db: &Path) -> std::io::Result<()> {
    let all = std::iter::once("").chain(WAL_FILES).chain(INDEX_FILES);
    for suffix in all {
        match std::fs::remove_file(with_suffix(db, suffix)) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e),
            _ => {}
        }
    }
    Ok(())
}

pub async fn run(cfg: MemoryConfig, batch_size: usize, json: bool) -> anyhow::Result<()> {
    let started = std::time::Instant::now();
    let db = match cfg.store_config() {
        StoreConfig::Embedded { path } => path,
        shared @ StoreConfig::Postgres { .. } => {
            return in_place(cfg, &shared, batch_size, json, started).await
        }
    };
    if !db.is_file() {
        return Err(Error::not_found("store", db.display()).into());
    }

    // 1. A complete copy beside it (records, history, links, entities, messages, keys); the
    //    store is opened without an embedder, so a mismatched model does not stop this.
    let mut staging = Staging::new(&db)?;
    let (src, dst) = (db.clone(), staging.path.clone());
    let (before, old_stats) = blocking(move || {
        let store = SqliteStore::open(&src)?;
        let counts = (store.integrity()?, store.stats()?);
        store.copy_to(&dst)?;
        Ok(counts)
    })
    .await?;

    // 2. The new embedder (an endpoint is probed here), then every vector of the copy replaced
    //    in one transaction.
    let embedder = load_embedder(&cfg).await?;
    let (new_model, new_dim) = (embedder.model_id().to_string(), embedder.dimension());
    let bar = indicatif::ProgressBar::new(before.vectors);
    bar.set_style(
        indicatif::ProgressStyle::with_template(
            "{bar:40} {pos}/{len} memories  {per_sec}  eta {eta}",
        )
        .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
    );
    let (staging_path, model, progress) = (staging.path.clone(), new_model.clone(), bar.clone());
    let (written, after) = blocking(move || {
        let store = SqliteStore::open(&staging_path)?;
        let n = store.rebind_embedder(&model, new_dim, batch_size.max(1), &mut |texts| {
            let v = embedder.embed(texts)?;
            progress.inc(texts.len() as u64);
            Ok(v)
        })?;
        Ok((n, store.integrity()?))
    })
    .await?;
    bar.finish_and_clear();
    let total = before.vectors;

    // 3. The copy must hold what the original held, with agreeing indexes.
    check_copy(&before, &after, written, total)?;

    // 4. Close both for good, then swap.
    let staging_path = staging.path.clone();
    blocking(move || settle(&staging_path).map(|_| ())).await?;
    let db2 = db.clone();
    let now = blocking(move || settle(&db2)).await?;
    if now.memories != before.memories || now.messages != before.messages {
        return Err(Error::Conflict {
            reason: format!(
                "{} changed while it was re-embedded ({} memories and {} messages, then {} and {}); \
                 nothing was swapped: stop every other mnemo process and run `mnemo reembed` again",
                db.display(),
                before.memories,
                before.messages,
                now.memories,
                now.messages
            ),
        }
        .into());
    }
    let backup = swap(&db, &staging.path).map_err(|e| {
        Error::internal(format!(
            "swapping {} and {} failed ({e}); the old store is kept at its own name or the backup name",
            db.display(),
            staging.path.display()
        ))
    })?;
    staging.swapped = true;

    let summary = serde_json::json!({"reembedded": {
        "store": db, "backup": backup,
        "memories": after.memories, "messages": after.messages, "vectors": after.vectors,
        "from": {"model": old_stats.embedding_model, "dimension": old_stats.dimension},
        "to": {"model": new_model, "dimension": new_dim},
        "seconds": started.elapsed().as_secs_f64(),
    }});
    if json {
        print_json(&summary)?;
    } else {
        outln!(
            "re-embedded {} memories ({} messages) with {new_model} ({new_dim} dimensions)",
            after.memories,
            after.messages
        );
        outln!("store:  {}", db.display());
        outln!(
            "backup: {} (to go back, move it and its .hnsw files over the store's)",
            backup.display()
        );
    }
    Ok(())
}

/// The new embedder (an endpoint is probed here), cached like the facade's.
async fn load_embedder(cfg: &MemoryConfig) -> Result<Arc<dyn Embedder>, Error> {
    let (embedder_cfg, cache) = (cfg.embedder.clone(), cfg.embedding_cache);
    blocking(move || {
        Ok(Arc::new(CachedEmbedder::new(
            mnemo_models::load_embedder(&embedder_cfg)?,
            cache,
        )) as Arc<dyn Embedder>)
    })
    .await
}

/// A shared database cannot be copied aside and swapped: its vectors are replaced where they
/// are, in the one transaction of `Store::rebind_embedder`. Other processes keep reading the
/// old vectors until it commits; a failure rolls everything back and changes nothing.
async fn in_place(
    cfg: MemoryConfig,
    location: &StoreConfig,
    batch_size: usize,
    json: bool,
    started: std::time::Instant,
) -> anyhow::Result<()> {
    let embedder = load_embedder(&cfg).await?;
    let (new_model, new_dim) = (embedder.model_id().to_string(), embedder.dimension());
    let (loc, model) = (location.clone(), new_model.clone());
    let (old_stats, before, written, after) = blocking(move || {
        let store = mnemo::open_store(&loc)?;
        let (old_stats, before) = (store.stats()?, store.integrity()?);
        let n = store.rebind_embedder(&model, new_dim, batch_size.max(1), &mut |texts| {
            embedder.embed(texts)
        })?;
        Ok((old_stats, before, n, store.integrity()?))
    })
    .await?;
    if !after.is_consistent() || after.memories != before.memories {
        return Err(Error::internal(format!(
            "the store's indexes disagree after re-embedding (before {before:?}, after {after:?})"
        ))
        .into());
    }
    let summary = serde_json::json!({"reembedded": {
        "store": location.describe(), "backup": null,
        "memories": after.memories, "messages": after.messages, "vectors": written,
        "from": {"model": old_stats.embedding_model, "dimension": old_stats.dimension},
        "to": {"model": new_model, "dimension": new_dim},
        "seconds": started.elapsed().as_secs_f64(),
    }});
    if json {
        print_json(&summary)?;
    } else {
        outln!(
            "re-embedded {written} memories ({} messages) with {new_model} ({new_dim} dimensions)",
            after.messages
        );
        outln!("store: {} (in place, one transaction)", location.describe());
    }
    Ok(())
}

fn check_copy(
    before: &IntegrityReport,
    after: &IntegrityReport,
    written: u64,
    total: u64,
) -> Result<(), Error> {
    let same = after.memories == before.memories
        && after.messages == before.messages
        && after.indexed_memories == before.indexed_memories
        && written == total;
    if !same || !after.is_consistent() {
        return Err(Error::internal(format!(
            "the re-embedded copy does not match the original (original {before:?}, copy {after:?}, \
             {written} of {total} records written); the original is untouched and the copy removed"
        )));
    }
    Ok(())
}

/// Opens and closes `db` through the writer alone, which checkpoints and removes its WAL, and
/// returns its counts. A WAL file that survives belongs to another process holding it open.
fn settle(db: &Path) -> Result<IntegrityReport, Error> {
    let store = SqliteStore::open(db)?;
    let report = store.integrity()?;
    drop(store);
    for suffix in WAL_FILES {
        let companion = with_suffix(db, suffix);
        if companion.exists() {
            return Err(Error::Conflict {
                reason: format!(
                    "{} is open in another process ({} remains after closing it); \
                     stop it and run `mnemo reembed` again",
                    db.display(),
                    companion.display()
                ),
            });
        }
    }
    Ok(report)
}

/// `<db>.bak-<UTC time>`, with a counter when that name is taken.
fn backup_path(db: &Path) -> PathBuf {
    let stamp = chrono::Utc::now().format("%Y%m%dT%H%M%SZ");
    let base = with_suffix(db, &format!(".bak-{stamp}"));
    let mut candidate = base.clone();
    let mut n = 1;
    while candidate.exists() {
        n += 1;
        candidate = with_suffix(&base, &format!("-{n}"));
    }
    candidate
}

fn rename_if_exists(from: &Path, to: &Path) -> std::io::Result<()> {
    match std::fs::rename(from, to) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        other => other,
    }
}

/// Puts the settled copy at `db`, keeping the old file (and its saved index) under a backup name.
/// `db` names a store at every instant: the old one until the rename, the copy after it.
fn swap(db: &Path, staging: &Path) -> std::io::Result<PathBuf> {
    let backup = backup_path(db);
    // The old graph must not lie beside the new file; without one the store rebuilds it.
    for suffix in INDEX_FILES {
        rename_if_exists(&with_suffix(db, suffix), &with_suffix(&backup, suffix))?;
    }
    if std::fs::hard_link(db, &backup).is_err() {
        std::fs::copy(db, &backup)?;
    }
    std::fs::File::open(staging)?.sync_all()?;
    std::fs::rename(staging, db)?;
    for suffix in INDEX_FILES {
        rename_if_exists(&with_suffix(staging, suffix), &with_suffix(db, suffix))?;
    }
    if let Some(dir) = db.parent().filter(|d| !d.as_os_str().is_empty()) {
        // Make the renames durable; a directory that cannot be opened (not Unix) is no error.
        if let Ok(d) = std::fs::File::open(dir) {
            let _ = d.sync_all();
        }
    }
    Ok(backup)
}
