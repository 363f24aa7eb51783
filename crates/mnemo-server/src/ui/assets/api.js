// The one way the inspector reaches data: the public /v1 API, same origin, with the API key the
// user typed (kept in this tab's sessionStorage, sent as a Bearer header, never a cookie).

const KEY = "mnemo.key";
const SCOPE = "mnemo.scope";

export class ApiError extends Error {
  constructor(status, kind, message) {
    super(message);
    this.status = status;
    this.kind = kind;
  }
}

export function key() {
  return sessionStorage.getItem(KEY);
}

export function setKey(k) {
  if (k === null) sessionStorage.removeItem(KEY);
  else sessionStorage.setItem(KEY, k);
}

/** The scope the views work in: {user_id, agent_id, run_id}, any of them absent. */
export function scope() {
  try {
    return JSON.parse(sessionStorage.getItem(SCOPE) || "{}");
  } catch {
    return {};
  }
}

export function setScope(sc) {
  const clean = {};
  for (const k of ["user_id", "agent_id", "run_id"]) if (sc[k]) clean[k] = sc[k];
  sessionStorage.setItem(SCOPE, JSON.stringify(clean));
}

export function scopeQuery(extra) {
  return Object.assign({}, scope(), extra || {});
}

function url(path, query) {
  const u = new URL(path, location.origin);
  for (const [k, v] of Object.entries(query || {})) {
    if (v !== undefined && v !== null && v !== "") u.searchParams.set(k, String(v));
  }
  return u.pathname + u.search;
}

/** Calls the API; resolves to the parsed answer or rejects with an ApiError. */
export async function call(method, path, opts) {
  const o = opts || {};
  const headers = { Accept: "application/json" };
  const k = key();
  if (k) headers.Authorization = "Bearer " + k;
  let body;
  if (o.body !== undefined) {
    headers["Content-Type"] = "application/json";
    body = JSON.stringify(o.body);
  }
  let resp;
  try {
    resp = await fetch(url(path, o.query), { method, headers, body, credentials: "omit", cache: "no-store" });
  } catch (e) {
    throw new ApiError(0, "network", "the server could not be reached: " + e.message);
  }
  const text = await resp.text();
  let data = null;
  try {
    data = text ? JSON.parse(text) : null;
  } catch {
    data = text;
  }
  if (!resp.ok) {
    const err = data && data.error ? data.error : {};
    let message = err.message || "the server answered " + resp.status;
    if (resp.status === 404 && err.kind === "route_not_found") {
      message = "not available on this server: " + method + " " + path.split("?")[0] + " is not a route of this mnemo version";
    }
    throw new ApiError(resp.status, err.kind || "http_" + resp.status, message);
  }
  return data;
}

export const get = (path, query) => call("GET", path, { query });
export const post = (path, body, query) => call("POST", path, { body, query });
export const put = (path, body, query) => call("PUT", path, { body, query });
export const del = (path, query) => call("DELETE", path, { query });

/** Memories met in lists and searches, by id: the memory view falls back on them for a record
 *  the by-id route does not return (a superseded or deleted one, on a server without
 *  `?detail=true`). */
export const seen = new Map();
