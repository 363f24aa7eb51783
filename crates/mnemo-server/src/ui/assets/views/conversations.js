// Conversations of the scope: sessions (GET /v1/sessions), a session's messages (cursor-paged),
// its short-term window (GET /v1/sessions/{id}), and the mid-term segments (GET /v1/segments)
// with summary, keywords, heat and its inputs, continuity and state. Each part says plainly
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

function pageRow(pg) {
  return [h("span", { class: "mono" }, short(pg.id)), pg.text || "", String(pg.tokens ?? "—"), (pg.keywords || []).map((k) => chip(k)), pg.tier || pg.state || "—", when(pg.at)];
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
      box.appendChild(win.length ? table(["Page", "Text", "Tokens", "Keywords", "Tier", "At"], win.map(pageRow), { class: "wide", id: "window-table" }) : info("The window is empty."));
    });
  }
  await part(root, "Mid-term segments", async (box) => {
    const data = await api.get("/v1/segments", api.scopeQuery());
    if (!data.segments.length) return box.appendChild(info("No segments in this scope."));
    box.appendChild(table(["Segment", "Session", "Summary", "Keywords", "Heat", "Heat inputs", "State", "Pages", "Continues"], data.segments.map((s) => [
      h("span", { class: "mono" }, short(s.id)), s.session_id || "—", s.summary, (s.keywords || []).map((k) => chip(k)),
      typeof s.heat === "number" ? s.heat.toFixed(3) : String(s.heat ?? "—"), heatInputs(s.heat_inputs), s.state,
      String(Array.isArray(s.pages) ? s.pages.length : s.pages ?? "—"), s.continues ? short(s.continues) : "—"]), { class: "wide", id: "segments-table" }));
  });
}
