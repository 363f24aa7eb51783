//! What usage bookkeeping costs a search when its hits come from segments' pages: a store of
//! synthetic conversations (users × sessions × turns, raw adds, pages moving into segments),
//! then the same searches (query vector given) with usage tracking on and off, alternating per
//! query and which goes first. Prints JSON: p50/p95 of each, their ratio, and the segment visits
//! the tracked searches wrote. Timings are reported, never asserted.
//!
//! `cargo run -p mnemo --example usage_bench -- [USERS] [SESSIONS] [TURNS] [QUERIES]`

use mnemo::core::*;
use mnemo::{AddInput, AddRequest, Memory};
use mnemo_testkit::HashEmbedder;
use std::sync::Arc;
use std::time::Instant;

const WORDS: &[&str] = &[
    "garden", "tomato", "river", "violin", "harbour", "bicycle", "kitchen", "winter", "island",
    "museum", "coffee", "mountain", "library", "concert", "lantern", "orchard", "station",
    "meadow", "pottery", "market", "sailing", "chess", "poetry", "forest", "bakery", "festival",
];

/// A deterministic sentence for turn `i` of session `s` of user `u`.
fn sentence(u: usize, s: usize, i: usize) -> String {
    let mut x = (u * 7919 + s * 104_729 + i * 1_299_709) as u64 | 1;
    let mut words = Vec::new();
    for _ in 0..8 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        words.push(WORDS[(x % WORDS.len() as u64) as usize]);
    }
    format!("user {u} said {} in turn {i}", words.join(" "))
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> Result<()> {
    let arg = |i: usize, d: usize| {
        std::env::args()
            .nth(i)
            .and_then(|a| a.parse().ok())
            .unwrap_or(d)
    };
    let (users, sessions, turns, queries) = (arg(1, 8), arg(2, 6), arg(3, 24), arg(4, 400));
    let dir = tempfile::tempdir().map_err(|e| Error::internal(e.to_string()))?;
    let store = mnemo::open_store(&mnemo::StoreConfig::embedded(dir.path()))?;
    let memory = Memory::from_parts(store, Arc::new(HashEmbedder), RankParams::default())?;
    for u in 0..users {
        let scope = Scope::user(&format!("u{u}"))?;
        for s in 0..sessions {
            for pair in (0..turns).collect::<Vec<_>>().chunks(2) {
                let mut req = AddRequest::text(scope.clone(), "");
                req.input = AddInput::Messages(
                    pair.iter()
                        .map(|&i| InputMessage {
                            role: if i % 2 == 0 {
                                Role::User
                            } else {
                                Role::Assistant
                            },
                            content: sentence(u, s, i),
                            name: None,
                        })
                        .collect(),
                );
                req.session_id = Some(format!("s{s}"));
                memory.add(req).await?;
            }
        }
    }
    memory.flush_usage().await?;
    let visits_before = total_visits(&memory, users)?;
    let (tracked, untracked) = (
        memory.clone().with_usage_tracking(true),
        memory.clone().with_usage_tracking(false),
    );
    let (mut on, mut off) = (Vec::new(), Vec::new());
    for q in 0..queries {
        let (u, s, i) = (q % users, (q / users) % sessions, (q * 5) % turns);
        let text = sentence(u, s, i);
        let words: Vec<&str> = text.split(' ').skip(3).take(4).collect();
        let query = words.join(" ");
        let scope = Scope::user(&format!("u{u}"))?;
        let vector = HashEmbedder::vector(&query);
        let mut runs = [(&tracked, &mut on), (&untracked, &mut off)];
        if q % 2 == 1 {
            runs.reverse();
        }
        for (m, out) in runs {
            let req = SearchRequest::new(scope.clone(), query.clone(), 10);
            let t = Instant::now();
            m.search_with_vector(req, vector.clone()).await?;
            out.push(t.elapsed().as_secs_f64() * 1e3);
        }
    }
    memory.flush_usage().await?;
    let visits_after = total_visits(&memory, users)?;
    on.sort_by(f64::total_cmp);
    off.sort_by(f64::total_cmp);
    let report = serde_json::json!({
        "users": users, "sessions_per_user": sessions, "turns_per_session": turns,
        "queries": queries,
        "segments": segment_count(&memory, users)?,
        "search_p50_ms_tracking_on": percentile(&on, 0.5),
        "search_p50_ms_tracking_off": percentile(&off, 0.5),
        "search_p95_ms_tracking_on": percentile(&on, 0.95),
        "search_p95_ms_tracking_off": percentile(&off, 0.95),
        "p50_ratio_on_over_off": percentile(&on, 0.5) / percentile(&off, 0.5),
        "segment_visits_written": visits_after - visits_before,
    });
    println!("{report:#}");
    Ok(())
}

fn total_visits(m: &Memory, users: usize) -> Result<u64> {
    let mut n = 0;
    for u in 0..users {
        let scope = Scope::user(&format!("u{u}"))?;
        n += m
            .store()
            .segments(&scope, false, true)?
            .iter()
            .map(|s| s.visits)
            .sum::<u64>();
    }
    Ok(n)
}

fn segment_count(m: &Memory, users: usize) -> Result<usize> {
    let mut n = 0;
    for u in 0..users {
        n += m
            .store()
            .segments(&Scope::user(&format!("u{u}"))?, false, true)?
            .len();
    }
    Ok(n)
}
