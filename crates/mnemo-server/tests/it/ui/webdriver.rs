//! A small W3C WebDriver client over `ureq`: starts `chromedriver` on a free loopback port,
//! opens one headless Chromium session (a fresh profile directory, the flags DEVELOPERS.md
//! lists) and speaks the handful of commands the inspector's suite needs. When Chromium or
//! chromedriver cannot start, [`Browser::start`] panics with the reason: the suite fails, it
//! never skips.

use serde_json::{json, Value};
use std::net::TcpListener;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const ELEMENT: &str = "element-6066-11e4-a52e-4f735466cecf";

pub(crate) struct Browser {
    base: String,
    agent: ureq::Agent,
    driver: Child,
    _profile: tempfile::TempDir,
}

/// An element reference of the current page.
#[derive(Debug, Clone)]
pub(crate) struct El(String);

impl El {
    /// The reference's id, for passing the element to a script.
    pub(crate) fn id(&self) -> &str {
        &self.0
    }
}

fn which(env: &str, names: &[&str]) -> Result<String, String> {
    if let Ok(p) = std::env::var(env) {
        return Ok(p);
    }
    let path = std::env::var("PATH").unwrap_or_default();
    for dir in path.split(':').chain(["/usr/bin", "/usr/lib/chromium"]) {
        for n in names {
            let p = std::path::Path::new(dir).join(n);
            if p.is_file() {
                return Ok(p.to_string_lossy().into_owned());
            }
        }
    }
    Err(format!(
        "none of {names:?} is installed (set {env}, or run: apt-get install -y chromium chromium-driver)"
    ))
}

impl Browser {
    pub(crate) fn start() -> Self {
        let driver_bin = which("MNEMO_CHROMEDRIVER", &["chromedriver"])
            .unwrap_or_else(|e| panic!("the browser suite cannot run: {e}"));
        let chrome_bin = which(
            "MNEMO_CHROMIUM",
            &["chromium", "chromium-browser", "google-chrome"],
        )
        .unwrap_or_else(|e| panic!("the browser suite cannot run: {e}"));
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let driver = Command::new(&driver_bin)
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("chromedriver ({driver_bin}) did not start: {e}"));
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_global(Some(Duration::from_secs(120)))
            .build()
            .into();
        let profile = tempfile::tempdir().unwrap();
        let mut b = Browser {
            base: format!("http://127.0.0.1:{port}"),
            agent,
            driver,
            _profile: profile,
        };
        // chromedriver listens within a moment; a deadline guards a hang, it is no timing check.
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let ready = b
                .agent
                .get(format!("{}/status", b.base))
                .call()
                .ok()
                .and_then(|mut r| r.body_mut().read_json::<Value>().ok())
                .is_some_and(|v| v["value"]["ready"] == json!(true));
            if ready {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "chromedriver ({driver_bin}) did not become ready on port {port}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        let caps = json!({"capabilities": {"alwaysMatch": {
            "browserName": "chrome",
            "goog:loggingPrefs": {"performance": "ALL", "browser": "ALL"},
            "goog:chromeOptions": {
                "binary": chrome_bin,
                "args": ["--headless", "--no-sandbox", "--disable-gpu",
                    "--disable-background-networking", "--disable-component-update",
                    "--no-first-run", "--disable-sync", "--disable-quic",
                    "--disable-dev-shm-usage", "--window-size=1280,800",
                    format!("--user-data-dir={}", b._profile.path().display())],
                "perfLoggingPrefs": {"enableNetwork": true, "enablePage": false}
            }
        }}});
        let v = b.raw("POST", "/session", Some(caps));
        let sid = v["value"]["sessionId"]
            .as_str()
            .unwrap_or_else(|| panic!("Chromium ({chrome_bin}) could not start a session: {v}"));
        b.base = format!("{}/session/{sid}", b.base);
        b
    }

    fn raw(&self, method: &str, path: &str, body: Option<Value>) -> Value {
        let url = format!("{}{path}", self.base);
        let req = ureq::http::Request::builder()
            .method(method)
            .uri(&url)
            .header("Content-Type", "application/json");
        let req = req
            .body(body.map(|b| b.to_string()).unwrap_or_default().into_bytes())
            .unwrap();
        let mut resp = self
            .agent
            .run(req)
            .unwrap_or_else(|e| panic!("chromedriver did not answer {method} {path}: {e}"));
        let text = resp
            .body_mut()
            .with_config()
            .limit(64 << 20)
            .read_to_string()
            .unwrap_or_default();
        serde_json::from_str(&text).unwrap_or(Value::Null)
    }

    /// A command that must succeed; its `value`.
    pub(crate) fn cmd(&self, method: &str, path: &str, body: Option<Value>) -> Value {
        let v = self.raw(method, path, body);
        if let Some(err) = v["value"]["error"].as_str() {
            panic!(
                "WebDriver {method} {path} failed: {err}: {}",
                v["value"]["message"]
            );
        }
        v["value"].clone()
    }

    /// A command that may fail: `Err(error name)`.
    pub(crate) fn try_cmd(
        &self,
        method: &str,
        path: &str,
        body: Option<Value>,
    ) -> Result<Value, String> {
        let v = self.raw(method, path, body);
        match v["value"]["error"].as_str() {
            Some(e) => Err(e.to_string()),
            None => Ok(v["value"].clone()),
        }
    }

    pub(crate) fn goto(&self, url: &str) {
        self.cmd("POST", "/url", Some(json!({ "url": url })));
    }

    pub(crate) fn js(&self, script: &str, args: Value) -> Value {
        self.cmd(
            "POST",
            "/execute/sync",
            Some(json!({"script": script, "args": args})),
        )
    }

    /// Runs a Chrome DevTools command (viewport emulation).
    pub(crate) fn cdp(&self, cmd: &str, params: Value) -> Value {
        self.cmd(
            "POST",
            "/goog/cdp/execute",
            Some(json!({"cmd": cmd, "params": params})),
        )
    }

    /// Sets the viewport to exactly `w`×`h` CSS pixels.
    pub(crate) fn viewport(&self, w: u32, h: u32) {
        self.cdp(
            "Emulation.setDeviceMetricsOverride",
            json!({"width": w, "height": h, "deviceScaleFactor": 1, "mobile": w < 600}),
        );
    }

    pub(crate) fn find(&self, css: &str) -> El {
        let v = self.cmd(
            "POST",
            "/element",
            Some(json!({"using": "css selector", "value": css})),
        );
        El(v[ELEMENT].as_str().unwrap().to_string())
    }

    pub(crate) fn find_all(&self, css: &str) -> Vec<El> {
        let v = self.cmd(
            "POST",
            "/elements",
            Some(json!({"using": "css selector", "value": css})),
        );
        v.as_array()
            .unwrap()
            .iter()
            .map(|e| El(e[ELEMENT].as_str().unwrap().to_string()))
            .collect()
    }

    /// Waits until `css` matches an element and returns it; a minute's deadline guards a hang.
    pub(crate) fn wait(&self, css: &str) -> El {
        self.wait_until(&format!("an element matching {css}"), || {
            self.try_cmd(
                "POST",
                "/element",
                Some(json!({"using": "css selector", "value": css})),
            )
            .ok()
            .map(|v| El(v[ELEMENT].as_str().unwrap().to_string()))
        })
    }

    /// Polls `f` until it gives a value (the page renders asynchronously).
    pub(crate) fn wait_until<T>(&self, what: &str, mut f: impl FnMut() -> Option<T>) -> T {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            if let Some(v) = f() {
                return v;
            }
            assert!(Instant::now() < deadline, "never saw {what}");
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Waits until the router has finished rendering `view` after `trigger` ran.
    pub(crate) fn render(&self, view: &str, trigger: impl FnOnce()) {
        self.js("delete document.body.dataset.rendered;", json!([]));
        trigger();
        self.wait_until(&format!("the {view} view rendered"), || {
            (self.js("return document.body.dataset.rendered || null;", json!([])) == json!(view))
                .then_some(())
        });
    }

    pub(crate) fn click(&self, el: &El) {
        self.cmd("POST", &format!("/element/{}/click", el.0), Some(json!({})));
    }

    pub(crate) fn clear(&self, el: &El) {
        self.cmd("POST", &format!("/element/{}/clear", el.0), Some(json!({})));
    }

    pub(crate) fn type_into(&self, el: &El, text: &str) {
        self.cmd(
            "POST",
            &format!("/element/{}/value", el.0),
            Some(json!({ "text": text })),
        );
    }

    pub(crate) fn text(&self, el: &El) -> String {
        self.cmd("GET", &format!("/element/{}/text", el.0), None)
            .as_str()
            .unwrap_or_default()
            .to_string()
    }

    /// The whole page's visible text.
    pub(crate) fn page_text(&self) -> String {
        self.js("return document.body.innerText;", json!([]))
            .as_str()
            .unwrap_or_default()
            .to_string()
    }

    /// A PNG of the viewport.
    pub(crate) fn screenshot(&self) -> Vec<u8> {
        let b64 = self.cmd("GET", "/screenshot", None);
        decode_base64(b64.as_str().unwrap())
    }

    /// The text of an open alert/confirm/prompt dialog, if one is open.
    pub(crate) fn dialog(&self) -> Option<String> {
        self.try_cmd("GET", "/alert/text", None)
            .ok()
            .map(|v| v.as_str().unwrap_or_default().to_string())
    }

    /// The browser's performance log since the last call: the URLs of every network request.
    pub(crate) fn network_log(&self) -> Vec<String> {
        let v = self.cmd("POST", "/se/log", Some(json!({"type": "performance"})));
        v.as_array()
            .unwrap()
            .iter()
            .filter_map(|e| serde_json::from_str::<Value>(e["message"].as_str()?).ok())
            .filter(|m| m["message"]["method"] == "Network.requestWillBeSent")
            .filter_map(|m| {
                m["message"]["params"]["request"]["url"]
                    .as_str()
                    .map(str::to_string)
            })
            .collect()
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        let _ = self.try_cmd("DELETE", "", None);
        let _ = self.driver.kill();
        let _ = self.driver.wait();
    }
}

fn decode_base64(s: &str) -> Vec<u8> {
    let val = |c: u8| -> u32 {
        match c {
            b'A'..=b'Z' => (c - b'A') as u32,
            b'a'..=b'z' => (c - b'a' + 26) as u32,
            b'0'..=b'9' => (c - b'0' + 52) as u32,
            b'+' => 62,
            b'/' => 63,
            _ => panic!("not base64: {c}"),
        }
    };
    let bytes: Vec<u8> = s.bytes().filter(|b| !b.is_ascii_whitespace()).collect();
    let mut out = Vec::with_capacity(bytes.len() / 4 * 3);
    for chunk in bytes.chunks(4) {
        let pad = chunk.iter().filter(|&&b| b == b'=').count();
        let mut n = 0u32;
        for (i, &c) in chunk.iter().enumerate() {
            n |= if c == b'=' { 0 } else { val(c) } << (18 - 6 * i);
        }
        let three = [(n >> 16) as u8, (n >> 8) as u8, n as u8];
        out.extend_from_slice(&three[..3 - pad]);
    }
    out
}

#[test]
fn base64_decodes_padded_input() {
    assert_eq!(decode_base64("aGVsbG8="), b"hello");
    assert_eq!(decode_base64("aGk="), b"hi");
    assert_eq!(decode_base64("YWJj"), b"abc");
}
