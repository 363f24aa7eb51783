// The user profile (GET /v1/profile): each dimension with its evidence messages, and the user
// and assistant knowledge; a refresh button asks the server to rebuild it.

import * as api from "../api.js";
import { errorBox, h, info, table, when } from "../dom.js";

function evidence(ev) {
  if (!Array.isArray(ev) || !ev.length) return h("span", { class: "muted" }, "—");
  return h("ul", null, ev.map((e) => h("li", null, typeof e === "string" ? e : (e.text || e.content || e.message_id || JSON.stringify(e)))));
}

function asRows(obj) {
  if (Array.isArray(obj)) return obj;
  return Object.entries(obj || {}).map(([name, v]) => Object.assign({ name }, typeof v === "object" && v !== null ? v : { value: v }));
}

function knowledge(list) {
  if (!Array.isArray(list) || !list.length) return h("p", { class: "muted" }, "none");
  return h("ul", null, list.map((k) => h("li", null, typeof k === "string" ? k : (k.text || k.memory || JSON.stringify(k)))));
}

export async function render(root) {
  root.appendChild(h("h1", null, "Profile"));
  const out = h("div", { role: "status" });
  root.appendChild(h("p", null, h("button", { type: "button", id: "refresh-profile", on: { click: async () => {
    out.textContent = "";
    try {
      await api.post("/v1/profile/refresh", api.scope());
      window.dispatchEvent(new HashChangeEvent("hashchange"));
    } catch (e) {
      out.appendChild(errorBox(e));
    }
  } } }, "Refresh profile"), out));
  const data = await api.get("/v1/profile", api.scopeQuery());
  const p = data.profile || data;
  const dims = asRows(p.dimensions);
  if (!dims.length) root.appendChild(info("No profile dimensions yet."));
  else root.appendChild(table(["Dimension", "Value", "Evidence", "Updated"], dims.map((d) => [
    d.name || d.dimension || "—", String(d.value ?? d.text ?? ""), evidence(d.evidence || d.evidence_messages), when(d.updated_at)]), { class: "wide", id: "profile-table" }));
  root.appendChild(h("h2", null, "User knowledge"));
  root.appendChild(knowledge(data.user_knowledge || p.user_knowledge));
  root.appendChild(h("h2", null, "Assistant knowledge"));
  root.appendChild(knowledge(data.assistant_knowledge || p.assistant_knowledge));
}
