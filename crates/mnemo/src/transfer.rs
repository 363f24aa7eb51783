//! Whole-store operations: reset, export, import.

use crate::Memory;
use mnemo_core::*;

impl Memory {
    /// Deletes everything in the store. `confirm` must be exactly `"reset"`.
    pub async fn reset(&self, confirm: &str) -> Result<()> {
        if confirm != "reset" {
            return Err(Error::invalid(
                "confirm",
                "reset deletes every memory; pass the confirmation \"reset\"",
            ));
        }
        self.with_store(|s| s.reset()).await?;
        // The reset store forgets its embedding model; a running engine keeps writing with the
        // one it has, so bind it again.
        if let Some(e) = self.inner.embedder.get().cloned() {
            self.with_store(move |s| s.bind_embedder(&Binding::new(e.model_id(), e.dimension())?))
                .await?;
        }
        Ok(())
    }

    /// Streams every memory and message as export records.
    pub async fn export(&self) -> Result<Vec<ExportRecord>> {
        self.with_store(|s| {
            let mut out = Vec::new();
            s.export(&mut |r| {
                out.push(r);
                Ok(())
            })?;
            Ok(out)
        })
        .await
    }

    /// Writes exported records back in one transaction, embedding the memories that need it.
    pub async fn import_records(&self, records: Vec<ExportRecord>) -> Result<u64> {
        mnemo_core::store::check_records(&records)?;
        // A memory is embedded from its index text when the export carries one (a turn's
        // context window), else from its text (or a note's enriched text); a page from its text.
        let index_texts: std::collections::HashMap<MemoryId, &str> = records
            .iter()
            .filter_map(|r| match r {
                ExportRecord::IndexText {
                    memory_id,
                    index_text,
                } => Some((*memory_id, index_text.as_str())),
                _ => None,
            })
            .collect();
        let texts: Vec<String> = records
            .iter()
            .filter_map(|r| match r {
                ExportRecord::Memory(m) if m.state != MemoryState::Deleted => {
                    Some(match (index_texts.get(&m.id), &m.note) {
                        (Some(t), None) => mnemo_core::text::collapse_repeated_lines(t),
                        (_, Some(n)) => mnemo_core::note::enriched_text(&m.text, n),
                        (None, None) => m.text.clone(),
                    })
                }
                ExportRecord::Page(p) => Some(p.text.clone()),
                _ => None,
            })
            .collect();
        let mut vectors = if texts.is_empty() {
            Vec::new()
        } else {
            self.embed(texts).await?
        }
        .into_iter();
        let paired: Vec<(ExportRecord, Option<Vec<f32>>)> = records
            .into_iter()
            .map(|r| {
                let v = match &r {
                    ExportRecord::Memory(m) if m.state != MemoryState::Deleted => vectors.next(),
                    ExportRecord::Page(_) => vectors.next(),
                    _ => None,
                };
                (r, v)
            })
            .collect();
        self.with_store(move |s| s.import(paired)).await
    }
}
