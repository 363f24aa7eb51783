// The entity graph: an entity's neighbourhood (GET /v1/graph/neighbourhood, depth 1 or 2, now or
// as of a time) drawn as SVG built node by node — the entity in the middle, what one hop reaches
// on an inner ring, what two hops reach on an outer ring, each relation a line labelled with its
// predicate (closed ones dashed) — then the same edges as a table with their sentence and valid
// time. Every name is a text node; clicking one re-centres the view on it.

import * as api from "../api.js";
import { errorBox, formValues, h, info, s, table, when } from "../dom.js";

const W = 900;
const H = 560;

function clip(t, n) {
  return t.length > n ? t.slice(0, n - 1) + "…" : t;
}

/** A node's key: the entity's id, or the literal's text (an age, a title has no id). */
const keyOf = (n) => (n.id ? "e:" + n.id : "l:" + n.name);

function hash(entity, depth, asOf) {
  const q = new URLSearchParams({ entity, depth: String(depth) });
  if (asOf) q.set("as_of", asOf);
  return "#/relations?" + q.toString();
}

/** Hops from the centre for every node the edges reach (breadth first over the edges). */
function hopsOf(n) {
  const hops = new Map(n.center.map((c) => [keyOf(c), 0]));
  for (let round = 0; round < 3; round++) {
    for (const e of n.relations) {
      const [a, b] = [keyOf(e.subject), keyOf(e.object)];
      if (hops.has(a) && !hops.has(b)) hops.set(b, hops.get(a) + 1);
      if (hops.has(b) && !hops.has(a)) hops.set(a, hops.get(b) + 1);
    }
  }
  return hops;
}

function layout(n, hops) {
  const names = new Map();
  for (const x of [...n.center, ...n.nodes]) names.set(keyOf(x), x);
  for (const e of n.relations) for (const x of [e.subject, e.object]) names.set(keyOf(x), x);
  const rings = [[], [], []];
  for (const k of names.keys()) rings[Math.min(hops.get(k) ?? 2, 2)].push(k);
  const pos = new Map();
  const radius = [0, Math.min(W, H) / 2 - 170, Math.min(W, H) / 2 - 40];
  rings.forEach((ring, i) => ring.forEach((k, j) => {
    const a = (2 * Math.PI * j) / Math.max(ring.length, 1) - Math.PI / 2 + (i === 2 ? 0.3 : 0);
    const r = i === 0 && ring.length > 1 ? 30 : radius[i];
    pos.set(k, [W / 2 + r * Math.cos(a), H / 2 + r * Math.sin(a)]);
  }));
  return { names, pos };
}

function draw(n, depth, asOf) {
  const hops = hopsOf(n);
  const { names, pos } = layout(n, hops);
  const svg = s("svg", { viewBox: "0 0 " + W + " " + H, role: "img", "aria-label": "the entity's relations", id: "relations-svg" });
  svg.appendChild(s("title", null, "The entity and the entities its relations reach"));
  for (const e of n.relations) {
    const [x1, y1] = pos.get(keyOf(e.subject));
    const [x2, y2] = pos.get(keyOf(e.object));
    const closed = Boolean(e.valid_until);
    svg.appendChild(s("line", { x1, y1, x2, y2, stroke: closed ? "#a11a1a" : "#7a8593", "stroke-width": 1 + Math.min(e.sources.length, 4) / 2, "stroke-dasharray": closed ? "5 4" : null, class: "edge" }));
    svg.appendChild(s("text", { x: (x1 + x2) / 2, y: (y1 + y2) / 2 - 4, fill: "#5c6166", "text-anchor": "middle", class: "predicate" }, e.predicate));
  }
  for (const [k, [x, y]] of pos) {
    const node = names.get(k);
    const hop = hops.get(k) ?? 2;
    const dot = s("circle", { cx: x, cy: y, r: hop === 0 ? 14 : 10 - hop, fill: hop === 0 ? "#1f5fbf" : node.id ? "#8fb0e0" : "#d8dde3" });
    const label = s("text", { x, y: y + 24, "text-anchor": "middle", fill: "#1d1f21" }, clip(node.name, 32));
    if (node.id && hop > 0) {
      const link = s("a", { href: hash(node.name, depth, asOf), class: "node" });
      link.append(dot, label);
      svg.appendChild(link);
    } else {
      svg.append(dot, label);
    }
  }
  return svg;
}

export async function render(root, p) {
  root.appendChild(h("h1", null, "Entity graph"));
  const entity = p.get("entity") || "";
  const depth = p.get("depth") === "2" ? 2 : 1;
  const asOf = p.get("as_of") || "";
  const form = h("form", { class: "filters", id: "relations-form" },
    h("label", null, "entity", h("input", { name: "entity", id: "relations-entity", size: 20, value: entity })),
    h("label", null, "depth", h("select", { name: "depth", id: "relations-depth" },
      h("option", { value: "1", selected: depth === 1 }, "1 hop"), h("option", { value: "2", selected: depth === 2 }, "2 hops"))),
    h("label", null, "as of (RFC 3339)", h("input", { name: "as_of", size: 22, value: asOf })),
    h("button", { type: "submit", id: "relations-go" }, "Show"));
  form.addEventListener("submit", (ev) => {
    ev.preventDefault();
    const f = formValues(form);
    location.hash = hash(f.entity || "", Number(f.depth || 1), f.as_of);
  });
  root.appendChild(form);
  if (!entity) return root.appendChild(info("Name an entity of the scope (a person, a place, a pet) to see its relations."));
  let n;
  try {
    n = await api.get("/v1/graph/neighbourhood", api.scopeQuery({ entity, depth, limit: 100, as_of: asOf || undefined }));
  } catch (e) {
    if (e.status === 401) throw e;
    return root.appendChild(errorBox(e));
  }
  root.appendChild(h("p", { id: "relations-summary" }, n.center.map((c) => c.name).join(", "), " · ", String(n.relations.length), " relations, ",
    String(n.nodes.length), " entities", n.truncated ? " (cut at the limit)" : "", asOf ? " · as of " + asOf : ""));
  root.appendChild(h("div", { class: "graph" }, draw(n, depth, asOf)));
  root.appendChild(table(["Subject", "Predicate", "Object", "Valid from", "Until", "Sentence", "Statements"], n.relations.map((e) => [
    e.subject.name, e.predicate, e.object.name, when(e.valid_from), e.valid_until ? when(e.valid_until) : "now", e.fact, String(e.sources.length),
  ]), { class: "wide", id: "relations-table" }));
}
