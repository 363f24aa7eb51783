// The user profile (GET /v1/profile): each dimension with its evidence messages, and the user
// and assistant knowledge; a refresh button asks the server to rebuild it.

import * as api from "../api.js";
import { chip, errorBox, h, info, short, table, when } from "../dom.js";

/** The texts of the scope's logged messages by id, read through the sessions API, for the
 *  evidence of the dimensions (at most a few thousand messages; the rest stay ids). */
async function messageTexts() {
  const out = new Map();
  let budget = 5;
  try {
    const { sessions } = await api.get("/v1/sessions", api.scopeQuery({ limit: 20 }));
    for (const s of sessions) {
      let cursor;
      do {
        if (budget-- <= 0) return out;
        const page = await api.get("/v1/sessions/" + encodeURIComponent(s.session_id) + "/messages", api.scopeQuery({ cursor, limit: 1000 }));
        for (const m of page.messages) out.set(m.id, m);
        cursor = page.next_cursor;
      } while (cursor);
    }
  } catch (e) {
    if (e.status === 401) throw e;
  }
  return out;
}

function evidence(ids, texts) {
  if (!Array.isArray(ids) || !ids.length) return h("span", { class: "muted" }, "—");
  return h("ul", { class: "evidence" }, ids.map((id) => {
    const m = texts.get(id);
    return h("li", { title: id }, m ? [h("strong", null, m.role + ": "), m.text] : chip(short(id)));
  }));
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
  const texts = dims.some((d) => (d.message_ids || []).length) ? await messageTexts() : new Map();
  if (data.profile) root.appendChild(h("p", { class: "muted" }, "Profile memory ", h("a", { href: "#/memory/" + data.profile.id }, short(data.profile.id)), ", updated ", when(data.profile.updated_at)));
  if (!dims.length) root.appendChild(info("No profile dimensions yet: they are written when a chat model analyses hot segments, or on refresh."));
  else root.appendChild(table(["Dimension", "Value", "Evidence messages"], dims.map((d) => [d.name, d.value, evidence(d.message_ids, texts)]), { class: "wide", id: "profile-table" }));
  root.appendChild(h("h2", null, "User knowledge"));
  root.appendChild(knowledge(data.user_knowledge, "user-knowledge"));
  root.appendChild(h("h2", null, "Assistant knowledge"));
  root.appendChild(knowledge(data.assistant_knowledge, "assistant-knowledge"));
}
