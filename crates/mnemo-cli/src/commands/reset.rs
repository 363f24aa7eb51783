//! `mnemo reset --confirm reset`: everything in the store deleted.

use crate::io::{outln, print_json};
use mnemo::Memory;

pub(super) async fn run(
    memory: &Memory,
    confirm: Option<String>,
    json: bool,
) -> anyhow::Result<()> {
    memory.reset(confirm.as_deref().unwrap_or("")).await?;
    if json {
        print_json(&serde_json::json!({"reset": true}))?;
    } else {
        outln!("store reset");
    }
    Ok(())
}
