// Core memory blocks of the scope (GET /v1/blocks): each with its label, version, used/limit
// characters, description and value, its history (before/after per version), and a form that
// rewrites it (POST /v1/blocks/{label}/edit with the version shown, so an edit made meanwhile is
// a conflict, never overwritten). A key bound to an agent is refused read-only blocks.

import * as api from "../api.js";
import { errorBox, h, table } from "../dom.js";

function chars(b) {
  return [...b.value].length + "/" + b.limit + " chars" + (b.read_only ? " · read-only" : "");
}

async function history(label) {
  const out = await api.get("/v1/blocks/" + encodeURIComponent(label) + "/history", api.scopeQuery({ limit: 50 }));
  return table(["Version", "Op", "Actor", "Reason", "Before", "After"], out.results.map((e) => h("tr", { class: "block-event" },
    h("td", null, String(e.version)), h("td", null, e.op), h("td", null, e.actor || "—"), h("td", null, e.reason || "—"),
    h("td", null, h("pre", null, e.before === null || e.before === undefined ? "—" : e.before)),
    h("td", null, h("pre", null, e.after === null || e.after === undefined ? "—" : e.after)))), { class: "wide block-history" });
}

function editor(b, onSaved) {
  const area = h("textarea", { name: "value", rows: 5, cols: 70, class: "block-value-input" });
  area.value = b.value;
  const reason = h("input", { name: "reason", size: 30, placeholder: "why (kept in the history)" });
  const status = h("div", { class: "block-edit-status", role: "status" });
  const form = h("form", { class: "block-edit" }, area, h("br"), reason, " ",
    h("button", { type: "submit", class: "block-save" }, "Save (rewrite v" + b.version + ")"), status);
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    status.replaceChildren();
    try {
      await api.post("/v1/blocks/" + encodeURIComponent(b.label) + "/edit", Object.assign(api.scope(), {
        op: "rewrite", value: area.value, expected_version: b.version, reason: reason.value || undefined }));
      onSaved();
    } catch (e) {
      if (e.status === 401) throw e;
      status.appendChild(errorBox(e));
    }
  });
  return form;
}

export async function render(root) {
  root.appendChild(h("h1", null, "Core memory blocks"));
  const sc = api.scope();
  if (!sc.user_id && !sc.agent_id) {
    root.appendChild(h("p", null, "Choose a user or agent in the scope bar to see its blocks."));
    return;
  }
  const page = await api.get("/v1/blocks", api.scopeQuery({ limit: 100 }));
  if (!page.results.length) {
    root.appendChild(h("p", { id: "blocks-empty" }, "This scope has no blocks (mnemo blocks create, or POST /v1/blocks)."));
    return;
  }
  const list = h("div", { id: "blocks" });
  root.appendChild(list);
  for (const b of page.results) {
    const box = h("section", { class: "block", "data-label": b.label },
      h("h2", null, b.label + " ", h("small", { class: "block-meta" }, "v" + b.version + " · " + chars(b))),
      b.description ? h("p", { class: "block-description" }, b.description) : null,
      h("pre", { class: "block-value" }, b.value || "(empty)"),
      b.agents && b.agents.length ? h("p", null, "Attached to: " + b.agents.join(", ")) : null,
      editor(b, () => window.dispatchEvent(new HashChangeEvent("hashchange"))),
      h("h3", null, "History"));
    list.appendChild(box);
    try {
      box.appendChild(await history(b.label));
    } catch (e) {
      if (e.status === 401) throw e;
      box.appendChild(errorBox(e));
    }
  }
  if (page.next_cursor) root.appendChild(h("p", null, "More blocks follow (the first 100 are shown)."));
}
