//! The web inspector at `/ui`: a page of plain HTML, CSS and JavaScript modules, written by hand
//! under `ui/assets/` and compiled into the binary (no build step, no network, no CDN).
//!
//! The routes are open (the files are static and hold no data); every piece of data the page
//! shows comes from the public `/v1` API, called with the API key the user typed, which the
//! page keeps in the tab's `sessionStorage` and sends as `Authorization: Bearer` — never a
//! cookie, so there is no ambient credential for another site to ride on. Every answer here
//! carries a strict Content-Security-Policy (same-origin scripts and styles only: no inline
//! script, no `eval`, no framing) and the usual hardening headers.

use crate::rest::AppState;
use axum::extract::Path;
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;

/// The policy of every `/ui` answer.
pub const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; \
    img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'; \
    frame-ancestors 'none'";

/// One compiled-in file: its path under `/ui/`, its media type and its bytes.
struct Asset {
    path: &'static str,
    media: &'static str,
    body: &'static str,
}

macro_rules! assets {
    ($($path:literal => $media:expr),+ $(,)?) => {
        &[$(Asset { path: $path, media: $media, body: include_str!(concat!("ui/assets/", $path)) }),+]
    };
}

const JS: &str = "text/javascript; charset=utf-8";

/// Every file the inspector serves.
static ASSETS: &[Asset] = assets![
    "index.html" => "text/html; charset=utf-8",
    "style.css" => "text/css; charset=utf-8",
    "app.js" => JS,
    "api.js" => JS,
    "dom.js" => JS,
    "views/scopes.js" => JS,
    "views/memories.js" => JS,
    "views/memory.js" => JS,
    "views/conversations.js" => JS,
    "views/profile.js" => JS,
    "views/graph.js" => JS,
    "views/pack.js" => JS,
    "views/blocks.js" => JS,
    "views/admin.js" => JS,
    "views/timeline.js" => JS,
    "views/relations.js" => JS,
];

/// The inspector's routes (no key needed: the page asks for one).
pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/ui", get(|| async { serve("index.html") }))
        .route("/ui/", get(|| async { serve("index.html") }))
        .route(
            "/ui/{*path}",
            get(|Path(path): Path<String>| async move { serve(&path) }),
        )
}

fn serve(path: &str) -> Response {
    let (status, media, body) = match ASSETS.iter().find(|a| a.path == path) {
        Some(a) => (StatusCode::OK, a.media, a.body),
        None => (
            StatusCode::NOT_FOUND,
            "text/plain; charset=utf-8",
            "no such file in the inspector\n",
        ),
    };
    let mut resp = (status, body).into_response();
    let h = resp.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static(media));
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CSP),
    );
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    // The files change with the binary: revalidate rather than trust an old copy.
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    h.insert(
        "cross-origin-opener-policy",
        HeaderValue::from_static("same-origin"),
    );
    resp
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_asset_holds_inline_script_handlers_or_eval() {
        for a in ASSETS {
            let lower = a.body.to_ascii_lowercase();
            for bad in [
                " onclick=",
                " onerror=",
                " onload=",
                "eval(",
                "new function(",
                ".innerhtml",
                "javascript:",
            ] {
                assert!(!lower.contains(bad), "{} contains {bad:?}", a.path);
            }
            if a.path.ends_with(".html") {
                // Only `<script type="module" src=…>` tags, never a script body.
                for (i, _) in lower.match_indices("<script") {
                    let tag_end = lower[i..].find('>').unwrap() + i;
                    assert!(
                        lower[i..tag_end].contains(" src="),
                        "inline script in {}",
                        a.path
                    );
                    assert!(
                        lower[tag_end + 1..].starts_with("</script>"),
                        "script body in {}",
                        a.path
                    );
                }
                assert!(!lower.contains("<style"), "inline style in {}", a.path);
                assert!(
                    !lower.contains(" style="),
                    "inline style attribute in {}",
                    a.path
                );
            }
        }
    }

    #[test]
    fn every_module_import_names_a_served_asset() {
        for a in ASSETS.iter().filter(|a| a.path.ends_with(".js")) {
            for line in a.body.lines().filter(|l| l.starts_with("import ")) {
                let spec = line.split(['"', '\'']).nth(1).unwrap();
                let base = a.path.rsplit_once('/').map_or("", |(d, _)| d);
                let mut parts: Vec<&str> = if base.is_empty() {
                    vec![]
                } else {
                    base.split('/').collect()
                };
                for seg in spec.split('/') {
                    match seg {
                        "." => {}
                        ".." => {
                            parts.pop();
                        }
                        s => parts.push(s),
                    }
                }
                let target = parts.join("/");
                assert!(
                    ASSETS.iter().any(|x| x.path == target),
                    "{} imports {spec}, not served",
                    a.path
                );
            }
        }
    }
}
