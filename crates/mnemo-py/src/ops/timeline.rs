//! `timeline()`: a scope's memories in the order their events happened, each with its event
//! time and the turn it was said in (the facade's `Memory::timeline`).

use crate::convert::{to_value, Parts};
use crate::errors::Failure;
use mnemo::{Memory, TimelineRequest};
use serde_json::Value;

/// One page as the Python call asks for it (`start`/`end` bound the events).
pub(crate) struct Page {
    pub from: Option<mnemo_core::Timestamp>,
    pub to: Option<mnemo_core::Timestamp>,
    pub limit: usize,
    pub cursor: Option<String>,
}

pub(crate) async fn timeline(mem: Memory, parts: Parts, page: Page) -> Result<Value, Failure> {
    let req = TimelineRequest {
        scope: parts.scope()?,
        from: page.from,
        to: page.to,
        kinds: None,
        limit: page.limit,
        cursor: page.cursor,
    };
    to_value(&mem.timeline(req).await?)
}
