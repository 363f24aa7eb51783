// Scopes the key can see (GET /v1/scopes), with active counts and counts by kind and state.
// Choosing one sets the scope every other view works in.

import * as api from "../api.js";
import { chip, h, info, table } from "../dom.js";

function label(sc) {
  return ["user_id", "agent_id", "run_id"].filter((k) => sc[k]).map((k) => k + "=" + sc[k]).join(" ");
}

function counts(obj) {
  return Object.entries(obj || {}).map(([k, n]) => chip(k + " " + n, "k-" + k));
}

export async function render(root) {
  root.appendChild(h("h1", null, "Scopes"));
  const data = await api.get("/v1/scopes");
  if (data.truncated) root.appendChild(info("The store holds more memories than one tally counts; the numbers below are partial."));
  if (!data.scopes.length) {
    root.appendChild(info("This key sees no scope with memories yet."));
    return;
  }
  const open = (sc, where) => () => {
    api.setScope({ user_id: sc.user_id, agent_id: sc.agent_id, run_id: sc.run_id });
    location.hash = where;
  };
  root.appendChild(table(["Scope", "Active", "By kind", "By state", "Open"], data.scopes.map((sc) => [
    h("span", { class: "mono scope-label" }, label(sc)),
    String(sc.active),
    counts(sc.kinds),
    counts(sc.states),
    h("span", null,
      h("button", { type: "button", on: { click: open(sc, "#/memories") } }, "Memories"), " ",
      h("button", { type: "button", on: { click: open(sc, "#/conversations") } }, "Conversations"), " ",
      h("button", { type: "button", on: { click: open(sc, "#/profile") } }, "Profile")),
  ]), { class: "wide", id: "scopes-table" }));
}
