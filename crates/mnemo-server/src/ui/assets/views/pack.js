// The context pack (POST /v1/context) for a query, a session and a token budget: its sections
// and items with reasons, scores and tokens, the rendered text, and how much was left out.

import * as api from "../api.js";
import { errorBox, formValues, h, table } from "../dom.js";

export async function render(root, p) {
  root.appendChild(h("h1", null, "Context pack"));
  const form = h("form", { class: "filters", id: "pack-form" },
    h("label", null, "query", h("input", { name: "query", id: "pack-query", size: 30, value: p.get("query") || "" })),
    h("label", null, "session", h("input", { name: "session", size: 14, value: p.get("session") || "" })),
    h("label", null, "budget (tokens, 1–200000)", h("input", { name: "budget", id: "pack-budget", size: 8, value: p.get("budget") || "400" })),
    h("button", { type: "submit", id: "pack-go" }, "Build pack"));
  form.addEventListener("submit", (ev) => {
    ev.preventDefault();
    location.hash = "#/pack?" + new URLSearchParams(formValues(form)).toString();
  });
  root.appendChild(form);
  if (!p.get("query")) return;
  const out = h("div", { id: "pack" });
  root.appendChild(out);
  const budget = Number(p.get("budget"));
  if (!Number.isInteger(budget) || budget < 1 || budget > 200000) {
    out.appendChild(errorBox({ kind: "invalid_input", message: "the budget must be a whole number of tokens from 1 to 200000; " + JSON.stringify(p.get("budget")) + " is not" }));
    return;
  }
  let pack;
  try {
    pack = await api.post("/v1/context", Object.assign(api.scope(), { query: p.get("query"), budget_tokens: budget, session_id: p.get("session") || undefined }));
  } catch (e) {
    if (e.status === 401) throw e;
    out.appendChild(errorBox(e));
    return;
  }
  out.appendChild(h("p", { id: "pack-summary" }, "Used ", h("strong", { id: "pack-used" }, String(pack.used_tokens)), " of ", h("strong", { id: "pack-budget-shown" }, String(pack.budget_tokens)),
    " tokens (" + pack.tokenizer + ") · ", h("span", { id: "pack-omitted" }, String(pack.omitted)), " candidates left out (they did not fit)"));
  for (const sec of pack.sections) {
    out.appendChild(h("h2", null, sec.section.replace("_", "-") + " (" + sec.items.length + ")"));
    out.appendChild(table(["Kind", "Reason", "Score", "Tokens", "Text", "From"], sec.items.map((it) => h("tr", { class: "pack-item" },
      h("td", null, it.kind), h("td", { class: "reason" }, it.reason), h("td", null, it.score === undefined ? "—" : Number(it.score).toFixed(3)),
      h("td", { class: "tokens" }, String(it.tokens)), h("td", null, it.text), h("td", null, it.from || "—"))), { class: "wide" }));
  }
  out.appendChild(h("h2", null, "Rendered text"));
  out.appendChild(h("pre", { id: "pack-rendered" }, pack.rendered));
}
