//! The graph: the [`Graph`] capability (links between memories and their entities).

use super::*;

/// A linked memory found by [`Graph::linked`]: the memory, the link it was reached through and
/// the end of that link it was reached from.
#[derive(Debug, Clone)]
pub struct LinkedMemory {
    pub from: MemoryId,
    pub link: Link,
    /// The store-local key of `memory` (as in [`Candidate::key`]), so a search can score the
    /// linked memory against its query ([`Retrieval::vector_scores`]).
    pub key: i64,
    pub memory: Memory,
}

/// Links between memories and the entities memories mention.
pub trait Graph: Send + Sync {
    /// Links from or to a memory of the scope, any state.
    fn links(&self, scope: &Scope, id: MemoryId) -> Result<Vec<Link>>;
    /// Adds (or replaces: same ends and kind) links in one transaction, all or none. Each must
    /// pass [`Link::validate`] and join two memories that exist (any state) in one exact scope
    /// that `scope` covers; otherwise invalid input naming the field, and nothing is written.
    /// Required: only the backend can check both ends inside the transaction.
    fn add_links(&self, scope: &Scope, links: &[Link]) -> Result<()>;
    /// Removes the link `key.from → key.to` of `key.kind`; `Ok(false)` when there was none.
    /// `key.from` must be a memory of the scope (else not found). Required for the same reason
    /// as `add_links`.
    fn remove_link(&self, scope: &Scope, key: &LinkKey) -> Result<bool>;
    /// The memories linked (`walk.kinds`, either direction) to any of `walk.ids`, as seen by
    /// `walk.query`: its scope, kinds, filter and visibility apply to the linked memories
    /// exactly as to candidates. Strongest link first per `from`; `walk.query.limit` caps the
    /// answer; a walk that can find nothing ([`LinkedQuery::finds_nothing`]) finds nothing
    /// without a read. Required: the filter is the backend's own translation.
    fn linked(&self, walk: &LinkedQuery<'_>) -> Result<Vec<LinkedMemory>>;
    /// Entities linked to a memory of the scope.
    fn entities_of(&self, scope: &Scope, id: MemoryId) -> Result<Vec<Entity>>;
}

/// One link as [`Graph::remove_link`] names it: its ends and kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LinkKey {
    pub from: MemoryId,
    pub to: MemoryId,
    pub kind: LinkKind,
}

/// What [`Graph::linked`] walks: the links of `kinds` touching any of `ids`, to the memories
/// `query` sees.
#[derive(Debug, Clone, Copy)]
pub struct LinkedQuery<'a> {
    pub query: CandidateQuery<'a>,
    pub ids: &'a [MemoryId],
    pub kinds: &'a [LinkKind],
}

impl LinkedQuery<'_> {
    /// Whether the walk can find nothing at all: no start, no kind, or a limit of 0.
    pub fn finds_nothing(&self) -> bool {
        self.ids.is_empty() || self.kinds.is_empty() || self.query.limit == 0
    }
}

/// The refusal of a link whose two ends belong to different exact scopes.
fn scopes_differ() -> crate::Error {
    crate::Error::invalid(
        "to",
        "a link joins two memories of one scope; these belong to different scopes",
    )
}

/// What every backend checks before [`Graph::add_links`] reads anything: well-formed links
/// ([`Link::validate`]).
pub fn validate_links(links: &[Link]) -> Result<()> {
    links.iter().try_for_each(Link::validate)
}

/// Checks a link before it is written: [`Link::validate`], then both ends exist — in `pending`
/// (memories of the same batch, with their scope) or in the store (`owner`: the owning exact
/// scope and whether the memory is an erased tombstone) — under `scope`, are not erased, and
/// belong to one exact scope, which is returned (the link's owner). Invalid input names the
/// end at fault.
pub fn check_link(
    scope: &Scope,
    link: &Link,
    pending: &std::collections::HashMap<MemoryId, Scope>,
    mut owner: impl FnMut(MemoryId) -> Result<Option<(Scope, bool)>>,
) -> Result<Scope> {
    link.validate()?;
    let mut owners = Vec::with_capacity(2);
    for (field, id) in [("from", link.from), ("to", link.to)] {
        let found = match pending.get(&id) {
            Some(s) => Some((s.clone(), false)),
            None => owner(id)?,
        }
        .filter(|(o, _)| scope.covers(o));
        match found {
            // Checked after the scope: an erased memory the scope cannot see looks missing. A
            // link to or from a tombstone would store new text (its reason) on it.
            Some((_, true)) => {
                return Err(crate::Error::invalid(
                    field,
                    format!("memory {id} is erased; an erased memory takes no new links"),
                ))
            }
            Some((o, false)) => owners.push(o),
            None => {
                return Err(crate::Error::invalid(
                    field,
                    format!("no memory {id} in this scope"),
                ))
            }
        }
    }
    if owners[0] != owners[1] {
        return Err(scopes_differ());
    }
    Ok(owners.swap_remove(0))
}

/// Checks an imported link: [`Link::validate`], then both ends are stored memories (`owner`
/// gives a memory's owner, in whatever form the backend keeps it) of one owner, which is
/// returned. An export holds the links of erased memories as erase left them, so unlike
/// [`check_link`] an erased end is restored as it was.
pub fn check_imported_link<O: PartialEq>(
    link: &Link,
    mut owner: impl FnMut(MemoryId) -> Result<Option<O>>,
) -> Result<O> {
    link.validate()?;
    let from = owner(link.from)?.ok_or_else(|| {
        crate::Error::invalid("from", format!("no memory {} to link from", link.from))
    })?;
    let to = owner(link.to)?
        .ok_or_else(|| crate::Error::invalid("to", format!("no memory {} to link to", link.to)))?;
    if from != to {
        return Err(scopes_differ());
    }
    Ok(from)
}

/// The walk of [`Graph::linked`]: the links found for the start memories, each reached from
/// the end that is a start (twice for a link between two starts), then the memories at their
/// other ends as the query sees them.
#[derive(Debug, Clone)]
pub struct LinkWalk {
    /// (start it was reached from, link, other end), strongest link first as found.
    reached: Vec<(MemoryId, Link, MemoryId)>,
}

impl LinkWalk {
    /// The walk over `links` (those touching any of `ids`, strongest first).
    pub fn new(ids: &[MemoryId], links: Vec<Link>) -> Self {
        let wanted: std::collections::HashSet<MemoryId> = ids.iter().copied().collect();
        let mut reached = Vec::new();
        for l in links {
            if wanted.contains(&l.from) {
                reached.push((l.from, l.clone(), l.to));
            }
            if wanted.contains(&l.to) {
                reached.push((l.to, l.clone(), l.from));
            }
        }
        Self { reached }
    }

    /// The other ends to load, sorted and unique.
    pub fn others(&self) -> Vec<MemoryId> {
        let mut others: Vec<MemoryId> = self.reached.iter().map(|r| r.2).collect();
        others.sort();
        others.dedup();
        others
    }

    /// The linked memories: each reached end that `loaded` holds (what the query sees, by id,
    /// with its key), in the order found, at most `limit`.
    pub fn finish(
        self,
        loaded: &std::collections::HashMap<MemoryId, (i64, Memory)>,
        limit: usize,
    ) -> Vec<LinkedMemory> {
        self.reached
            .into_iter()
            .filter_map(|(from, link, other)| {
                loaded.get(&other).map(|(key, m)| LinkedMemory {
                    from,
                    link,
                    key: *key,
                    memory: m.clone(),
                })
            })
            .take(limit)
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::fixtures::memory;
    use std::collections::HashMap;

    fn link(from: MemoryId, to: MemoryId, strength: f32) -> Link {
        Link {
            from,
            to,
            kind: LinkKind::Related,
            strength,
            author: Author::Caller,
            created_at: chrono::Utc::now(),
            reason: None,
        }
    }

    #[test]
    fn a_link_joins_two_visible_unerased_memories_of_one_scope() {
        let ann = Scope::user("ann").unwrap();
        let bo = Scope::user("bo").unwrap();
        let (a, b, c, gone) = (
            MemoryId::new(),
            MemoryId::new(),
            MemoryId::new(),
            MemoryId::new(),
        );
        let pending = HashMap::from([(a, ann.clone())]);
        let stored = |id: MemoryId| -> Result<Option<(Scope, bool)>> {
            Ok(if id == b {
                Some((ann.clone(), false))
            } else if id == c {
                Some((bo.clone(), false))
            } else if id == gone {
                Some((ann.clone(), true))
            } else {
                None
            })
        };
        assert_eq!(
            check_link(&ann, &link(a, b, 0.5), &pending, stored).unwrap(),
            ann
        );
        let e = check_link(&ann, &link(a, gone, 0.5), &pending, stored).unwrap_err();
        assert!(e.to_string().contains("is erased"), "{e}");
        // Another owner's memory is invisible to `ann`: it looks missing.
        let e = check_link(&ann, &link(a, c, 0.5), &pending, stored).unwrap_err();
        assert!(e.to_string().contains("no memory"), "{e}");
        // `ann` covers both of her agents' scopes, but a link stays inside one of them.
        let (x, y) = (
            Scope::from_parts(Some("ann"), Some("x"), None).unwrap(),
            Scope::from_parts(Some("ann"), Some("y"), None).unwrap(),
        );
        let mixed = |id: MemoryId| Ok(Some((if id == b { x.clone() } else { y.clone() }, false)));
        let e = check_link(&ann, &link(b, c, 0.5), &HashMap::new(), mixed).unwrap_err();
        assert!(e.to_string().contains("different scopes"), "{e}");
    }

    #[test]
    fn an_imported_link_needs_both_ends_in_one_owner() {
        let (a, b) = (MemoryId::new(), MemoryId::new());
        let owners = |id: MemoryId| Ok(Some(if id == a { "k1" } else { "k2" }));
        let e = check_imported_link(&link(a, b, 0.5), owners).unwrap_err();
        assert!(e.to_string().contains("different scopes"), "{e}");
        let e =
            check_imported_link(&link(a, b, 0.5), |id| Ok((id == a).then_some("k1"))).unwrap_err();
        assert!(e.to_string().contains("to link to"), "{e}");
        assert_eq!(
            check_imported_link(&link(a, b, 0.5), |_| Ok(Some("k1"))).unwrap(),
            "k1"
        );
    }

    #[test]
    fn a_walk_reaches_each_other_end_once_per_direction() {
        let (a, b, c) = (MemoryId::new(), MemoryId::new(), MemoryId::new());
        let walk = LinkWalk::new(&[a, b], vec![link(a, b, 0.9), link(c, a, 0.5)]);
        let mut others = vec![a, b, c];
        others.sort();
        assert_eq!(walk.others(), others);
        let (mb, mc) = (memory(MemoryKind::Fact, "b"), memory(MemoryKind::Fact, "c"));
        let loaded = HashMap::from([(b, (2, mb)), (c, (3, mc))]);
        let found = walk.finish(&loaded, 10);
        let got: Vec<(MemoryId, i64)> = found.iter().map(|l| (l.from, l.key)).collect();
        assert_eq!(got, vec![(a, 2), (a, 3)]);
        let s = Scope::user("ann").unwrap();
        let q = CandidateQuery {
            scope: &s,
            kinds: None,
            filter: None,
            read: ReadOptions::default(),
            limit: 0,
        };
        let related = [LinkKind::Related];
        let none = LinkedQuery {
            query: q,
            ids: &[a],
            kinds: &related,
        };
        assert!(none.finds_nothing());
        let some = LinkedQuery {
            query: CandidateQuery { limit: 5, ..q },
            ..none
        };
        assert!(!some.finds_nothing());
        assert!(LinkedQuery { ids: &[], ..some }.finds_nothing());
        assert!(LinkedQuery { kinds: &[], ..some }.finds_nothing());
    }
}
