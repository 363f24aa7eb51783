//! Charts of a report, drawn as SVG here (and rasterised to PNG with resvg under the `png`
//! feature): recall@k curves of mnemo and the baselines, recall@10 per category, the search
//! latency histogram, and (with `--pack-budgets`) context-pack against cut-search recall per
//! token budget.
//!
//! PNG text needs a system font; without one the PNG still has its bars and lines, and the SVG
//! (which the viewer renders with its own fonts) is complete.

use crate::report::{category_name, Report};
use anyhow::{Context, Result};
use std::fmt::Write;
use std::path::{Path, PathBuf};

const W: f64 = 640.0;
const H: f64 = 400.0;
const LEFT: f64 = 60.0;
const RIGHT: f64 = 20.0;
const TOP: f64 = 64.0;
const BOTTOM: f64 = 50.0;
const COLORS: [&str; 3] = ["#1f6feb", "#d97706", "#059669"];

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// A plot area with a title, a y axis from 0 to `y_max` and its grid.
struct Canvas {
    svg: String,
    y_max: f64,
}

impl Canvas {
    fn new(title: &str, y_label: &str, y_max: f64) -> Self {
        let mut svg = String::new();
        let _ = write!(
            svg,
            r#"<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" viewBox="0 0 {W} {H}" font-family="DejaVu Sans, Arial, sans-serif" font-size="12"><rect width="100%" height="100%" fill="white"/><text x="{}" y="24" text-anchor="middle" font-size="15">{}</text>"#,
            W / 2.0,
            esc(title)
        );
        let c = Self { svg, y_max };
        let mut c = c;
        for i in 0..=5 {
            let v = y_max * i as f64 / 5.0;
            let y = c.y(v);
            let _ = write!(
                c.svg,
                r##"<line x1="{LEFT}" y1="{y:.1}" x2="{:.1}" y2="{y:.1}" stroke="#e5e7eb"/><text x="{:.1}" y="{:.1}" text-anchor="end">{}</text>"##,
                W - RIGHT,
                LEFT - 6.0,
                y + 4.0,
                fmt_tick(v)
            );
        }
        let _ = write!(
            c.svg,
            r##"<line x1="{LEFT}" y1="{TOP}" x2="{LEFT}" y2="{:.1}" stroke="#374151"/><line x1="{LEFT}" y1="{:.1}" x2="{:.1}" y2="{:.1}" stroke="#374151"/><text transform="translate(16 {:.1}) rotate(-90)" text-anchor="middle">{}</text>"##,
            H - BOTTOM,
            H - BOTTOM,
            W - RIGHT,
            H - BOTTOM,
            (TOP + H - BOTTOM) / 2.0,
            esc(y_label)
        );
        c
    }

    fn y(&self, v: f64) -> f64 {
        let span = H - TOP - BOTTOM;
        H - BOTTOM - span * (v / self.y_max).clamp(0.0, 1.0)
    }

    fn x_label(&mut self, x: f64, text: &str) {
        let _ = write!(
            self.svg,
            r#"<text x="{x:.1}" y="{:.1}" text-anchor="middle">{}</text>"#,
            H - BOTTOM + 18.0,
            esc(text)
        );
    }

    fn x_title(&mut self, text: &str) {
        let _ = write!(
            self.svg,
            r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">{}</text>"#,
            (LEFT + W - RIGHT) / 2.0,
            H - 10.0,
            esc(text)
        );
    }

    fn legend(&mut self, names: &[&str]) {
        // One row between the title and the plot, so it never covers data.
        for (i, n) in names.iter().enumerate() {
            let y = 48.0;
            let x = LEFT + 10.0 + 150.0 * i as f64;
            let _ = write!(
                self.svg,
                r#"<rect x="{x:.1}" y="{:.1}" width="12" height="12" fill="{}"/><text x="{:.1}" y="{:.1}">{}</text>"#,
                y - 10.0,
                COLORS[i % COLORS.len()],
                x + 18.0,
                y,
                esc(n)
            );
        }
    }

    fn finish(mut self) -> String {
        self.svg.push_str("</svg>");
        self.svg
    }
}

fn fmt_tick(v: f64) -> String {
    if v >= 10.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.1}")
    }
}

fn systems(report: &Report) -> Vec<(String, &std::collections::BTreeMap<String, f64>)> {
    let mut v = vec![("mnemo".to_string(), &report.retrieval)];
    for (name, b) in &report.baselines {
        v.push((format!("{name} alone"), &b.retrieval));
    }
    v
}

/// Recall@k for k = 1, 5, 10, 20, one line per system.
pub fn recall_curves(report: &Report) -> String {
    let mut c = Canvas::new("Evidence recall@k", "recall", 1.0);
    let ks = [1.0, 5.0, 10.0, 20.0];
    let x = |k: f64| LEFT + 20.0 + (W - LEFT - RIGHT - 40.0) * (k - 1.0) / 19.0;
    for k in ks {
        c.x_label(x(k), &format!("{k}"));
    }
    c.x_title("k (memories returned)");
    let sys = systems(report);
    for (i, (_, m)) in sys.iter().enumerate() {
        let pts: Vec<String> = ks
            .iter()
            .map(|k| {
                let v = m.get(&format!("recall@{k}")).copied().unwrap_or(0.0);
                format!("{:.1},{:.1}", x(*k), c.y(v))
            })
            .collect();
        let color = COLORS[i % COLORS.len()];
        let _ = write!(
            c.svg,
            r#"<polyline points="{}" fill="none" stroke="{color}" stroke-width="2.5"/>"#,
            pts.join(" ")
        );
        for p in &pts {
            let (px, py) = p.split_once(',').expect("formatted above");
            let _ = write!(
                c.svg,
                r#"<circle cx="{px}" cy="{py}" r="3.5" fill="{color}"/>"#
            );
        }
    }
    let names: Vec<&str> = sys.iter().map(|(n, _)| n.as_str()).collect();
    c.legend(&names);
    c.finish()
}

/// Reads one score of a budget's row.
type RowValue = fn(&crate::pack::BudgetRow) -> f64;

/// Evidence recall of context packs and of plain search cut to the same token budgets, one
/// line each over the budgets (`--pack-budgets`).
pub fn pack_curves(pack: &crate::pack::PackReport) -> String {
    let mut c = Canvas::new(
        "Evidence recall at a token budget: context pack vs plain search",
        "evidence recall",
        1.0,
    );
    let n = pack.budgets.len().max(1);
    let x = |i: usize| {
        if n == 1 {
            (LEFT + W - RIGHT) / 2.0
        } else {
            LEFT + 30.0 + (W - LEFT - RIGHT - 60.0) * i as f64 / (n - 1) as f64
        }
    };
    for (i, b) in pack.budgets.iter().enumerate() {
        c.x_label(x(i), &b.budget_tokens.to_string());
    }
    c.x_title(&format!("budget ({} tokens)", pack.tokenizer));
    let lines: [(&str, RowValue); 2] = [
        ("context pack", |b| b.pack_recall),
        ("plain search, cut", |b| b.search_recall),
    ];
    for (k, (_, get)) in lines.iter().enumerate() {
        let color = COLORS[k % COLORS.len()];
        let pts: Vec<(f64, f64)> = pack
            .budgets
            .iter()
            .enumerate()
            .map(|(i, b)| (x(i), c.y(get(b))))
            .collect();
        let joined: Vec<String> = pts.iter().map(|(a, b)| format!("{a:.1},{b:.1}")).collect();
        let _ = write!(
            c.svg,
            r#"<polyline points="{}" fill="none" stroke="{color}" stroke-width="2.5"/>"#,
            joined.join(" ")
        );
        for (px, py) in &pts {
            let _ = write!(
                c.svg,
                r#"<circle cx="{px:.1}" cy="{py:.1}" r="3.5" fill="{color}"/>"#
            );
        }
    }
    let names: Vec<&str> = lines.iter().map(|(n, _)| *n).collect();
    c.legend(&names);
    c.finish()
}

/// Recall@10 per category, grouped bars per system.
pub fn category_bars(report: &Report) -> String {
    let mut c = Canvas::new("Evidence recall@10 per category", "recall@10", 1.0);
    let cats: Vec<&String> = report.per_category.keys().collect();
    let sys: Vec<(String, Vec<f64>)> = {
        let mut v = vec![(
            "mnemo".to_string(),
            cats.iter()
                .map(|k| {
                    report.per_category[*k]
                        .get("recall@10")
                        .copied()
                        .unwrap_or(0.0)
                })
                .collect(),
        )];
        for (name, b) in &report.baselines {
            v.push((
                format!("{name} alone"),
                cats.iter()
                    .map(|k| {
                        b.per_category
                            .get(*k)
                            .and_then(|m| m.get("recall@10"))
                            .copied()
                            .unwrap_or(0.0)
                    })
                    .collect(),
            ));
        }
        v
    };
    let group = (W - LEFT - RIGHT) / cats.len().max(1) as f64;
    let bar_w = group * 0.8 / sys.len().max(1) as f64;
    for (ci, cat) in cats.iter().enumerate() {
        let gx = LEFT + group * ci as f64 + group * 0.1;
        for (si, (_, vals)) in sys.iter().enumerate() {
            let y = c.y(vals[ci]);
            let _ = write!(
                c.svg,
                r#"<rect x="{:.1}" y="{y:.1}" width="{:.1}" height="{:.1}" fill="{}"/>"#,
                gx + bar_w * si as f64,
                bar_w - 2.0,
                (H - BOTTOM - y).max(0.0),
                COLORS[si % COLORS.len()]
            );
        }
        c.x_label(
            LEFT + group * (ci as f64 + 0.5),
            &format!("{cat} {}", category_name(cat)),
        );
    }
    let names: Vec<&str> = sys.iter().map(|(n, _)| n.as_str()).collect();
    c.legend(&names);
    c.finish()
}

/// Histogram of search latencies (query embedding included), 20 bins up to the 99th
/// percentile; slower searches go in the last bin.
pub fn latency_histogram(samples_ms: &[f64]) -> String {
    let hi = crate::metrics::percentile(samples_ms, 0.99).max(1e-3);
    let bins = 20usize;
    let mut counts = vec![0usize; bins];
    for s in samples_ms {
        let i = ((s / hi) * bins as f64).floor() as usize;
        counts[i.min(bins - 1)] += 1;
    }
    let max = counts.iter().copied().max().unwrap_or(0).max(1) as f64;
    // A multiple of 5 keeps the five grid steps on whole counts.
    let y_max = ((max * 1.1) / 5.0).ceil() * 5.0;
    let mut c = Canvas::new("Search latency (with query embedding)", "searches", y_max);
    let bw = (W - LEFT - RIGHT) / bins as f64;
    for (i, n) in counts.iter().enumerate() {
        let y = c.y(*n as f64);
        let _ = write!(
            c.svg,
            r#"<rect x="{:.1}" y="{y:.1}" width="{:.1}" height="{:.1}" fill="{}"/>"#,
            LEFT + bw * i as f64 + 1.0,
            bw - 2.0,
            (H - BOTTOM - y).max(0.0),
            COLORS[0]
        );
    }
    for i in (0..=bins).step_by(5) {
        c.x_label(
            LEFT + bw * i as f64,
            &format!("{:.1}", hi * i as f64 / bins as f64),
        );
    }
    c.x_title("milliseconds");
    c.finish()
}

/// Rasterises an SVG to PNG with the system's fonts (the `png` feature).
#[cfg(feature = "png")]
pub fn svg_to_png(svg: &str, path: &Path) -> Result<()> {
    let mut opt = resvg::usvg::Options::default();
    opt.fontdb_mut().load_system_fonts();
    let tree = resvg::usvg::Tree::from_str(svg, &opt).context("parsing the chart SVG")?;
    let size = tree.size().to_int_size();
    let mut pixmap = resvg::tiny_skia::Pixmap::new(size.width(), size.height())
        .context("allocating the PNG canvas")?;
    resvg::render(
        &tree,
        resvg::tiny_skia::Transform::default(),
        &mut pixmap.as_mut(),
    );
    pixmap
        .save_png(path)
        .with_context(|| format!("writing {}", path.display()))
}

/// Writes every chart as `<name>.svg` into `dir`, and as `<name>.png` beside it when built with
/// the `png` feature; returns the file names.
pub fn write_all(report: &Report, dir: &Path) -> Result<Vec<PathBuf>> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let mut charts = vec![
        ("recall_at_k", recall_curves(report)),
        ("recall_by_category", category_bars(report)),
        (
            "search_latency",
            latency_histogram(&report.search_samples_ms),
        ),
    ];
    if let Some(p) = &report.pack {
        charts.push(("pack_vs_search", pack_curves(p)));
    }
    let mut written = Vec::new();
    for (name, svg) in charts {
        let svg_path = dir.join(format!("{name}.svg"));
        std::fs::write(&svg_path, &svg)
            .with_context(|| format!("writing {}", svg_path.display()))?;
        written.push(svg_path);
        #[cfg(feature = "png")]
        {
            let png_path = dir.join(format!("{name}.png"));
            svg_to_png(&svg, &png_path)?;
            written.push(png_path);
        }
    }
    Ok(written)
}
