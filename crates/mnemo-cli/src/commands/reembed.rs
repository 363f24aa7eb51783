//! `mnemo reembed`: moves a store to the configured embedder through
//! [`mnemo::reembed_store`] (the embedded file by copy and swap, a PostgreSQL database in place,
//! in one transaction) and reports what it did.

use crate::io::outln;
use crate::io::print_json;
use mnemo::{MemoryConfig, StoreConfig};
use mnemo_core::{Binding, CachedEmbedder, Embedder, Error, Rebind};
use std::sync::Arc;

async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, Error> + Send + 'static,
) -> Result<T, Error> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| Error::internal(format!("blocking task failed: {e}")))?
}

pub(super) async fn run(cfg: MemoryConfig, batch_size: usize, json: bool) -> anyhow::Result<()> {
    let started = std::time::Instant::now();
    let location = cfg.store_config();
    if let StoreConfig::Embedded { path } = &location {
        // Before the embedder is loaded: a missing store is the first thing to say.
        if !path.is_file() {
            return Err(Error::not_found("store", path.display()).into());
        }
    }
    // The new embedder (an endpoint is probed here), cached like the facade's.
    let (embedder_cfg, cache) = (cfg.embedder.clone(), cfg.embedding_cache);
    let embedder = blocking(move || {
        Ok(Arc::new(CachedEmbedder::new(
            mnemo_models::load_embedder(&embedder_cfg)?,
            cache,
        )) as Arc<dyn Embedder>)
    })
    .await?;
    let (new_model, new_dim) = (embedder.model_id().to_string(), embedder.dimension());
    let bar = indicatif::ProgressBar::hidden();
    bar.set_style(
        indicatif::ProgressStyle::with_template(
            "{bar:40} {pos}/{len} memories  {per_sec}  eta {eta}",
        )
        .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
    );
    let rebind = Rebind {
        to: Binding::new(new_model.clone(), new_dim)?,
        batch: batch_size.max(1),
    };
    let (loc, progress) = (location.clone(), bar.clone());
    let done = blocking(move || {
        mnemo::reembed_store(
            &loc,
            &rebind,
            &mut |total| {
                progress.set_length(total);
                progress.set_draw_target(indicatif::ProgressDrawTarget::stderr());
            },
            &mut |texts| {
                let v = embedder.embed(texts)?;
                progress.inc(texts.len() as u64);
                Ok(v)
            },
        )
    })
    .await;
    bar.finish_and_clear();
    let done = done?;
    let (after, store) = (&done.after, location.describe());
    let summary = serde_json::json!({"reembedded": {
        "store": store, "swapped": done.swapped,
        "memories": after.memories, "messages": after.messages,
        "vectors": if done.swapped { after.vectors } else { done.written },
        "from": {"model": done.old_stats.embedding_model, "dimension": done.old_stats.dimension},
        "to": {"model": new_model, "dimension": new_dim},
        "seconds": started.elapsed().as_secs_f64(),
    }});
    if json {
        print_json(&summary)?;
        return Ok(());
    }
    let what = if done.swapped {
        after.memories
    } else {
        done.written
    };
    outln!(
        "re-embedded {what} memories ({} messages) with {new_model} ({new_dim} dimensions)",
        after.messages
    );
    if done.swapped {
        outln!("store: {store} (a re-embedded copy swapped in; no backup of the old file is kept)");
    } else {
        outln!("store: {store} (in place, one transaction)");
    }
    Ok(())
}
