// Conversations of the scope: sessions (GET /v1/sessions), a session's messages (cursor-paged),
// its short-term window (GET /v1/sessions/{id}), and the mid-term segments (GET /v1/segments)
// with summary, keywords, event time, heat and its inputs, continuity and state. Each part says plainly
// when this server does not have its route.

import * as api from "../api.js";
import { chip, errorBox, h, info, short, table, when } from "../dom.js";

async function part(root, title, fn) {
  root.appendChild(h("h2", null, title));
  const box = h("div", null);
  root.appendChild(box);
  try {
    await fn(box);
  } catch (e) {
    if (e.status === 401) throw e;
    box.appendChild(errorBox(e));
  }
}

/** A page's exchange: its messages, one line each (role: text). */
function exchange(pg) {
  const msgs = Array.isArray(pg.messages) ? pg.messages : [];
  if (!msgs.length) return h("span", { class: "muted" }, pg.text || "(no visible messages)");
  return h("div", null, msgs.map((m) => h("div", null, h("strong", null, m.role + ": "), m.text)));
}

function pageRow(pg) {
  return [h("span", { class: "mono" }, short(pg.id)), exchange(pg), String(pg.tokens ?? "—"), (pg.keywords || []).map((k) => chip(k)), pg.tier || "—", pg.continues ? short(pg.continues) : "—", when(pg.at)];
}

const PAGE_HEAD = ["Page", "Exchange", "Tokens", "Keywords", "Tier", "Continues", "At"];

/** A segment's event time: the days its pages' events span (UTC), or a dash. */
function happened(e) {
  if (!e || !e.start) return "—";
  const day = (t) => new Date(t).toLocaleDateString("en-GB", { timeZone: "UTC", day: "numeric", month: "short", year: "numeric" });
  const first = day(e.start);
  const last = day(new Date(new Date(e.end).getTime() - 1));
  return h("span", { class: "when", title: e.start + " – " + e.end }, first === last ? first : first + " – " + last, " ", chip(e.granularity));
}

function heatInputs(x) {
  if (!x || typeof x !== "object") return "—";
  return Object.entries(x).map(([k, v]) => chip(k + " " + (typeof v === "number" ? Number(v).toFixed(2) : String(v))));
}

export async function render(root, p) {
  root.appendChild(h("h1", null, "Conversations"));
  const session = p.get("session");
  await part(root, "Sessions", async (box) => {
    const data = await api.get("/v1/sessions", api.scopeQuery());
    if (!data.sessions.length) return box.appendChild(info("No sessions in this scope."));
    box.appendChild(table(["Session", "First", "Last", "Messages", "Pages"], data.sessions.map((s) => [
      h("a", { href: "#/conversations?session=" + encodeURIComponent(s.session_id) }, s.session_id),
      when(s.first_at), when(s.last_at), String(s.messages), String(s.pages)]), { class: "wide", id: "sessions-table" }));
  });
  if (session) {
    await part(root, "Messages of " + session, async (box) => {
      const data = await api.get("/v1/sessions/" + encodeURIComponent(session) + "/messages", api.scopeQuery({ cursor: p.get("cursor"), limit: 100 }));
      box.appendChild(table(["Role", "Name", "Text", "At"], data.messages.map((m) => [m.role, m.name || "—", m.text, when(m.created_at)]), { class: "wide", id: "messages-table" }));
      if (data.next_cursor) {
        const next = new URLSearchParams(p);
        next.set("cursor", data.next_cursor);
        box.appendChild(h("a", { href: "#/conversations?" + next.toString() }, "Later messages →"));
      }
    });
    await part(root, "Short-term window", async (box) => {
      const data = await api.get("/v1/sessions/" + encodeURIComponent(session), api.scopeQuery());
      const win = data.window || [];
      box.appendChild(win.length ? table(PAGE_HEAD, win.map(pageRow), { class: "wide", id: "window-table" }) : info("The window is empty."));
    });
  }
  await part(root, "Mid-term segments", async (box) => {
    const data = await api.get("/v1/segments", api.scopeQuery());
    if (!data.segments.length) return box.appendChild(info("No segments in this scope."));
    const hot = [...data.segments].sort((a, b) => b.heat - a.heat);
    box.appendChild(table(["Segment", "Session", "Summary", "Keywords", "Happened", "Heat", "Heat inputs", "State", "Pages", "Continues"], hot.map((s) => [
      h("a", { href: "#/conversations?" + new URLSearchParams(Object.assign(Object.fromEntries(p), { segment: s.id })).toString(), class: "mono" }, short(s.id)),
      s.session_id || "—", s.summary || h("span", { class: "muted" }, "(no summary)"), (s.keywords || []).map((k) => chip(k)),
      happened(s.event_time), typeof s.heat === "number" ? s.heat.toFixed(3) : "—", heatInputs(s.heat_inputs), s.state,
      String(s.pages ?? "—"), Array.isArray(s.continues) && s.continues.length ? s.continues.map((c) => chip(short(c))) : "—"]), { class: "wide", id: "segments-table" }));
  });
  const segment = p.get("segment");
  if (segment) {
    await part(root, "Pages of segment " + short(segment), async (box) => {
      const pages = await api.get("/v1/segments/" + encodeURIComponent(segment) + "/pages", api.scopeQuery());
      const list = Array.isArray(pages) ? pages : pages.pages || [];
      box.appendChild(table(PAGE_HEAD, list.map(pageRow), { class: "wide", id: "segment-pages-table" }));
    });
  }
}
