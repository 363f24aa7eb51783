// Stubs until this module is implemented (issue 14); remove this allow with them.
#![allow(unused_variables, unused_imports, dead_code)]
//! Erasing a memory on PostgreSQL: every copy of its text, in one transaction.

use crate::PgStore;
use mnemo_core::tier::*;
use mnemo_core::*;

impl PgStore {
    pub(crate) fn erase_memory(
        &self,
        scope: &Scope,
        id: MemoryId,
        sources: bool,
        ctx: &WriteContext,
    ) -> Result<EraseReport> {
        Err(crate::not_yet("erase_memory"))
    }
}
