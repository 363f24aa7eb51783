//! `mnemo doctor`: versions, the store's counts and integrity, and whether the embedder loads;
//! a non-zero exit when either is unhealthy.

use crate::io::{outln, print_json};
use mnemo::Memory;
use mnemo_core::Error;

pub(super) async fn run(
    memory: &Memory,
    location: &mnemo::StoreConfig,
    json: bool,
) -> anyhow::Result<()> {
    // Store work is blocking (and the PostgreSQL driver may not run on an async worker).
    let store = memory.store().clone();
    let (stats, integrity) =
        tokio::task::spawn_blocking(move || Ok::<_, Error>((store.stats()?, store.integrity()?)))
            .await??;
    let embedder = memory.embedder().await;
    let (model, dim, model_error) = match &embedder {
        Ok(e) => (Some(e.model_id().to_string()), Some(e.dimension()), None),
        Err(err) => (None, None, Some(err.to_string())),
    };
    let report = serde_json::json!({
        "mnemo_version": env!("CARGO_PKG_VERSION"),
        "schema_version": stats.schema_version,
        "store": {"kind": location.kind(), "location": location.describe(),
                  "memories": stats.memories, "messages": stats.messages, "file_bytes": stats.file_bytes,
                  "embedding_model": stats.embedding_model, "dimension": stats.dimension,
                  "consistent": integrity.is_consistent(), "integrity": integrity},
        "embedder": {"model": model, "dimension": dim, "error": model_error},
    });
    let healthy = embedder.is_ok() && integrity.is_consistent();
    if json && healthy {
        print_json(&report)?;
    } else if json {
        // stdout carries only the error object; the full report goes to stderr.
        eprintln!("{report}");
    } else {
        outln!("{}", serde_json::to_string_pretty(&report)?);
    }
    if let Err(e) = embedder {
        return Err(e.into());
    }
    if !integrity.is_consistent() {
        return Err(Error::internal("store indexes disagree; see the integrity report").into());
    }
    Ok(())
}
