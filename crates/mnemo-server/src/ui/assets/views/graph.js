// The notes graph: a note and its neighbourhood of links (GET /v1/memories/{id}/links for the
// note and each neighbour), drawn as SVG built node by node: the note in the middle, its
// neighbours on a circle, every link between them as a line labelled with its kind.

import * as api from "../api.js";
import { h, info, s, short } from "../dom.js";

const W = 900;
const H = 520;

async function textOf(id) {
  if (api.seen.has(id)) return api.seen.get(id).memory;
  try {
    const m = await api.get("/v1/memories/" + encodeURIComponent(id), api.scopeQuery());
    api.seen.set(id, m);
    return m.memory;
  } catch {
    return short(id);
  }
}

function clip(t, n) {
  return t.length > n ? t.slice(0, n - 1) + "…" : t;
}

function picker(notes) {
  return h("ul", { id: "note-list" }, notes.map((n) => h("li", null, h("a", { href: "#/graph/" + encodeURIComponent(n.id) }, n.memory))));
}

export async function render(root, _p, id) {
  root.appendChild(h("h1", null, "Notes graph"));
  const listNotes = async () => {
    const notes = await api.get("/v1/memories", api.scopeQuery({ kinds: "note", limit: 200 }));
    for (const n of notes.results) api.seen.set(n.id, n);
    return notes;
  };
  if (!id) {
    const notes = await listNotes();
    if (!notes.results.length) return root.appendChild(info("This scope holds no notes (add with memory_type: note)."));
    root.appendChild(h("p", null, "Choose a note:"));
    return root.appendChild(picker(notes.results));
  }
  // The note the URL names first: its links do not wait on (or fail with) the scope's list.
  const center = await api.get("/v1/memories/" + encodeURIComponent(id) + "/links", api.scopeQuery());
  const notes = await listNotes();
  const around = [...new Set(center.results.map((l) => (l.from === id ? l.to : l.from)))];
  const edges = new Map();
  const addEdge = (l) => edges.set(l.from + ">" + l.to + ">" + l.kind, l);
  center.results.forEach(addEdge);
  const more = await Promise.all(around.map((n) => api.get("/v1/memories/" + encodeURIComponent(n) + "/links", api.scopeQuery()).then((r) => r.results).catch(() => [])));
  const inView = new Set([id, ...around]);
  more.flat().filter((l) => inView.has(l.from) && inView.has(l.to)).forEach(addEdge);
  const texts = new Map(await Promise.all([...inView].map(async (n) => [n, await textOf(n)])));
  const pos = new Map([[id, [W / 2, H / 2]]]);
  const r = Math.min(W, H) / 2 - 70;
  around.forEach((n, i) => {
    const a = (2 * Math.PI * i) / Math.max(around.length, 1) - Math.PI / 2;
    pos.set(n, [W / 2 + r * Math.cos(a), H / 2 + r * Math.sin(a)]);
  });
  const svg = s("svg", { viewBox: "0 0 " + W + " " + H, role: "img", "aria-label": "links of the note", id: "graph-svg" });
  svg.appendChild(s("title", null, "The note and the memories linked to it"));
  for (const l of edges.values()) {
    const [x1, y1] = pos.get(l.from);
    const [x2, y2] = pos.get(l.to);
    svg.appendChild(s("line", { x1, y1, x2, y2, stroke: l.kind === "supersedes" ? "#a11a1a" : "#7a8593", "stroke-width": 1 + 2 * Number(l.strength || 0), class: "edge" }));
    svg.appendChild(s("text", { x: (x1 + x2) / 2, y: (y1 + y2) / 2 - 4, fill: "#5c6166", "text-anchor": "middle" }, l.kind + (l.reason ? ": " + clip(l.reason, 30) : "")));
  }
  for (const [n, [x, y]] of pos) {
    const link = s("a", { href: "#/memory/" + n, class: "node" });
    link.appendChild(s("circle", { cx: x, cy: y, r: n === id ? 14 : 10, fill: n === id ? "#1f5fbf" : "#8fb0e0" }));
    link.appendChild(s("text", { x, y: y + 26, "text-anchor": "middle", fill: "#1d1f21" }, clip(texts.get(n) || short(n), 40)));
    svg.appendChild(link);
  }
  root.appendChild(h("p", null, clip(texts.get(id) || "", 200), " · ", String(around.length), " linked memories, ", String(edges.size), " links"));
  root.appendChild(h("div", { class: "graph" }, svg));
  if (notes.results.length) {
    root.appendChild(h("h2", null, "Other notes"));
    root.appendChild(picker(notes.results.filter((n) => n.id !== id)));
  }
}
