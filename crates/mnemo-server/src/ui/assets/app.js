// The inspector's shell: sign-in, the scope bar, and a hash router that hands each view its
// root element and the route's parameters (#/memories?kind=fact → "memories", {kind: "fact"}).

import * as api from "./api.js";
import { clear, errorBox } from "./dom.js";
import * as scopes from "./views/scopes.js";
import * as memories from "./views/memories.js";
import * as memory from "./views/memory.js";
import * as conversations from "./views/conversations.js";
import * as profile from "./views/profile.js";
import * as graph from "./views/graph.js";
import * as pack from "./views/pack.js";
import * as blocks from "./views/blocks.js";
import * as admin from "./views/admin.js";
import * as timeline from "./views/timeline.js";
import * as relations from "./views/relations.js";

const VIEWS = {
  scopes, memories, memory, conversations, profile, graph, pack, blocks, admin, timeline,
  relations,
};
const $ = (id) => document.getElementById(id);
let renderSeq = 0;

/** Who the key is: {admin}. An unknown or revoked key is refused (401) before anything else;
 *  an admin key answers /v1/stats, a bound key is forbidden it (403). */
async function identify() {
  try {
    await api.get("/v1/stats");
    return { admin: true };
  } catch (e) {
    if (e.status === 403) return { admin: false };
    throw e;
  }
}

function showSignin(message) {
  $("signin").hidden = false;
  $("view").hidden = true;
  $("scopebar").hidden = true;
  $("signout").hidden = true;
  $("who").textContent = "";
  $("signin-error").textContent = message || "";
  $("key").focus();
}

async function signIn(k) {
  api.setKey(k);
  try {
    const who = await identify();
    sessionStorage.setItem("mnemo.admin", who.admin ? "1" : "0");
    enter();
  } catch (e) {
    api.setKey(null);
    showSignin(e.status === 401 ? "That API key is unknown or revoked." : e.kind + ": " + e.message);
  }
}

function enter() {
  const isAdmin = sessionStorage.getItem("mnemo.admin") === "1";
  $("signin").hidden = true;
  $("view").hidden = false;
  $("scopebar").hidden = false;
  $("signout").hidden = false;
  $("who").textContent = (api.key() ? "key …" + api.key().slice(-4) : "no key (--no-auth)") + (isAdmin ? " · admin" : " · bound key");
  for (const a of document.querySelectorAll(".admin-only")) a.hidden = !isAdmin;
  fillScopeBar();
  if (!location.hash || location.hash === "#") location.hash = "#/scopes";
  else route();
}

function fillScopeBar() {
  const sc = api.scope();
  for (const k of ["user_id", "agent_id", "run_id"]) $("scopebar").elements[k].value = sc[k] || "";
}

function parseHash() {
  const raw = location.hash.replace(/^#\/?/, "");
  const [path, query] = raw.split("?");
  const [name, ...rest] = path.split("/");
  return { name: name || "scopes", arg: rest.map(decodeURIComponent).join("/"), params: new URLSearchParams(query || "") };
}

async function route() {
  if (!sessionStorage.getItem("mnemo.admin")) return showSignin();
  const { name, arg, params } = parseHash();
  const view = VIEWS[name];
  const root = clear($("view"));
  fillScopeBar();
  for (const a of document.querySelectorAll("#nav a")) {
    a.toggleAttribute("aria-current", a.getAttribute("href") === "#/" + name);
    if (a.hasAttribute("aria-current")) a.setAttribute("aria-current", "page");
  }
  if (!view) {
    root.appendChild(errorBox({ kind: "not_found", message: "there is no view named " + name }));
    return;
  }
  const seq = ++renderSeq;
  $("status").textContent = "loading…";
  const t0 = performance.now();
  try {
    await view.render(root, params, arg);
  } catch (e) {
    if (e.status === 401) {
      api.setKey(null);
      sessionStorage.removeItem("mnemo.admin");
      return showSignin("The API key was refused (" + e.message + "); sign in again.");
    }
    root.appendChild(errorBox(e));
  }
  if (seq === renderSeq) {
    const ms = performance.now() - t0;
    document.body.dataset.rendered = name;
    document.body.dataset.renderMs = ms.toFixed(1);
    $("status").textContent = name + " in " + ms.toFixed(0) + " ms";
  }
}

function boot() {
  $("signin-form").addEventListener("submit", (ev) => {
    ev.preventDefault();
    signIn($("key").value.trim());
  });
  $("nokey").addEventListener("click", () => signIn(null));
  $("signout").addEventListener("click", () => {
    api.setKey(null);
    sessionStorage.clear();
    clear($("view"));
    showSignin("Signed out.");
  });
  $("scopebar").addEventListener("submit", (ev) => {
    ev.preventDefault();
    const f = ev.target.elements;
    api.setScope({ user_id: f.user_id.value.trim(), agent_id: f.agent_id.value.trim(), run_id: f.run_id.value.trim() });
    route();
  });
  window.addEventListener("hashchange", route);
  if (sessionStorage.getItem("mnemo.admin")) enter();
  else showSignin();
}

boot();
