//! Store-wide operations: the scopes a key may see, and the admin-only reset, export and
//! import.

use super::Service;
use crate::auth::Principal;
use crate::error::ApiResult;
use mnemo_core::{ExportRecord, Scope};

impl Service {
    /// The scopes owning visible memories that this key may see, with their counts.
    pub async fn owners(&self, p: &Principal) -> ApiResult<Vec<(Scope, u64)>> {
        self.run("owners", p, async {
            let all = self.memory.owners().await?;
            Ok(all.into_iter().filter(|(s, _)| p.may_see(s)).collect())
        })
        .await
    }

    pub async fn reset(&self, p: &Principal, confirm: &str) -> ApiResult<()> {
        p.require_admin("reset")?;
        self.run("reset", p, async { Ok(self.memory.reset(confirm).await?) })
            .await
    }

    pub async fn export(&self, p: &Principal) -> ApiResult<Vec<ExportRecord>> {
        p.require_admin("export")?;
        self.run("export", p, async { Ok(self.memory.export().await?) })
            .await
    }

    pub async fn import(&self, p: &Principal, records: Vec<ExportRecord>) -> ApiResult<u64> {
        p.require_admin("import")?;
        self.run("import", p, async {
            Ok(self.memory.import_records(records).await?)
        })
        .await
    }
}
