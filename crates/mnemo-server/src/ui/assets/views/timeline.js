// The scope's timeline (GET /v1/timeline): memories in the order their events happened, each
// with its event time, the day it was said and the turn it was read from; cursor-paged.

import * as api from "../api.js";
import { chip, h, info, table } from "../dom.js";

const DAY = { timeZone: "UTC", weekday: "short", day: "numeric", month: "long", year: "numeric" };

function day(t) {
  return new Date(t).toLocaleDateString("en-GB", DAY);
}

/** When it happened, at its granularity (the pack's words, shortened). */
function happened(e) {
  const start = new Date(e.start);
  switch (e.granularity) {
    case "year": return String(start.getUTCFullYear());
    case "month": return start.toLocaleDateString("en-GB", { timeZone: "UTC", month: "long", year: "numeric" });
    case "week": return "week of " + day(e.start);
    case "season": return "season from " + day(e.start);
    default: return day(e.start);
  }
}

export async function render(root, params) {
  root.appendChild(h("h1", null, "Timeline"));
  const page = await api.get("/v1/timeline", api.scopeQuery({ cursor: params.get("cursor"), limit: params.get("limit") || 100 }));
  if (!page.results.length) {
    root.appendChild(info("No memory of this scope says when it happened."));
    return;
  }
  root.appendChild(table(["When", "Memory", "Read from", "Said"], page.results.map((m) => [
    h("span", { class: "when", title: m.event_time.start + " – " + m.event_time.end }, happened(m.event_time), " ", chip(m.event_time.granularity)),
    h("a", { href: "#/memory/" + m.id, class: "mem-link" }, m.memory),
    h("span", { class: "phrase" }, m.event_time.phrase ? "‘" + m.event_time.phrase + "’ (" + m.event_time.source + ")" : m.event_time.source),
    h("span", { class: "said" }, day(m.created_at), m.source_text && m.source_text !== m.memory ? [h("br"), h("q", null, m.source_text)] : null),
  ]), { class: "wide", id: "timeline-table" }));
  if (page.next_cursor) {
    root.appendChild(h("p", null, h("a", { id: "timeline-next", href: "#/timeline?cursor=" + encodeURIComponent(page.next_cursor) }, "Later events →")));
  }
}
