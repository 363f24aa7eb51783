//! `mnemo export [FILE]`: every record of the store as JSONL, the input of `mnemo import`.

use anyhow::Context;
use mnemo::Memory;
use std::io::Write;
use std::path::PathBuf;

pub(super) async fn run(memory: &Memory, file: Option<PathBuf>) -> anyhow::Result<()> {
    let records = memory.export().await?;
    let mut out: Box<dyn Write> = match &file {
        Some(p) => Box::new(std::io::BufWriter::new(
            std::fs::File::create(p).with_context(|| format!("creating {}", p.display()))?,
        )),
        None => Box::new(std::io::BufWriter::new(crate::io::Stdout)),
    };
    for r in &records {
        serde_json::to_writer(&mut out, r)?;
        out.write_all(b"\n")?;
    }
    out.flush()?;
    Ok(())
}
