// For admin keys: the key table (create bound or admin keys, list, revoke), the store's
// statistics (GET /v1/stats) and the main metrics, read from the server's /metrics text.

import * as api from "../api.js";
import { errorBox, formValues, h, info, kv, table, when } from "../dom.js";

function reload() {
  window.dispatchEvent(new HashChangeEvent("hashchange"));
}

function createForm() {
  const out = h("div", { id: "key-created", role: "status" });
  const form = h("form", { class: "filters", id: "key-form" },
    h("label", null, "name", h("input", { name: "name", size: 12 })),
    h("label", null, "user_id", h("input", { name: "user_id", size: 12, id: "key-user" })),
    h("label", null, "agent_id", h("input", { name: "agent_id", size: 12 })),
    h("label", null, "run_id", h("input", { name: "run_id", size: 12 })),
    h("label", null, "admin", h("input", { name: "admin", type: "checkbox", value: "true" })),
    h("button", { type: "submit" }, "Create key"), out);
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    out.textContent = "";
    const v = formValues(form);
    try {
      const k = await api.post("/v1/keys", { name: v.name, user_id: v.user_id, agent_id: v.agent_id, run_id: v.run_id, admin: v.admin === "true" });
      out.appendChild(info("New key (shown once, copy it now): "));
      out.appendChild(h("code", { id: "new-key" }, k.key));
    } catch (e) {
      out.appendChild(errorBox(e));
    }
  });
  return form;
}

/** The sums of a few metric families from the OpenMetrics text. */
function metrics(text) {
  const sum = (name, test) => text.split("\n").filter((l) => l.startsWith(name) && (!test || test(l))).reduce((a, l) => a + Number(l.trim().split(" ").pop() || 0), 0);
  return [
    ["requests served", String(sum("mnemo_http_requests_total"))],
    ["requests answered 4xx", String(sum("mnemo_http_requests_total", (l) => /status="4/.test(l)))],
    ["requests answered 5xx", String(sum("mnemo_http_requests_total", (l) => /status="5/.test(l)))],
    ["operations failed", String(sum("mnemo_operation_duration_seconds_count", (l) => /outcome="error"/.test(l)))],
    ["model calls", String(sum("mnemo_model_call_duration_seconds_count"))],
    ["requests abandoned", String(sum("mnemo_requests_abandoned_total"))],
    ["median wait for a worker slot", quantile(text, "mnemo_queue_delay_seconds", 0.5)],
  ];
}

/** A quantile of a histogram, read from its cumulative buckets (the bucket's upper bound). */
function quantile(text, name, q) {
  const buckets = text.split("\n").filter((l) => l.startsWith(name + "_bucket")).map((l) => {
    const le = /le="([^"]+)"/.exec(l);
    return [le ? Number(le[1]) : Infinity, Number(l.trim().split(" ").pop())];
  });
  const total = buckets.length ? buckets[buckets.length - 1][1] : 0;
  if (!total) return "—";
  const hit = buckets.find(([, n]) => n >= q * total);
  return hit && isFinite(hit[0]) ? "≤ " + (hit[0] * 1000).toFixed(1) + " ms" : "over the largest bucket";
}

export async function render(root) {
  root.appendChild(h("h1", null, "Admin"));
  if (sessionStorage.getItem("mnemo.admin") !== "1") {
    root.appendChild(errorBox({ kind: "forbidden", message: "this view needs an admin key" }));
    return;
  }
  root.appendChild(h("h2", null, "API keys"));
  try {
    const { keys } = await api.get("/v1/keys");
    root.appendChild(table(["Id", "Name", "Binding", "Created", "Revoked", ""], keys.map((k) => h("tr", { class: "key-row", "data-id": k.id },
      h("td", { class: "mono" }, k.id), h("td", null, k.name || "—"),
      h("td", null, k.admin ? "admin" : ["user_id", "agent_id", "run_id"].filter((x) => k[x]).map((x) => x + "=" + k[x]).join(" ")),
      h("td", null, when(k.created_at)), h("td", null, when(k.revoked_at)),
      h("td", null, k.revoked_at ? "" : h("button", { type: "button", class: "danger revoke", on: { click: async (ev) => {
        try {
          await api.del("/v1/keys/" + encodeURIComponent(k.id));
          reload();
        } catch (e) {
          ev.target.after(errorBox(e));
        }
      } } }, "Revoke")))), { class: "wide", id: "keys-table" }));
  } catch (e) {
    if (e.status === 401) throw e;
    root.appendChild(errorBox(e));
  }
  root.appendChild(createForm());
  root.appendChild(h("div", { class: "grid2" },
    h("div", { id: "stats" }, h("h2", null, "Store"), await api.get("/v1/stats").then((st) => kv([
      ["memories", String(st.memories)], ["messages", String(st.messages)], ["scopes", String(st.scopes)],
      ["file size", (st.file_bytes / 1048576).toFixed(2) + " MiB"], ["schema version", String(st.schema_version)],
      ["embedding model", (st.embedding_model || "—") + (st.dimension ? " (" + st.dimension + " dims)" : "")]])).catch(errorBox)),
    h("div", { id: "metrics" }, h("h2", null, "Metrics"), await fetch("/metrics", { credentials: "omit" }).then((r) => r.text()).then((t) => kv(metrics(t))).catch(errorBox))));
}
