//! `relations()` and `graph()`: the entity graph read through the facade (`Memory::relations`,
//! `Memory::neighbourhood`), so scope, the as-of view and the depth check are the library's.

use crate::convert::{to_value, Parts};
use crate::errors::Failure;
use mnemo::Memory;
use serde_json::{json, Value};

/// What both reads take besides the entity's name.
pub(crate) struct GraphRead {
    pub as_of: Option<mnemo_core::Timestamp>,
    pub limit: usize,
}

/// The edges of the entities named `entity`: `{"results": [relation]}`.
pub(crate) async fn relations(
    mem: Memory,
    parts: Parts,
    entity: String,
    read: GraphRead,
) -> Result<Value, Failure> {
    let edges = mem
        .relations(parts.scope()?, entity, read.as_of, read.limit)
        .await?;
    Ok(json!({ "results": to_value(&edges)? }))
}

/// The neighbourhood of the entities named `entity` to `depth` hops:
/// `{"center", "nodes", "relations", "truncated"}`. A depth outside 1 to 3 is the facade's
/// invalid input (a depth past 255 reads as 255, refused the same way).
pub(crate) async fn graph(
    mem: Memory,
    parts: Parts,
    entity: String,
    depth: usize,
    read: GraphRead,
) -> Result<Value, Failure> {
    let depth = u8::try_from(depth).unwrap_or(u8::MAX);
    let n = mem
        .neighbourhood(parts.scope()?, entity, depth, read.as_of, read.limit)
        .await?;
    to_value(&n)
}
