// The user profile (GET /v1/profile): each dimension with its evidence messages, and the user
// and assistant knowledge; a refresh button asks the server to rebuild it.

import * as api from "../api.js";
import { chip, errorBox, h, info, short, table, when } from "../dom.js";

function evidence(ids) {
  if (!Array.isArray(ids) || !ids.length) return h("span", { class: "muted" }, "—");
  return ids.map((id) => chip(short(id)));
}

function knowledge(list, id) {
  if (!Array.isArray(list) || !list.length) return h("p", { class: "muted" }, "none");
  return h("ul", { id }, list.map((k) => h("li", null, h("a", { href: "#/memory/" + k.id }, k.memory), " ", when(k.created_at))));
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
  const dims = data.dimensions || [];
  if (data.profile) root.appendChild(h("p", { class: "muted" }, "Profile memory ", h("a", { href: "#/memory/" + data.profile.id }, short(data.profile.id)), ", updated ", when(data.profile.updated_at)));
  if (!dims.length) root.appendChild(info("No profile dimensions yet: they are written when a chat model analyses hot segments, or on refresh."));
  else root.appendChild(table(["Dimension", "Value", "Evidence messages"], dims.map((d) => [d.name, d.value, evidence(d.message_ids)]), { class: "wide", id: "profile-table" }));
  root.appendChild(h("h2", null, "User knowledge"));
  root.appendChild(knowledge(data.user_knowledge, "user-knowledge"));
  root.appendChild(h("h2", null, "Assistant knowledge"));
  root.appendChild(knowledge(data.assistant_knowledge, "assistant-knowledge"));
}
