// One memory: text, typed metadata, validity and expiry, the history timeline (actor, reason),
// supersession lineage both ways, links (author, reason), entities and source messages; and the
// edits the API offers (text, metadata, delete, erase, add or remove a link), each of which
// shows up in the history when the view reloads.

import * as api from "../api.js";
import { chip, errorBox, h, info, kv, short, table, typeOf, when } from "../dom.js";

const LINK_KINDS = ["related", "continues", "derived_from"];

/** The record with whatever detail this server gives: `?detail=true` where the route has it,
 *  else the plain record (or the one met in a list) with its links fetched apart. */
async function load(id) {
  const q = api.scopeQuery();
  try {
    return { d: await api.get("/v1/memories/" + encodeURIComponent(id), Object.assign({ detail: "true" }, q)), detail: true };
  } catch (e) {
    const noDetail = e.status === 400 && /detail/.test(e.message);
    if (!noDetail) {
      if (e.status === 404 && api.seen.has(id)) return { d: api.seen.get(id), detail: false, fromList: true };
      throw e;
    }
  }
  try {
    return { d: await api.get("/v1/memories/" + encodeURIComponent(id), q), detail: false };
  } catch (e) {
    if (e.status === 404 && api.seen.has(id)) return { d: api.seen.get(id), detail: false, fromList: true };
    throw e;
  }
}

function metadataTable(meta) {
  const rows = Object.entries(meta || {}).map(([k, v]) => [h("span", { class: "mono" }, k), h("span", { class: "mono meta-value" }, typeof v === "string" ? v : JSON.stringify(v)), typeOf(v)]);
  return rows.length ? table(["Key", "Value", "Type"], rows, { id: "metadata-table" }) : h("p", { class: "muted" }, "no metadata");
}

function timeline(events) {
  if (!events.length) return h("p", { class: "muted" }, "no history");
  return h("ol", { class: "timeline", id: "history" }, events.map((e) => h("li", { class: "event ev-" + e.event },
    h("strong", null, e.event), " ", when(e.created_at), " · ", h("span", { class: "mono" }, short(e.memory_id)),
    h("div", null, "by ", e.actor || "—", e.role ? " (" + e.role + ")" : "", e.reason ? " · reason: " : "", e.reason ? h("em", { class: "reason" }, e.reason) : ""),
    e.old_memory !== null && e.old_memory !== undefined && e.old_memory !== e.new_memory ? h("div", { class: "muted" }, "was: ", e.old_memory) : null,
    e.new_memory ? h("div", null, "now: ", h("span", { class: "new-text" }, e.new_memory)) : null)));
}

function lineage(id, links) {
  const sup = links.filter((l) => l.kind === "supersedes");
  const older = sup.filter((l) => l.from === id).map((l) => l.to);
  const newer = sup.filter((l) => l.to === id).map((l) => l.from);
  const ref = (x) => h("a", { href: "#/memory/" + x, class: "mono" }, x);
  return h("div", { id: "lineage" },
    h("p", { id: "successors" }, "Superseded by: ", newer.length ? newer.map((x) => [ref(x), " "]) : h("span", { class: "muted" }, "nothing (current)")),
    h("p", { id: "predecessors" }, "Supersedes: ", older.length ? older.map((x) => [ref(x), " "]) : h("span", { class: "muted" }, "nothing")));
}

function act(label, fn, cls) {
  const status = h("span", { class: "act-status", role: "status" });
  const b = h("button", { type: "button", class: cls, on: { click: async () => {
    status.textContent = "";
    try {
      await fn();
    } catch (e) {
      status.appendChild(errorBox(e));
    }
  } } }, label);
  return h("span", null, b, status);
}

function linksTable(id, links, reload) {
  if (!links.length) return h("p", { class: "muted" }, "no links");
  return table(["Direction", "Other memory", "Kind", "Strength", "Author", "Reason", ""], links.map((l) => {
    const out = l.from === id;
    const other = out ? l.to : l.from;
    return h("tr", { class: "link" },
      h("td", null, out ? "→ to" : "← from"),
      h("td", null, h("a", { href: "#/memory/" + other, class: "mono" }, short(other))),
      h("td", null, l.kind), h("td", null, Number(l.strength).toFixed(2)), h("td", null, l.author), h("td", null, l.reason || "—"),
      h("td", null, out && l.kind !== "supersedes" ? act("Remove", async () => {
        await api.del("/v1/memories/" + id + "/links/" + other, api.scopeQuery({ kind: l.kind }));
        reload();
      }) : ""));
  }), { id: "links-table" });
}

function editForm(m, reload) {
  const text = h("textarea", { id: "edit-text", name: "text", "aria-label": "text" });
  text.value = m.memory || "";
  const meta = h("textarea", { id: "edit-metadata", name: "metadata", "aria-label": "metadata (JSON)" });
  meta.value = JSON.stringify(m.metadata || {}, null, 2);
  const out = h("div", { id: "edit-status", role: "status" });
  const form = h("form", { id: "edit-form" }, h("label", null, "Text", text), h("label", null, "Metadata (JSON, types kept)", meta),
    h("button", { type: "submit", id: "save" }, "Save changes"), out);
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    out.textContent = "";
    const body = {};
    if (text.value !== (m.memory || "")) body.text = text.value;
    try {
      const parsed = JSON.parse(meta.value);
      if (JSON.stringify(parsed) !== JSON.stringify(m.metadata || {})) body.metadata = parsed;
    } catch (e) {
      out.appendChild(errorBox({ kind: "invalid_input", message: "metadata is not JSON: " + e.message }));
      return;
    }
    if (!Object.keys(body).length) {
      out.appendChild(info("Nothing changed."));
      return;
    }
    try {
      await api.put("/v1/memories/" + m.id, body, api.scopeQuery());
      reload();
    } catch (e) {
      out.appendChild(errorBox(e));
    }
  });
  return form;
}

function linkForm(id, reload) {
  const to = h("input", { name: "to", id: "link-to", size: 38, placeholder: "memory id", "aria-label": "link to memory id" });
  const kind = h("select", { name: "kind", "aria-label": "link kind" }, LINK_KINDS.map((k) => h("option", { value: k }, k)));
  const reason = h("input", { name: "reason", size: 24, placeholder: "why", "aria-label": "reason for the link" });
  const out = h("div", { role: "status" });
  const form = h("form", { class: "filters", id: "link-form" }, to, kind, reason, h("button", { type: "submit" }, "Add link"), out);
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    out.textContent = "";
    try {
      await api.post("/v1/memories/" + id + "/links", Object.assign(api.scope(), { links: [{ to: to.value.trim(), kind: kind.value, reason: reason.value.trim() || undefined }] }));
      reload();
    } catch (e) {
      out.appendChild(errorBox(e));
    }
  });
  return form;
}

function dangerZone(m) {
  const confirmBox = h("span", null);
  const ask = (label, fn) => act(label, async () => {
    confirmBox.textContent = "";
    confirmBox.appendChild(act("Confirm: " + label.toLowerCase(), fn, "danger"));
  }, "danger");
  return h("p", null,
    ask("Delete", async () => {
      await api.del("/v1/memories/" + m.id, api.scopeQuery());
      location.hash = "#/memories";
    }), " ",
    ask("Erase", async () => {
      await api.post("/v1/memories/" + m.id + "/erase", Object.assign(api.scope(), { reason: "erased from the inspector" }));
      location.hash = "#/memories";
    }), " ", confirmBox);
}

export async function render(root, _p, id) {
  const reload = () => window.dispatchEvent(new HashChangeEvent("hashchange"));
  const { d, detail, fromList } = await load(id);
  const m = d;
  root.appendChild(h("h1", null, "Memory ", h("span", { class: "mono" }, short(m.id))));
  if (fromList) root.appendChild(info("This memory is " + m.state + "; the by-id route returns active memories only on this server, so this is the record as the list showed it."));
  root.appendChild(h("p", { id: "memory-text", class: "memory-text" }, m.memory));
  root.appendChild(kv([
    ["id", h("span", { class: "mono" }, m.id)],
    ["kind / state", h("span", { id: "memory-state" }, m.kind + " · " + m.state)],
    ["scope", ["user_id", "agent_id", "run_id"].filter((k) => m[k]).map((k) => chip(k + "=" + m[k]))],
    ["created / updated", [when(m.created_at), " / ", when(m.updated_at)]],
    ["valid from / until", [when(m.valid_from), " / ", when(m.valid_until)]],
    ["expires", when(m.expires_at)],
    ["actor / role", (m.actor || "—") + " / " + (m.role || "—")],
    ["reads", String(m.access_count) + (m.last_accessed_at ? " (last " + new Date(m.last_accessed_at).toLocaleString() + ")" : "")],
    m.note ? ["note", [m.note.context || "", " ", (m.note.keywords || []).map((k) => chip(k)), (m.note.tags || []).map((t) => chip("#" + t))]] : null,
  ]));
  root.appendChild(h("h2", null, "Metadata"));
  root.appendChild(metadataTable(m.metadata));
  const [history, links] = await Promise.all([
    api.get("/v1/memories/" + m.id + "/history", api.scopeQuery()).then((r) => r.results).catch((e) => e),
    detail && Array.isArray(d.links) ? Promise.resolve(d.links) : api.get("/v1/memories/" + m.id + "/links", api.scopeQuery()).then((r) => r.results).catch((e) => e),
  ]);
  root.appendChild(h("h2", null, "Lineage"));
  root.appendChild(links instanceof Error ? errorBox(links) : lineage(m.id, links));
  root.appendChild(h("h2", null, "History"));
  root.appendChild(history instanceof Error ? errorBox(history) : timeline(history));
  root.appendChild(h("h2", null, "Links"));
  if (!(links instanceof Error)) root.appendChild(linksTable(m.id, links, reload));
  if (m.state === "active") root.appendChild(linkForm(m.id, reload));
  root.appendChild(h("h2", null, "Entities"));
  if (detail && Array.isArray(d.entities)) {
    root.appendChild(d.entities.length ? h("p", { id: "entities" }, d.entities.map((e) => chip(e.name + " (" + e.entity_type + ")"))) : h("p", { class: "muted" }, "no entities"));
  } else {
    root.appendChild(info("Entities come with GET /v1/memories/{id}?detail=true, which is not available on this server."));
  }
  root.appendChild(h("h2", null, "Source messages"));
  const msgs = Array.isArray(d.source_messages) ? d.source_messages : (Array.isArray(d.sources) && d.sources.length && typeof d.sources[0] === "object" ? d.sources : null);
  if (msgs) {
    root.appendChild(msgs.length ? table(["Role", "Name", "Text", "Session", "At"], msgs.map((s) => [s.role, s.name || "—", s.content || s.text || "", s.session_id || "—", when(s.created_at)]), { id: "sources-table" }) : h("p", { class: "muted" }, "no source messages"));
  } else {
    root.appendChild(h("p", null, (m.sources || []).length ? (m.sources || []).map((x) => chip(short(x))) : h("span", { class: "muted" }, "no source messages")));
  }
  if (m.state === "active") {
    root.appendChild(h("h2", null, "Edit"));
    root.appendChild(editForm(m, reload));
    root.appendChild(dangerZone(m));
  }
}
