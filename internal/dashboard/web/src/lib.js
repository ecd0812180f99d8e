// What every page of the dashboard uses: building elements, calling the
// API, formatting figures, and the live event stream. Everything a program
// or a user wrote is put on the page as text (textContent), never as HTML.

// The nonce this script was given: styles that libraries make (xterm.js,
// CodeMirror) carry it, and the page's Content Security Policy admits them.
export const styleNonce = (document.currentScript && document.currentScript.nonce) || "";

// h builds an element: h("a", {href: "#/"}, "text", child...). Strings
// become text nodes; on* attributes become listeners.
export function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith("on")) el.addEventListener(k.slice(2), v);
    else if (k === "class") el.className = v;
    else el.setAttribute(k, v === true ? "" : v);
  }
  for (const c of children.flat()) {
    if (c === undefined || c === null || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

export function cookie(name) {
  const m = document.cookie.split("; ").find((c) => c.startsWith(name + "="));
  return m ? decodeURIComponent(m.slice(name.length + 1)) : "";
}

// APIError is the API's error body: code, message and findings.
export class APIError extends Error {
  constructor(status, body) {
    const e = (body && body.error) || {};
    super(e.message || `HTTP ${status}`);
    this.code = e.code || String(status);
    this.findings = e.findings || [];
  }
}

// api calls the v1 API on this origin, with the CSRF value the TCP
// listener wants on requests that change something.
export async function api(method, path, body, headers = {}) {
  const init = { method, headers: { ...headers }, credentials: "same-origin" };
  if (method !== "GET") init.headers["X-Sandboxd-CSRF"] = cookie("sandboxd_csrf");
  if (body !== undefined) {
    if (body instanceof Blob || body instanceof ArrayBuffer) init.body = body;
    else {
      init.body = JSON.stringify(body);
      init.headers["Content-Type"] = "application/json";
    }
  }
  const resp = await fetch(path, init);
  if (headers.Accept === "application/x-ndjson" && resp.ok) return resp;
  const text = await resp.text();
  const data = text && (resp.headers.get("Content-Type") || "").includes("json") ? JSON.parse(text) : text;
  if (!resp.ok) throw new APIError(resp.status, data);
  return data;
}

export const main = () => document.getElementById("main");
export const bytes = (n) => n < 1024 ? `${n} B` : n < 1 << 20 ? `${(n / 1024).toFixed(1)} KiB` : `${(n / (1 << 20)).toFixed(1)} MiB`;
export const when = (t) => t ? new Date(t).toLocaleString() : "";
// duration shows a Go duration ("1m2.5003s") to the second.
export const duration = (d) => d ? String(d).replace(/(\d+)\.\d+s$/, "$1s").replace(/\.\d+(ms|µs|ns)$/, "$1") : "";
export const ms = (n) => n === undefined ? "" : `${Number(n).toFixed(1)} ms`;
export const enc = encodeURIComponent;
export const filePath = (p) => p.split("/").map(enc).join("/");

export function errorBox(err) {
  return h("div", { class: "error", role: "alert" }, err.message || String(err));
}

export function table(columns, rows, empty = "None.") {
  if (!rows.length) return h("p", { class: "muted" }, empty);
  return h("table", {}, h("thead", {}, h("tr", {}, columns.map((c) => h("th", {}, c)))),
    h("tbody", {}, rows));
}

export function card(title, pairs) {
  return h("div", { class: "card" }, h("h2", {}, title),
    h("dl", {}, pairs.filter(([, v]) => v !== undefined && v !== "").flatMap(([k, v]) => [h("dt", {}, k), h("dd", {}, v)])));
}

export function outcomeBadge(o) {
  const cls = o === "ok" ? "ok" : o === "nonzero" ? "warn" : "bad";
  return h("span", { class: "badge " + cls }, o || "?");
}

export function executionRow(e, fresh) {
  return h("tr", { class: fresh ? "fresh" : "" },
    h("td", { class: "mono" }, e.id.slice(-8)),
    h("td", {}, when(e.started_at)),
    h("td", {}, e.language),
    h("td", {}, e.kind),
    h("td", {}, e.session ? h("a", { href: `#/sessions/${enc(e.session)}` }, e.session) : ""),
    h("td", {}, outcomeBadge(e.outcome), " ", e.exit_code >= 0 ? `exit ${e.exit_code}` : ""),
    h("td", {}, ms(e.timings && e.timings.total_ms)),
    h("td", {}, requester(e.requester)),
    h("td", {}, findingsList(e.findings), e.error ? h("span", { class: "bad" }, e.error) : ""));
}
export const executionColumns = ["ID", "Started", "Language", "Kind", "Session", "Outcome", "Total", "Asked by", "Findings / error"];

// requester names who asked, as sandboxd vouches for it: the socket's
// peer (user, uid and command), the dashboard (with its login's uid), or
// an E2B key.
export function requester(r) {
  if (!r) return "";
  let who = r.uid === undefined ? "uid ?" : r.user ? `${r.user} (uid ${r.uid})` : `uid ${r.uid}`;
  if (r.via === "e2b") who = `E2B key ${r.key}`;
  else if (r.via === "dashboard") who = `dashboard, signed in by ${who}`;
  else if (r.process) who += ` via ${r.process}`;
  return r.client ? `${who} (client "${r.client}")` : who;
}

// severe: a finding of severity error or critical (others are info and
// warning).
export const severe = (f) => f.severity === "error" || f.severity === "critical";

export function findingsList(findings) {
  if (!findings || !findings.length) return "";
  return h("ul", { class: "listing" }, findings.map((f) =>
    h("li", {}, h("span", { class: severe(f) ? "bad" : "warn" }, `${f.policy}/${f.rule}`),
      f.line ? ` line ${f.line}: ` : ": ", f.message)));
}

// annotated shows code with each finding under its line; firstLine is
// the line of the file the code begins at (a part of a larger file).
export function annotated(code, findings, firstLine) {
  const base = (firstLine || 1) - 1;
  const byLine = {};
  for (const f of findings) (byLine[f.line || 0] = byLine[f.line || 0] || []).push(f);
  const lines = code.replace(/\n$/, "").split("\n");
  return h("div", { class: "annotated mono" },
    (byLine[0] || []).map((f) => h("div", { class: "finding" }, `${f.policy}/${f.rule}: ${f.message}`)),
    lines.map((text, i) => h("div", { class: "line" + (byLine[base + i + 1] ? " hit" : "") },
      h("span", { class: "num" }, String(base + i + 1)), h("pre", {}, text || " "),
      (byLine[base + i + 1] || []).map((f) => h("div", { class: "finding" }, `▲ ${f.policy}/${f.rule}: ${f.message}`)))));
}

// ---- live events -------------------------------------------------------------

// One EventSource for the page's life; pages subscribe while shown.
const listeners = new Set();
let events;
export function live(fn) {
  listeners.add(fn);
  if (!events) {
    events = new EventSource("/v1/events");
    const status = document.getElementById("live");
    events.onopen = () => { status.textContent = "● live"; };
    events.onerror = () => { status.textContent = "○ reconnecting"; };
    for (const type of ["stats", "execution", "sample"]) {
      events.addEventListener(type, (e) => {
        const data = JSON.parse(e.data);
        for (const l of listeners) l(type, data);
      });
    }
  }
  return () => listeners.delete(fn);
}

// readEvents reads an NDJSON response line by line as it comes.
export async function readEvents(resp, signal, on) {
  const reader = resp.body.getReader();
  signal.addEventListener("abort", () => reader.cancel());
  const decoder = new TextDecoder();
  let buf = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buf += decoder.decode(value, { stream: true });
    let nl;
    while ((nl = buf.indexOf("\n")) >= 0) {
      const line = buf.slice(0, nl);
      buf = buf.slice(nl + 1);
      if (line.trim()) on(JSON.parse(line));
    }
  }
}

