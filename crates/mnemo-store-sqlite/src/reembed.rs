//! Re-embedding the embedded store by copy and swap ([`reembed_file`]).
//!
//! The store is copied whole (`VACUUM INTO <db>.reembed`: records, history, links, entities,
//! messages, idempotency keys), then every vector of the copy is replaced in one transaction
//! with the new model's ([`Admin::rebind_embedder`], which embeds each memory from the same
//! text as before, conversation context included). When the counts and indexes of the copy
//! check out, the copy replaces the store in one rename. Until that rename the original is
//! untouched; a failure removes the copy.
//!
//! No backup of the old file is kept: a file outside the store is outside erasure's reach, and
//! an erase that returned must leave no file holding the text (a backup written before it
//! would). Going back is re-embedding with the old model, or a copy the operator made first.
//!
//! A store is more than one file: SQLite's `-wal` / `-shm` and the saved vector index (`.hnsw`,
//! `.hnsw.json`, `.hnsw.f16`, named by `SIDECARS` in `ann.rs`). Both stores are closed by
//! a handle that only ever used the writer connection, so SQLite checkpoints and deletes the
//! WAL; a WAL that survives means another process has the store open, and the swap is
//! refused. The old index files are removed before the rename, so a graph of the old vectors
//! can never load beside the new file.

use crate::SqliteStore;
use mnemo_core::{Admin, EmbedBatch, Error, IntegrityReport, Rebind, Result, StoreStats};
use std::path::{Path, PathBuf};

/// SQLite's companions of a database file in WAL mode.
const WAL_FILES: [&str; 2] = ["-wal", "-shm"];
/// The saved vector index beside a store file.
const INDEX_FILES: [&str; 3] = crate::ann::SIDECARS;

/// What [`reembed_file`] did.
#[derive(Debug, Clone)]
pub struct FileReembed {
    /// The store's counts before, and the copy's after its vectors were replaced.
    pub before: IntegrityReport,
    pub after: IntegrityReport,
    /// The binding before (model and dimension).
    pub old_stats: StoreStats,
    /// Memories embedded again.
    pub written: u64,
}

fn with_suffix(db: &Path, suffix: &str) -> PathBuf {
    let mut name = db.as_os_str().to_owned();
    name.push(suffix);
    name.into()
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
                tracing::warn!(
                    "could not remove the unfinished copy {}: {e}",
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

fn io_err(what: &str, e: std::io::Error) -> Error {
    Error::internal(format!("{what}: {e}"))
}

/// Moves the store file `db` to the embedding model of `rebind` by copy and swap (see the
/// module docs). `start` is told how many vectors will be embedded, before the first batch goes
/// to `embed`. Blocking.
pub fn reembed_file(
    db: &Path,
    rebind: &Rebind,
    start: &mut dyn FnMut(u64),
    embed: &mut EmbedBatch<'_>,
) -> Result<FileReembed> {
    if !db.is_file() {
        return Err(Error::not_found("store", db.display()));
    }
    // 1. A complete copy beside it; the store is opened without an embedder, so a mismatched
    //    model does not stop this.
    let mut staging = Staging::new(db).map_err(|e| io_err("clearing an old copy", e))?;
    let (before, old_stats) = {
        let store = SqliteStore::open(db)?;
        let counts = (store.integrity()?, store.stats()?);
        store.copy_to(&staging.path)?;
        counts
    };
    // 2. Every vector of the copy replaced in one transaction.
    start(before.vectors);
    let (written, after) = {
        let store = SqliteStore::open(&staging.path)?;
        let n = store.rebind_embedder(rebind, embed)?;
        (n, store.integrity()?)
    };
    // 3. The copy must hold what the original held, with agreeing indexes.
    check_copy(&before, &after, written, before.vectors)?;
    // 4. Close both for good, then swap.
    settle(&staging.path)?;
    let now = settle(db)?;
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
        });
    }
    swap(db, &staging.path).map_err(|e| {
        Error::internal(format!(
            "swapping {} and {} failed ({e}); the old store is kept at its own name (its saved index is rebuilt at the next open)",
            db.display(),
            staging.path.display()
        ))
    })?;
    staging.swapped = true;
    Ok(FileReembed {
        before,
        after,
        old_stats,
        written,
    })
}

fn check_copy(
    before: &IntegrityReport,
    after: &IntegrityReport,
    written: u64,
    total: u64,
) -> Result<()> {
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
fn settle(db: &Path) -> Result<IntegrityReport> {
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

fn rename_if_exists(from: &Path, to: &Path) -> std::io::Result<()> {
    match std::fs::rename(from, to) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        other => other,
    }
}

/// Puts the settled copy at `db` in one rename, the old file's saved index removed first.
/// `db` names a store at every instant: the old one until the rename, the copy after it.
fn swap(db: &Path, staging: &Path) -> std::io::Result<()> {
    // The old graph must not lie beside the new file; without one the store rebuilds it.
    for suffix in INDEX_FILES {
        match std::fs::remove_file(with_suffix(db, suffix)) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e),
            _ => {}
        }
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
    Ok(())
}
