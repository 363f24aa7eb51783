// DOM building for the inspector. Every piece of data becomes a text node (textContent or
// createTextNode); no HTML string is ever parsed, so memory text or metadata holding markup
// shows as the characters it is.

const SVG_NS = "http://www.w3.org/2000/svg";

function apply(el, attrs) {
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === "on") {
      for (const [ev, fn] of Object.entries(v)) el.addEventListener(ev, fn);
    } else if (k === "class") {
      el.setAttribute("class", v);
    } else if (k === "value" || k === "checked" || k === "selected") {
      el[k] = v;
    } else {
      el.setAttribute(k, v === true ? "" : String(v));
    }
  }
}

function append(el, children) {
  for (const c of children.flat(Infinity)) {
    if (c === undefined || c === null || c === false) continue;
    el.appendChild(c instanceof Node ? c : document.createTextNode(String(c)));
  }
}

/** An element: `h("td", {class: "x"}, "text", child, [more])`. */
export function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  apply(el, attrs);
  append(el, children);
  return el;
}

/** An SVG element, built the same way. */
export function s(tag, attrs, ...children) {
  const el = document.createElementNS(SVG_NS, tag);
  apply(el, attrs);
  append(el, children);
  return el;
}

export function clear(el) {
  while (el.firstChild) el.removeChild(el.firstChild);
  return el;
}

/** A table: `table(["a", "b"], [[cell, cell], …], {class})`. */
export function table(head, rows, attrs) {
  return h("table", attrs,
    h("thead", null, h("tr", null, head.map((x) => h("th", { scope: "col" }, x)))),
    h("tbody", null, rows.map((r) => (r instanceof Node ? r : h("tr", null, r.map((c) => h("td", null, c)))))));
}

/** A two-column key/value table. */
export function kv(pairs) {
  return h("table", { class: "kv" },
    h("tbody", null, pairs.filter((p) => p).map(([k, v]) => h("tr", null, h("th", { scope: "row" }, k), h("td", null, v)))));
}

export function chip(text, cls) {
  return h("span", { class: "chip" + (cls ? " " + cls : "") }, text);
}

/** A clear message in the page for a failed call (its kind and the server's words). */
export function errorBox(err) {
  const what = err && err.kind ? err.kind + ": " : "";
  return h("div", { class: "notice", role: "alert" }, what + (err && err.message ? err.message : String(err)));
}

export function info(text) {
  return h("div", { class: "info" }, text);
}

/** Time as the browser's locale shows it, with the exact value in a tooltip. */
export function when(t) {
  if (!t) return h("span", { class: "muted" }, "—");
  const d = new Date(t);
  return h("time", { datetime: t, title: t }, isNaN(d) ? t : d.toLocaleString());
}

/** A value's JSON type name: what the store keeps, shown next to it. */
export function typeOf(v) {
  if (v === null) return "null";
  if (Array.isArray(v)) return "array";
  if (typeof v === "number") return Number.isInteger(v) ? "integer" : "number";
  return typeof v;
}

export function short(id) {
  return id ? String(id).slice(0, 8) + "…" + String(id).slice(-4) : "";
}

/** The form's fields as an object of trimmed, non-empty strings. */
export function formValues(form) {
  const out = {};
  for (const [k, v] of new FormData(form).entries()) {
    const t = String(v).trim();
    if (t !== "") out[k] = t;
  }
  return out;
}
