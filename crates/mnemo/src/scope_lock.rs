//! In-process turns for the hierarchy writes of one scope.
//!
//! An add plans its pages and segments from a snapshot of its scope and the store refuses the
//! write when another writer changed them meanwhile (`crate::add::tiers`). Every add of a busy
//! scope touches the same current segment, so writers of one scope racing optimistically mostly
//! refuse each other: with eight of them, a writer could lose every one of its tries. Inside
//! one process they therefore take turns, from snapshot to commit; only writers in different
//! processes (several servers on one shared store) still race, and a few of those fit the
//! retry budget.
//!
//! Each scope key has a turn of its own: a table entry that exists only while a writer holds or
//! waits for it, so memory follows the writers in flight, not the scopes ever written, and no
//! two scopes ever wait for each other (a tenant choosing its `agent_id` cannot pick one that
//! shares a victim's turn, as it could when turns were stripes picked by a hash). Several turns
//! are always taken in ascending key order, so two multi-scope batches cannot deadlock.

use std::collections::HashMap;
use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};

/// A scope's turn: whether it is taken, and how many writers hold or wait for it.
struct Turn {
    taken: bool,
    interested: usize,
}

static TABLE: Mutex<Option<HashMap<String, Turn>>> = Mutex::new(None);
static FREED: Condvar = Condvar::new();

fn table() -> MutexGuard<'static, Option<HashMap<String, Turn>>> {
    // A writer that panicked held nothing the next one relies on: the store is the truth.
    TABLE.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The turns of some scopes, given back when dropped.
#[must_use]
pub(crate) struct Turns(Vec<String>);

impl Turns {
    #[cfg(test)]
    fn len(&self) -> usize {
        self.0.len()
    }
}

impl Drop for Turns {
    fn drop(&mut self) {
        let mut guard = table();
        let map = guard.get_or_insert_with(HashMap::new);
        for key in self.0.drain(..) {
            if let Some(t) = map.get_mut(&key) {
                t.taken = false;
                t.interested -= 1;
                if t.interested == 0 {
                    map.remove(&key);
                }
            }
        }
        FREED.notify_all();
    }
}

/// Waits for the turn of every scope key given; the turns last as long as the guard.
pub(crate) fn take_turns<K: AsRef<str>>(keys: impl IntoIterator<Item = K>) -> Turns {
    let mut keys: Vec<String> = keys.into_iter().map(|k| k.as_ref().to_string()).collect();
    keys.sort_unstable();
    keys.dedup();
    let mut held = Turns(Vec::with_capacity(keys.len()));
    for key in keys {
        let mut guard = table();
        guard
            .get_or_insert_with(HashMap::new)
            .entry(key.clone())
            .or_insert(Turn {
                taken: false,
                interested: 0,
            })
            .interested += 1;
        loop {
            let t = guard
                .get_or_insert_with(HashMap::new)
                .get_mut(&key)
                .expect("an entry lives while a writer is interested in it");
            if !t.taken {
                t.taken = true;
                break;
            }
            guard = FREED.wait(guard).unwrap_or_else(PoisonError::into_inner);
        }
        drop(guard);
        held.0.push(key);
    }
    held
}

#[cfg(test)]
fn live_turns() -> usize {
    table().as_ref().map_or(0, HashMap::len)
}

/// Erase gates: a shared gate per scope part (`u=…`, `a=…`, `r=…`) for every add that takes
/// turns, an exclusive one for an erase. A memory an erase can reach has every part of the
/// erase's scope, so an add that could race it shares at least one of its gates, while adds of
/// other tenants (parts the erase does not name) never wait for it. Each call takes all its
/// gates at once (nothing is held while waiting), and a waiting erase keeps new adds of its
/// parts out, so it is not starved.
#[derive(Default)]
struct Gate {
    readers: usize,
    writer: bool,
    writers_waiting: usize,
}

static GATES: Mutex<Option<HashMap<String, Gate>>> = Mutex::new(None);
static GATE_FREED: Condvar = Condvar::new();

fn gates() -> MutexGuard<'static, Option<HashMap<String, Gate>>> {
    GATES.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The named parts of a scope key (`u=alice`, `a=x`, …); a key in another form is one part.
fn parts(key: &str) -> impl Iterator<Item = &str> {
    key.split('\u{1f}')
        .filter(|p| !p.is_empty() && !p.ends_with('='))
}

/// Gates held by one call, given back when dropped.
#[must_use]
pub(crate) struct Gates {
    parts: Vec<String>,
    exclusive: bool,
}

impl Drop for Gates {
    fn drop(&mut self) {
        let mut guard = gates();
        let map = guard.get_or_insert_with(HashMap::new);
        for p in self.parts.drain(..) {
            if let Some(g) = map.get_mut(&p) {
                if self.exclusive {
                    g.writer = false;
                } else {
                    g.readers -= 1;
                }
                if g.readers == 0 && !g.writer && g.writers_waiting == 0 {
                    map.remove(&p);
                }
            }
        }
        GATE_FREED.notify_all();
    }
}

fn take_gates(mut parts: Vec<String>, exclusive: bool) -> Gates {
    parts.sort_unstable();
    parts.dedup();
    let mut guard = gates();
    if exclusive {
        let map = guard.get_or_insert_with(HashMap::new);
        for p in &parts {
            map.entry(p.clone()).or_default().writers_waiting += 1;
        }
    }
    loop {
        let map = guard.get_or_insert_with(HashMap::new);
        let free = parts.iter().all(|p| {
            map.get(p).is_none_or(|g| {
                !g.writer
                    && (if exclusive {
                        g.readers == 0
                    } else {
                        g.writers_waiting == 0
                    })
            })
        });
        if free {
            for p in &parts {
                let g = map.entry(p.clone()).or_default();
                if exclusive {
                    g.writers_waiting -= 1;
                    g.writer = true;
                } else {
                    g.readers += 1;
                }
            }
            return Gates { parts, exclusive };
        }
        guard = GATE_FREED
            .wait(guard)
            .unwrap_or_else(PoisonError::into_inner);
    }
}

/// The shared erase gates of the scope keys an add takes turns for (see [`Gates`]); taken
/// before the turns themselves, so an add never waits for a gate while holding a turn.
pub(crate) fn take_add_gates<K: AsRef<str>>(keys: &[K]) -> Gates {
    let parts = keys
        .iter()
        .flat_map(|k| parts(k.as_ref()).map(String::from).collect::<Vec<_>>())
        .collect();
    take_gates(parts, false)
}

/// An erase's turn over `scope`: waits until no add that could hold text the erase removes is
/// between its window re-check and its commit, and keeps such adds out until dropped. Adds of
/// scopes that share no part with `scope` go on.
pub(crate) fn take_erase_turn(scope: &mnemo_core::Scope) -> Gates {
    take_gates(parts(&scope.key()).map(String::from).collect(), true)
}

/// The store's erase gate across processes (see [`mnemo_core::Erasure::erase_gate`]) over the
/// parts of the scope keys given: shared for an add, exclusive for an erase. Taken after this
/// process's own gates and turns, so a caller waits on the database only once no writer of its
/// own process is ahead of it; nothing of the database is held while waiting here.
pub(crate) fn take_store_gate<K: AsRef<str>>(
    store: &dyn mnemo_core::Store,
    keys: &[K],
    exclusive: bool,
) -> mnemo_core::Result<Option<mnemo_core::PlanTurn>> {
    let mut all: Vec<String> = keys
        .iter()
        .flat_map(|k| parts(k.as_ref()).map(String::from).collect::<Vec<_>>())
        .collect();
    if all.is_empty() {
        return Ok(None);
    }
    all.sort_unstable();
    all.dedup();
    store.erase_gate(&all, exclusive)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;
    use std::time::Duration;

    // The tests share the process-wide table: each uses keys of its own, and only one counts
    // the table's entries (the others' may come and go meanwhile).

    #[test]
    fn one_scope_waits_and_the_same_scope_twice_is_taken_once() {
        let held = take_turns(["t1:alice", "t1:alice"]);
        assert_eq!(held.len(), 1);
        let (tx, rx) = mpsc::channel();
        let waiter = std::thread::spawn(move || {
            let _turn = take_turns(["t1:alice"]);
            tx.send(()).unwrap();
        });
        assert!(rx.recv_timeout(Duration::from_millis(100)).is_err());
        drop(held);
        rx.recv_timeout(Duration::from_secs(10))
            .expect("the turn passes on");
        waiter.join().unwrap();
    }

    /// The probe's `agent_id x224` shared alice's stripe. Now no key a caller may choose waits
    /// for another's: while alice's turn is held, thousands of others are all taken.
    #[test]
    fn scopes_chosen_by_a_caller_never_wait_for_a_victims_turn() {
        let victim = "t2:user=alice";
        let _held = take_turns([victim]);
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for i in 0..5000 {
                let _t = take_turns([format!("t2:user=bob/agent=x{i}")]);
                let _u = take_turns([format!("t2:user=alice/agent=x{i}"), format!("t2:x{i}")]);
            }
            tx.send(()).unwrap();
        });
        // A guard against a hang: with stripes, one of these keys waited for alice forever.
        rx.recv_timeout(Duration::from_secs(120))
            .expect("another scope waited for alice's turn");
    }

    #[test]
    fn multi_scope_batches_in_any_order_do_not_deadlock_and_the_table_empties() {
        let workers: Vec<_> = (0..4)
            .map(|w| {
                std::thread::spawn(move || {
                    for i in 0..500 {
                        let mut keys = vec!["t3:a", "t3:b", "t3:c"];
                        keys.rotate_left((w + i) % 3);
                        let _t = take_turns(keys);
                    }
                })
            })
            .collect();
        for w in workers {
            w.join().unwrap();
        }
        let held = take_turns(["t3:a"]);
        drop(held);
        // Memory follows the writers in flight: an unused turn leaves no entry behind.
        assert!(
            !table()
                .as_ref()
                .is_some_and(|m| m.keys().any(|k| k.starts_with("t3:"))),
            "{} entries left",
            live_turns()
        );
    }

    #[test]
    fn an_erase_waits_for_adds_it_covers_and_not_for_other_tenants() {
        let alice = mnemo_core::Scope::user("t4-alice").unwrap();
        let alice_agent = mnemo_core::Scope::from_parts(Some("t4-alice"), Some("x"), None).unwrap();
        let add = take_add_gates(&[alice_agent.key()]);
        let (tx, rx) = mpsc::channel();
        let eraser = std::thread::spawn(move || {
            let _e = take_erase_turn(&alice);
            tx.send(()).unwrap();
        });
        assert!(
            rx.recv_timeout(Duration::from_millis(100)).is_err(),
            "the erase ran beside an add it covers"
        );
        // Another tenant's add is not held up by the waiting erase.
        let bob = mnemo_core::Scope::user("t4-bob").unwrap();
        drop(take_add_gates(&[bob.key()]));
        drop(add);
        rx.recv_timeout(Duration::from_secs(10))
            .expect("the erase runs once the add is done");
        eraser.join().unwrap();
        assert!(gates()
            .as_ref()
            .is_none_or(|m| !m.keys().any(|k| k.contains("t4-"))));
    }
}
