//! The web inspector in a real headless Chromium (driven over WebDriver through chromedriver)
//! against a real server on 127.0.0.1. One browser session runs every case in order, each a
//! function named after what it shows; the suite writes a screenshot of each view to
//! `docs/ui/` (1280×800, and the memories view at a phone's 390 px) and prints the time the
//! browser took to show 1,000 memories. If Chromium cannot start, the test fails saying why.

mod cases;
mod fixture;
mod webdriver;

use crate::TestServer;
use webdriver::Browser;

/// Where the screenshots go: `docs/ui/` at the workspace root.
fn shots_dir() -> std::path::PathBuf {
    let d = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/ui");
    std::fs::create_dir_all(&d).unwrap();
    d
}

pub struct Ctx {
    pub s: TestServer,
    pub b: Browser,
    pub seeded: fixture::Seeded,
}

impl Ctx {
    pub fn ui(&self, hash: &str) -> String {
        format!("{}/ui/{hash}", self.s.url)
    }

    pub fn shot(&self, name: &str) {
        let png = self.b.screenshot();
        assert!(png.starts_with(b"\x89PNG"), "a PNG");
        std::fs::write(shots_dir().join(format!("{name}.png")), png).unwrap();
    }
}

#[test]
fn the_inspector_in_a_real_browser() {
    let s = TestServer::start();
    let seeded = fixture::seed(&s);
    let b = Browser::start();
    b.viewport(1280, 800);
    let c = Ctx { s, b, seeded };
    cases::run_all(&c);
}
