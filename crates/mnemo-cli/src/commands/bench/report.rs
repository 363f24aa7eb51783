//! The end of every bench workload: the keys each report ends with, the store closed (and
//! removed when temporary), the report printed.

use crate::io::outln;
use mnemo::Memory;
use std::time::Instant;

/// The `p` quantile (0 to 1) of ascending `sorted` (0 when empty).
pub(super) fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let idx = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[idx.min(sorted.len() - 1)]
}

fn rss_mb(field: &str) -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines().find(|l| l.starts_with(field)).and_then(|l| {
                l.split_whitespace()
                    .nth(1)
                    .and_then(|v| v.parse::<f64>().ok())
            })
        })
        .map_or(0.0, |kb| kb / 1024.0)
}

/// Adds the keys every workload ends with (`rss_mb`, `peak_rss_mb`, `file_mb`, `wall_s`), closes
/// the store, removes it when it was temporary, and prints the report.
pub(super) fn finish(
    mut report: serde_json::Value,
    memory: Memory,
    file_bytes: u64,
    started: Instant,
    temporary: Option<&std::path::Path>,
    json: bool,
) -> anyhow::Result<()> {
    if let Some(map) = report.as_object_mut() {
        map.insert("rss_mb".into(), rss_mb("VmRSS:").into());
        map.insert("peak_rss_mb".into(), rss_mb("VmHWM:").into());
        map.insert(
            "file_mb".into(),
            (file_bytes as f64 / (1024.0 * 1024.0)).into(),
        );
        map.insert("wall_s".into(), started.elapsed().as_secs_f64().into());
    }
    drop(memory);
    if let Some(dir) = temporary {
        let _ = std::fs::remove_dir_all(dir);
    }
    if json {
        outln!("{report}");
    } else {
        outln!("{}", serde_json::to_string_pretty(&report)?);
    }
    Ok(())
}
