// Memories of the scope: a filtered, cursor-paged list (GET /v1/memories) and the API's search
// (POST /v1/memories/search) with each hit's per-signal scores and the link it came through.

import * as api from "../api.js";
import { chip, errorBox, formValues, h, info, short, table, when } from "../dom.js";

const KINDS = ["", "raw", "fact", "procedural", "note", "profile", "summary", "knowledge"];
const STATES = [["active", "active (default)"], ["any", "any state"], ["superseded", "superseded"], ["deleted", "deleted"]];

function select(name, options, value) {
  return h("select", { name, id: "f-" + name }, options.map((o) => {
    const [v, text] = Array.isArray(o) ? o : [o, o || "any kind"];
    return h("option", { value: v, selected: v === (value || "") || undefined }, text);
  }));
}

function field(label, input) {
  return h("label", null, label, input);
}

function isoOf(local) {
  if (!local) return undefined;
  const d = new Date(local);
  if (isNaN(d)) throw new api.ApiError(0, "invalid_input", "the time " + JSON.stringify(local) + " is not a date and time");
  return d.toISOString();
}

/** The filter expression: the metadata expression typed, ANDed with the creation-time range. */
function filterOf(p) {
  const parts = [];
  if (p.get("filter")) {
    let f;
    try {
      f = JSON.parse(p.get("filter"));
    } catch (e) {
      throw new api.ApiError(0, "invalid_input", "the metadata filter is not JSON (" + e.message + "); write e.g. {\"topic\": \"travel\"} or {\"AND\": [...]}");
    }
    if (typeof f !== "object" || f === null || Array.isArray(f)) {
      throw new api.ApiError(0, "invalid_input", "the metadata filter must be a JSON object, e.g. {\"topic\": \"travel\"}");
    }
    parts.push(f);
  }
  const range = {};
  if (p.get("from")) range.gte = isoOf(p.get("from"));
  if (p.get("to")) range.lt = isoOf(p.get("to"));
  if (Object.keys(range).length) parts.push({ created_at: range });
  if (!parts.length) return undefined;
  return parts.length === 1 ? parts[0] : { AND: parts };
}

function memoryLink(m) {
  return h("a", { href: "#/memory/" + m.id, class: "mem-link" }, m.memory || "(erased)");
}

function metaChips(meta) {
  return Object.entries(meta || {}).map(([k, v]) => chip(k + ": " + (typeof v === "string" ? v : JSON.stringify(v))));
}

function filterForm(p) {
  const form = h("form", { class: "filters", id: "filters" },
    field("search text", h("input", { name: "q", value: p.get("q") || "", size: 24, id: "f-q" })),
    field("kind", select("kind", KINDS, p.get("kind"))),
    field("state", select("state", STATES, p.get("state") || "active")),
    field("metadata filter (JSON)", h("input", { name: "filter", value: p.get("filter") || "", size: 28, id: "f-filter", placeholder: "{\"topic\": \"travel\"}" })),
    field("created from", h("input", { name: "from", type: "datetime-local", value: p.get("from") || "" })),
    field("created before", h("input", { name: "to", type: "datetime-local", value: p.get("to") || "" })),
    field("as of", h("input", { name: "as_of", type: "datetime-local", value: p.get("as_of") || "" })),
    field("page size", h("input", { name: "limit", type: "number", min: 1, max: 1000, value: p.get("limit") || "50", size: 5 })),
    h("button", { type: "submit", id: "apply" }, "List / search"));
  form.addEventListener("submit", (ev) => {
    ev.preventDefault();
    const q = new URLSearchParams(formValues(form));
    location.hash = "#/memories?" + q.toString();
  });
  return form;
}

async function list(root, p) {
  const state = p.get("state") || "active";
  const query = api.scopeQuery({
    kinds: p.get("kind"),
    filters: (() => { const f = filterOf(p); return f ? JSON.stringify(f) : undefined; })(),
    as_of: isoOf(p.get("as_of")),
    include_inactive: state !== "active" ? "true" : undefined,
    limit: p.get("limit") || 50,
    cursor: p.get("cursor"),
  });
  const page = await api.get("/v1/memories", query);
  let rows = page.results;
  for (const m of rows) api.seen.set(m.id, m);
  if (state === "superseded" || state === "deleted") {
    rows = rows.filter((m) => m.state === state);
    root.appendChild(info("Showing the " + state + " memories of this page of all states."));
  }
  const t0 = performance.now();
  const tbl = table(["Memory", "Kind", "State", "Created", "Metadata"], rows.map((m) => h("tr", { class: "state-" + m.state, "data-id": m.id },
    h("td", null, memoryLink(m)), h("td", null, m.kind), h("td", null, m.state), h("td", null, when(m.created_at)), h("td", null, metaChips(m.metadata)))),
  { class: "wide", id: "memory-table" });
  root.appendChild(h("p", { class: "muted", id: "list-count" }, rows.length + " memories on this page"));
  root.appendChild(tbl);
  document.body.dataset.listRenderMs = (performance.now() - t0).toFixed(1);
  const nav = h("p", null);
  if (p.get("cursor")) nav.appendChild(h("button", { type: "button", on: { click: () => history.back() } }, "← Previous page"));
  if (page.next_cursor) {
    const next = new URLSearchParams(p);
    next.set("cursor", page.next_cursor);
    nav.appendChild(h("a", { href: "#/memories?" + next.toString(), id: "next-page" }, "Next page →"));
  }
  root.appendChild(nav);
}

function num(x) {
  return x === undefined || x === null ? "—" : Number(x).toFixed(3);
}

async function search(root, p) {
  const state = p.get("state") || "active";
  const body = Object.assign(api.scope(), {
    query: p.get("q"),
    top_k: Math.min(Number(p.get("limit") || 20), 100),
    kinds: p.get("kind") ? [p.get("kind")] : undefined,
    filters: filterOf(p),
    as_of: isoOf(p.get("as_of")),
    include_inactive: state !== "active",
    expand_links: 2,
  });
  const out = await api.post("/v1/memories/search", body);
  for (const hit of out.results) api.seen.set(hit.id, hit);
  root.appendChild(h("p", { class: "muted" }, out.results.length + " results · embedding " + out.embed_ms.toFixed(1) + " ms · retrieval " + out.search_ms.toFixed(1) + " ms"));
  root.appendChild(table(["Score", "Dense", "Lexical (BM25 norm / raw)", "Entity", "Via link", "Memory", "Kind", "State"], out.results.map((r) => h("tr", { class: "hit state-" + r.state, "data-id": r.id },
    h("td", { class: "score" }, num(r.score)),
    h("td", { class: "s-dense" }, num(r.scores.dense)),
    h("td", { class: "s-lexical" }, num(r.scores.bm25_norm) + " / " + num(r.scores.bm25)),
    h("td", { class: "s-entity" }, num(r.scores.entity)),
    h("td", { class: "s-via" }, r.via ? h("span", null, r.via.kind + " ", num(r.via.strength), " from ", h("a", { href: "#/memory/" + r.via.memory_id }, short(r.via.memory_id))) : "direct"),
    h("td", null, memoryLink(r)), h("td", null, r.kind), h("td", null, r.state))),
  { class: "wide", id: "search-table" }));
}

export async function render(root, p) {
  root.appendChild(h("h1", null, "Memories"));
  const sc = api.scope();
  if (!sc.user_id && !sc.agent_id && !sc.run_id && sessionStorage.getItem("mnemo.admin") === "1") {
    root.appendChild(info("Choose a scope (the bar above, or the Scopes view) to list its memories."));
  }
  root.appendChild(filterForm(p));
  const out = h("div", { id: "results" });
  root.appendChild(out);
  try {
    if (p.get("q")) await search(out, p);
    else await list(out, p);
  } catch (e) {
    if (e.status === 401) throw e;
    out.appendChild(errorBox(e));
  }
}
