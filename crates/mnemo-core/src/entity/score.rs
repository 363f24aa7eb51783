//! What an entity match is worth as a search candidate: the one definition every backend
//! scores entity candidates with, from counts it reads.

/// How much a memory matching some query names is worth as an entity candidate, in [0, 1]:
/// per query name, the most informative matching entity of the memory counts
/// `idf = ln(1 + (N − df + 0.5)/(df + 0.5))` (`df` the entity's linked memories, `N` the memories
/// the scope indexes); the sum over names is divided by `ln(1 + N)` and capped at 1. The one
/// definition every backend scores entity candidates with, from counts it reads.
///
/// `mentions[i]` is, for query name `i`, the link counts of the memory's entities that matched
/// it (empty when none did). `total` is `N`; callers pass at least the largest link count among
/// the query's matched entities, so no idf goes negative.
pub fn entity_score(mentions: &[Vec<u64>], total: u64) -> f32 {
    let total = total as f64;
    let idf = |d: f64| (1.0 + (total - d + 0.5) / (d + 0.5)).ln();
    let scale = (1.0 + total).ln().max(f64::MIN_POSITIVE);
    let sum: f64 = mentions
        .iter()
        .map(|ms| ms.iter().map(|&m| idf(m as f64)).fold(0.0, f64::max))
        .sum();
    (sum / scale).min(1.0) as f32
}
