//! What updates and deletes carry: a memory's patch and the values it writes ([`Patched`]), the
//! checked lists of [`RecordWrites::update_many`] and [`RecordWrites::delete_many`], and what
//! [`RecordWrites::delete_all`] deletes.

use super::*;

/// A change to one memory. `None` leaves a field as it is.
#[derive(Debug, Clone, Default)]
pub struct MemoryPatch {
    pub text: Option<String>,
    pub index_text: Option<String>,
    /// Required when `text` changes: the new text's vector.
    pub vector: Option<Vec<f32>>,
    /// Replaces the metadata (identity keys already stripped).
    pub metadata: Option<Metadata>,
    pub expires_at: Option<Option<Timestamp>>,
}

impl MemoryPatch {
    /// What every backend checks before applying a patch, without reading the store: a new
    /// text is not blank.
    pub fn validate(&self) -> Result<()> {
        if self.text.as_deref().is_some_and(|t| t.trim().is_empty()) {
            return Err(crate::Error::invalid("text", "must not be empty"));
        }
        Ok(())
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeleteMode {
    /// Mark deleted, keep the text for audit, drop from indexes.
    Soft,
    /// Remove the record and its index entries; history rows remain.
    Hard,
}

/// A patch applied to the memory it changes: the values an update writes.
#[derive(Debug, Clone)]
pub struct Patched<'a> {
    pub text: String,
    pub metadata: Metadata,
    pub expires_at: Option<Timestamp>,
    /// Whether the lexical entry and vector change: a new text or a new index text.
    pub text_changed: bool,
    /// The new index text, when the patch sets one.
    pub index_text: Option<&'a str>,
    patch: &'a MemoryPatch,
}

impl MemoryPatch {
    /// The patch applied to `old`: a field the patch leaves `None` keeps `old`'s value.
    pub fn applied_to(&self, old: &Memory) -> Patched<'_> {
        let text = self.text.clone().unwrap_or_else(|| old.text.clone());
        let text_changed = text != old.text || self.index_text.is_some();
        Patched {
            metadata: self
                .metadata
                .clone()
                .unwrap_or_else(|| old.metadata.clone()),
            expires_at: self.expires_at.unwrap_or(old.expires_at),
            text,
            text_changed,
            index_text: self.index_text.as_deref(),
            patch: self,
        }
    }
}

impl Patched<'_> {
    /// The new vector when the text changed (checked against the store's dimension, asked of
    /// `dim` only then); `None` when the old one stays.
    pub fn vector(&self, dim: impl FnOnce() -> Result<usize>) -> Result<Option<&[f32]>> {
        if !self.text_changed {
            return Ok(None);
        }
        let dim = dim()?;
        let v = self.patch.vector.as_deref().ok_or_else(|| {
            crate::Error::invalid("vector", "a changed text needs its new vector")
        })?;
        check_vector("vector", v, dim)?;
        Ok(Some(v))
    }
}

/// What [`RecordWrites::delete_all`] deletes in `scope`, as the records of a candidate query:
/// every active memory of (or under) the scope, expired or not, of any kind (it has no filter,
/// and no limit).
pub fn delete_all_query(scope: &Scope) -> CandidateQuery<'_> {
    CandidateQuery {
        scope,
        kinds: None,
        filter: None,
        read: ReadOptions {
            include_expired: true,
            ..ReadOptions::default()
        },
        limit: usize::MAX,
    }
}

/// The updates of one [`RecordWrites::update_many`], in order, each patch checked when they
/// are made ([`MemoryPatch::validate`]): a backend never reads anything for a batch that cannot
/// apply.
#[derive(Debug, Clone)]
pub struct Updates {
    items: Vec<(Scope, MemoryId, MemoryPatch)>,
}

impl Updates {
    /// The updates `items` (the memory of each scope and id, and its patch), or the error of
    /// the first bad patch.
    pub fn new(items: Vec<(Scope, MemoryId, MemoryPatch)>) -> Result<Self> {
        for (_, _, patch) in &items {
            patch.validate()?;
        }
        Ok(Self { items })
    }

    pub fn items(&self) -> &[(Scope, MemoryId, MemoryPatch)] {
        &self.items
    }

    /// The ids the updates change, in order.
    pub fn ids(&self) -> impl Iterator<Item = MemoryId> + '_ {
        self.items.iter().map(|(_, id, _)| *id)
    }
}

/// The deletes of one [`RecordWrites::delete_many`]: the memory of each scope and id, all
/// deleted the same way.
#[derive(Debug, Clone)]
pub struct Deletes {
    pub items: Vec<(Scope, MemoryId)>,
    pub mode: DeleteMode,
}

impl Deletes {
    /// The ids the deletes remove, in order.
    pub fn ids(&self) -> impl Iterator<Item = MemoryId> + '_ {
        self.items.iter().map(|(_, id)| *id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::fixtures::memory;

    #[test]
    fn a_patch_keeps_what_it_leaves_out_and_a_new_text_needs_its_vector() {
        let old = memory(MemoryKind::Fact, "Ann lives in Oslo");
        let none = MemoryPatch::default();
        let keep = none.applied_to(&old);
        assert_eq!(
            (keep.text.as_str(), keep.text_changed),
            ("Ann lives in Oslo", false)
        );
        assert_eq!(keep.vector(|| unreachable!()).unwrap(), None);
        let patch = MemoryPatch {
            text: Some("Ann lives in Bergen".into()),
            ..MemoryPatch::default()
        };
        let changed = patch.applied_to(&old);
        assert!(changed.text_changed);
        let e = changed.vector(|| Ok(2)).unwrap_err();
        assert!(
            e.to_string()
                .contains("a changed text needs its new vector"),
            "{e}"
        );
        let patch = MemoryPatch {
            index_text: Some("context".into()),
            vector: Some(vec![0.5, 0.5]),
            ..MemoryPatch::default()
        };
        let reindexed = patch.applied_to(&old);
        assert!(reindexed.text_changed);
        assert_eq!(
            reindexed.vector(|| Ok(2)).unwrap(),
            Some(&[0.5f32, 0.5][..])
        );
        assert!(reindexed.vector(|| Ok(3)).is_err());
    }

    #[test]
    fn updates_and_scopes_are_checked_before_anything_is_read() {
        let s = Scope::user("ann").unwrap();
        let blank = MemoryPatch {
            text: Some(" ".into()),
            ..MemoryPatch::default()
        };
        assert!(Updates::new(vec![(s.clone(), MemoryId::new(), blank)]).is_err());
        assert!(Updates::new(vec![(s.clone(), MemoryId::new(), MemoryPatch::default())]).is_ok());
        let q = HistoryQuery::new(&s, MemoryId::new(), ReadOptions::default());
        let e = q.found(Vec::new()).unwrap_err();
        assert_eq!(e.kind(), crate::ErrorKind::NotFound);
        assert!(q.memory_read().include_inactive && !q.memory_read().include_expired);
        let all = delete_all_query(&s);
        assert!(all.read.include_expired && !all.read.include_inactive && all.read.as_of.is_none());
        assert!(all.kinds.is_none() && all.filter.is_none());
    }
}
