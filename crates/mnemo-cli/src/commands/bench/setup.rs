//! Where the synthetic bench builds its store: a new (or, with `--search-only`, a kept)
//! directory, and on PostgreSQL a throwaway or named schema; the flag combinations that make no
//! sense are refused before anything is opened.

use super::Options;
use mnemo::MemoryConfig;
use mnemo_core::Error;
use std::path::PathBuf;

/// The data directory of the bench's store: `--store-dir` checked against `--search-only`, or
/// a fresh temporary one (emptied first).
pub(super) fn store_dir(opts: &Options) -> anyhow::Result<PathBuf> {
    Ok(match &opts.store_dir {
        Some(dir) if opts.search_only && !dir.exists() => {
            return Err(Error::invalid(
                "store_dir",
                format!(
                    "{} does not exist; --search-only reopens a kept store",
                    dir.display()
                ),
            )
            .into())
        }
        Some(dir) if dir.exists() && !opts.search_only => {
            return Err(Error::invalid(
                "store_dir",
                format!("{} exists; give a new directory", dir.display()),
            )
            .into())
        }
        Some(dir) => dir.clone(),
        None => {
            let tmp = std::env::temp_dir().join(format!("mnemo-bench-{}", std::process::id()));
            if opts.store_dir.is_none() {
                let _ = std::fs::remove_dir_all(&tmp);
            }
            tmp
        }
    })
}

/// On PostgreSQL, points `cfg` at the bench's schema: the one `--schema` names (created unless
/// `--search-only`), else a fresh one dropped when the returned guard is. `None` on the
/// embedded store, after refusing the PostgreSQL-only flags.
pub(super) fn schema(
    cfg: &mut MemoryConfig,
    opts: &Options,
) -> anyhow::Result<Option<mnemo::ScratchSchema>> {
    Ok(match cfg.store_config() {
        mnemo::StoreConfig::Postgres { url, pool_size } => {
            if opts.store_dir.is_some() {
                return Err(Error::invalid(
                    "store_dir",
                    "keeps an embedded store; a PostgreSQL bench keeps its store with --schema",
                )
                .into());
            }
            let schema = match &opts.schema {
                Some(name) => mnemo::ScratchSchema::kept(&url, name, !opts.search_only)?,
                None if opts.search_only => {
                    return Err(Error::invalid(
                        "search_only",
                        "on PostgreSQL reopens the store a previous run kept with --schema",
                    )
                    .into())
                }
                None => mnemo::ScratchSchema::create(&url, "mnemo_bench")?,
            };
            cfg.store = Some(mnemo::StoreConfig::Postgres {
                url: schema.url(),
                pool_size,
            });
            Some(schema)
        }
        mnemo::StoreConfig::Embedded { .. } | mnemo::StoreConfig::InMemory => {
            if opts.schema.is_some() {
                return Err(Error::invalid(
                    "schema",
                    "names a PostgreSQL schema; give --store postgres://… (or --store-dir)",
                )
                .into());
            }
            if opts.search_only && opts.store_dir.is_none() {
                return Err(Error::invalid(
                    "search_only",
                    "reopens the store a previous run kept with --store-dir",
                )
                .into());
            }
            None
        }
    })
}
