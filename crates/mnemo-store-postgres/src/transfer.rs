// Stubs until this module is implemented (issue 14); remove this allow with them.
#![allow(unused_variables, unused_imports, dead_code)]
//! Export and import on PostgreSQL: every record, losslessly.

use crate::PgStore;
use mnemo_core::tier::*;
use mnemo_core::*;

impl PgStore {
    pub(crate) fn export_all(
        &self,
        sink: &mut dyn FnMut(ExportRecord) -> Result<()>,
    ) -> Result<()> {
        Err(crate::not_yet("export_all"))
    }

    pub(crate) fn import_all(&self, records: Vec<(ExportRecord, Option<Vec<f32>>)>) -> Result<u64> {
        Err(crate::not_yet("import_all"))
    }
}
