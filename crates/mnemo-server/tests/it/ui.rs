//! The web inspector in a real headless Chromium (driven over WebDriver through chromedriver)
//! against a real server on 127.0.0.1. One browser session runs every case in order, each a
//! function named after what it shows; the suite writes a screenshot of each view (to
//! `MNEMO_UI_SHOTS`, e.g. `docs/ui/`; by default under the target directory) (1280×800, and the memories view at a phone's 390 px) and prints the time the
//! browser took to show 1,000 memories. If Chromium cannot start, the test fails saying why.

mod blocks;
mod fixture;
mod memories;
mod relations;
mod security;
mod timeline;
mod views;
mod webdriver;

use crate::TestServer;
use serde_json::json;
use webdriver::Browser;

/// Where the screenshots go: `MNEMO_UI_SHOTS` when set (`MNEMO_UI_SHOTS=docs/ui` refreshes the
/// README's pictures), otherwise a folder under the target directory, so a test run leaves the
/// checkout as it was.
fn shots_dir() -> std::path::PathBuf {
    let d = match std::env::var_os("MNEMO_UI_SHOTS") {
        Some(dir) => std::path::PathBuf::from(dir),
        None => std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("ui-shots"),
    };
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// One case of the suite: it runs against the shared server and browser.
type Case = fn(&Ctx);

pub(crate) struct Ctx {
    pub s: TestServer,
    pub b: Browser,
    pub seeded: fixture::Seeded,
}

impl Ctx {
    pub(crate) fn ui(&self, hash: &str) -> String {
        format!("{}/ui/{hash}", self.s.url)
    }

    pub(crate) fn shot(&self, name: &str) {
        let png = self.b.screenshot();
        assert!(png.starts_with(b"\x89PNG"), "a PNG");
        std::fs::write(shots_dir().join(format!("{name}.png")), png).unwrap();
    }
}

#[test]
fn the_inspector_in_a_real_browser() {
    let s = fixture::start();
    let seeded = fixture::seed(&s);
    let b = Browser::start();
    b.viewport(1280, 800);
    let c = Ctx { s, b, seeded };
    run_all(&c);
}

pub(crate) fn run_all(c: &Ctx) {
    let cases: &[(&str, Case)] = &[
        (
            "ui_answers_carry_the_csp_and_security_headers",
            security::headers,
        ),
        (
            "a_revoked_or_unknown_key_is_refused_with_a_message",
            security::revoked_key_is_refused,
        ),
        (
            "sign_in_shows_the_scopes_the_key_sees",
            memories::sign_in_shows_scopes,
        ),
        (
            "a_memory_added_through_the_api_is_listed",
            memories::added_memory_is_listed,
        ),
        (
            "search_shows_per_signal_scores",
            memories::search_shows_scores,
        ),
        (
            "an_edit_in_the_page_shows_in_the_history",
            memories::edit_shows_in_history,
        ),
        (
            "links_metadata_delete_and_erase_go_through_the_page",
            memories::page_edits,
        ),
        (
            "filters_narrow_the_list_by_kind_time_and_as_of",
            memories::list_filters,
        ),
        (
            "a_superseded_fact_shows_its_successor",
            memories::superseded_shows_successor,
        ),
        (
            "markup_in_text_and_metadata_renders_as_text",
            security::markup_renders_as_text,
        ),
        (
            "an_injected_inline_script_is_blocked_by_the_csp",
            security::inline_script_is_blocked,
        ),
        (
            "a_pack_shows_reasons_within_its_budget",
            views::pack_within_budget,
        ),
        (
            "blocks_show_their_history_and_take_the_owners_edit_not_an_agents",
            blocks::blocks_with_history_and_edits,
        ),
        (
            "bad_input_gets_clear_messages_in_the_page",
            security::bad_input_messages,
        ),
        (
            "the_notes_graph_draws_a_note_and_its_links",
            views::notes_graph,
        ),
        (
            "conversations_and_profile_views_render",
            views::conversations_and_profile,
        ),
        (
            "admin_sees_keys_stats_and_metrics_and_creates_a_key",
            views::admin_view,
        ),
        (
            "the_timeline_shows_events_in_the_order_they_happened",
            timeline::events_in_the_order_they_happened,
        ),
        (
            "keyboard_focus_is_visible_and_reaches_the_views",
            views::keyboard_focus,
        ),
        ("the_memories_view_fits_a_phone_width", views::phone_width),
        (
            "a_thousand_memories_render_and_are_timed",
            views::thousand_memories,
        ),
        (
            "the_profile_shows_dimensions_with_evidence_and_knowledge",
            views::profile_with_evidence,
        ),
        (
            "an_id_from_the_url_is_percent_encoded_into_api_paths",
            security::url_ids_are_encoded_into_api_paths,
        ),
        (
            "without_keys_the_page_continues_keyless_and_shows_every_scope",
            security::no_key_server_shows_everything,
        ),
        (
            "a_key_bound_to_bob_sees_nothing_of_alices_on_any_view",
            security::bob_sees_no_alice,
        ),
        (
            "the_entity_graph_draws_a_neighbourhood_to_depth_two_in_its_scope",
            relations::entity_neighbourhood,
        ),
    ];
    for (name, case) in cases {
        eprintln!("ui case: {name}");
        case(c);
    }
}

/// Signs in afresh with `key` (None: continue without one) and waits for the scopes view.
pub(crate) fn sign_in(c: &Ctx, key: Option<&str>) {
    c.b.goto(&c.ui(""));
    c.b.js("sessionStorage.clear();", json!([]));
    c.b.goto(&c.ui("?fresh"));
    let input = c.b.wait("#signin:not([hidden]) #key");
    match key {
        Some(k) => {
            c.b.type_into(&input, k);
            c.b.render("scopes", || {
                c.b.click(&c.b.find("#signin-form button[type=submit]"))
            });
        }
        None => c.b.render("scopes", || c.b.click(&c.b.find("#nokey"))),
    }
}

/// Sets the scope bar's user and applies it (the view re-renders).
pub(crate) fn use_scope(c: &Ctx, user: &str) {
    c.b.js(
        "sessionStorage.setItem('mnemo.scope', JSON.stringify({user_id: arguments[0]}));",
        json!([user]),
    );
}

/// Goes to a hash route of the loaded page and waits for `view` to render (re-rendering when
/// the hash is already that one).
pub(crate) fn go(c: &Ctx, view: &str, hash: &str) {
    c.b.render(view, || {
        c.b.js(
            "if (location.hash === arguments[0]) window.dispatchEvent(new HashChangeEvent('hashchange')); else location.hash = arguments[0];",
            json!([hash]),
        );
    });
}

pub(crate) fn text_of(c: &Ctx, css: &str) -> String {
    c.b.text(&c.b.find(css))
}

pub(crate) fn notice(c: &Ctx) -> String {
    c.b.wait_until("a message in the page", || {
        let t = c.b.js(
            "const n = document.querySelector('main .notice'); return n ? n.textContent : null;",
            json!([]),
        );
        t.as_str().map(str::to_string)
    })
}
