// sandboxd's dashboard: plain DOM pages over the v1 API (lib.js), with
// xterm.js for terminals, CodeMirror for code (editor.js), uPlot for
// charts (charts.js) and a notebook on a session's contexts (notebook.js).
import { Terminal } from "@xterm/xterm";
import { FitAddon } from "@xterm/addon-fit";
import {
  h, api, errorBox, table, card, outcomeBadge, executionRow, executionColumns, findingsList, annotated, live, readEvents,
  main, bytes, when, duration, ms, enc, filePath, styleNonce, requester,
} from "./lib.js";
import { codeEditor } from "./editor.js";
import { overviewCharts, usageSparklines } from "./charts.js";
import { notebookPage } from "./notebook.js";

// xterm.js makes <style> elements; the page's Content Security Policy
// admits those that carry the nonce this script was given.
if (styleNonce) {
  const create = Document.prototype.createElement;
  Document.prototype.createElement = function (tag, options) {
    const el = create.call(this, tag, options);
    if (String(tag).toLowerCase() === "style") el.setAttribute("nonce", styleNonce);
    return el;
  };
}

// Policy violations are kept where a test (or a person in devtools) can
// see them.
window.cspViolations = [];
document.addEventListener("securitypolicyviolation", (e) =>
  window.cspViolations.push(`${e.violatedDirective}: ${e.blockedURI || "inline"}`));

// ---- pages -------------------------------------------------------------------

async function overview(root, signal) {
  const [health, executions, languages] = await Promise.all([
    // 503 when degraded, with the same body: shown, not thrown.
    fetch("/v1/health", { credentials: "same-origin" }).then((r) => r.json()).catch(() => null),
    api("GET", "/v1/executions?limit=15"),
    api("GET", "/v1/languages"),
  ]);
  const hv = health || { status: "unreachable", docker: {}, plugins: [] };
  const pools = h("div");
  const drawPools = (stats) => {
    const rows = Object.entries(stats).sort().map(([lang, p]) => {
      const served = p.hits + p.misses;
      return h("tr", {}, h("td", {}, lang), h("td", {}, p.idle), h("td", {}, p.busy), h("td", {}, p.target),
        h("td", {}, p.max), h("td", {}, served ? `${((100 * p.hits) / served).toFixed(0)}% of ${served}` : "—"),
        h("td", {}, p.warm ? `${p.warm_hits} warm, ${p.warm_misses} cold${p.warm_failures ? `, ${p.warm_failures} failed` : ""}` : "—"),
        h("td", { class: "bad" }, p.last_error || ""));
    });
    pools.replaceChildren(table(["Language", "Idle", "Busy", "Target", "Max", "Pool hits", "Runtimes started ahead", "Last error"], rows));
  };
  drawPools(Object.fromEntries(languages.languages.map((l) => [l.name, l.pool])));
  const counters = h("span", { class: "muted" });
  const charts = h("div", { class: "charts", id: "charts" });
  const body = h("tbody", {}, executions.executions.map((e) => executionRow(e)));
  root.replaceChildren(
    h("h1", {}, "Overview"),
    h("div", { class: "grid" },
      card("Health", [["Status", h("span", { class: hv.status === "ok" ? "ok" : "bad" }, hv.status)], ["Version", hv.version],
        ["Uptime", duration(hv.uptime)], ["Problems", (hv.problems || []).join("; ")]]),
      card("Engine", [["Docker", hv.docker.version], ["API", hv.docker.api_version], ["Runtime", hv.docker.runtime], ["Error", hv.docker.error]]),
      card("Plugins", (hv.plugins || []).map((p) => [`${p.kind} ${p.name}`,
        h("span", { class: p.running ? "ok" : "bad" }, p.running ? `running ${p.version || ""}` : p.last_error || "stopped")]))),
    h("h2", {}, "The last hour"), charts,
    h("h2", {}, "Pools ", counters), pools,
    h("h2", {}, "Recent executions"),
    h("table", { id: "recent" }, h("thead", {}, h("tr", {}, executionColumns.map((c) => h("th", {}, c)))), body));
  const drawStats = (st) => {
    drawPools(st.pools || {});
    counters.textContent = `· ${st.executions} executions, ${st.in_flight} running, ${st.sessions} sessions`;
  };
  const stop = live((type, data) => {
    if (type === "stats") return drawStats(data);
    if (type !== "execution") return;
    body.prepend(executionRow(data, true));
    while (body.children.length > 50) body.lastChild.remove();
    // The figures move with each execution, not only every 2 s.
    api("GET", "/v1/stats").then(drawStats, () => {});
  });
  signal.addEventListener("abort", stop);
  await overviewCharts(charts, signal);
}

async function languagesPage(root) {
  const { languages } = await api("GET", "/v1/languages");
  root.replaceChildren(h("h1", {}, "Languages"), table(
    ["Name", "Version", "Extensions", "Aliases", "Image", "Runtime", "Limits", "Network", "Contexts", "Pool"],
    languages.map((l) => h("tr", {},
      h("td", {}, h("strong", {}, l.name), h("div", { class: "muted" }, l.display_name)),
      h("td", {}, l.version || ""), h("td", {}, (l.extensions || []).join(" ")), h("td", {}, (l.aliases || []).join(" ")),
      h("td", { class: "mono" }, l.image, l.building ? h("div", { class: "muted" }, `building: ${l.building.step}`)
        : l.image_present ? "" : h("div", { class: "bad" }, "missing")),
      h("td", {}, l.runtime),
      h("td", {}, `${l.limits.timeout}, ${bytes(l.limits.memory)}, ${l.limits.cpus} CPU, ${l.limits.pids} pids`),
      h("td", {}, (l.network.allow || []).join(", ") || "none"),
      h("td", {}, l.contexts ? "yes" : ""),
      h("td", {}, `${l.pool.idle} idle / ${l.pool.target} target`),
    ))));
}

async function languageSelect(name = "language") {
  const { languages } = await api("GET", "/v1/languages");
  return h("select", { name, "aria-label": "language" }, languages.map((l) => h("option", { value: l.name }, l.name)));
}

async function sessionsPage(root) {
  const [{ sessions }, select] = await Promise.all([api("GET", "/v1/sessions"), languageSelect()]);
  const failure = h("div");
  const ttl = h("input", { name: "ttl", placeholder: "ttl, e.g. 30m", size: 10 });
  const create = async (ev) => {
    ev.preventDefault();
    try {
      const s = await api("POST", "/v1/sessions", { language: select.value, ...(ttl.value ? { ttl: ttl.value } : {}) });
      location.hash = `#/sessions/${enc(s.id)}`;
    } catch (err) { failure.replaceChildren(errorBox(err)); }
  };
  const act = (fn) => async () => {
    try { await fn(); route(); } catch (err) { failure.replaceChildren(errorBox(err)); }
  };
  root.replaceChildren(
    h("h1", {}, "Sessions"),
    h("form", { class: "inline", onsubmit: create }, select, ttl, h("button", { type: "submit" }, "Create session")),
    failure,
    table(["ID", "Language", "State", "Created", "Expires", "Execs", ""], sessions.map((s) => h("tr", {},
      h("td", { class: "mono" }, h("a", { href: `#/sessions/${enc(s.id)}` }, s.id)),
      h("td", {}, s.language),
      h("td", {}, h("span", { class: s.state === "active" ? "ok" : "bad" }, s.state), s.error ? ` (${s.error})` : ""),
      h("td", {}, when(s.created_at)), h("td", {}, when(s.expires_at)), h("td", {}, s.executions),
      h("td", {}, h("button", { class: "secondary", onclick: act(() => api("POST", `/v1/sessions/${enc(s.id)}/reset`)) }, "Reset"), " ",
        h("button", { class: "danger", onclick: act(() => api("DELETE", `/v1/sessions/${enc(s.id)}`)) }, "Delete")))),
    "No sessions. Create one above."));
}

async function sessionPage(root, signal, id) {
  const [s, { languages }] = await Promise.all([api("GET", `/v1/sessions/${enc(id)}`), api("GET", "/v1/languages")]);
  const lang = languages.find((l) => l.name === s.language) || {};
  const contexts = lang.contexts;
  const usage = h("div", { class: "usage", id: "usage" });
  const failure = h("div");
  const termBox = h("div", { class: "terminal", id: "terminal" });
  const files = h("div", { id: "files" });
  const execs = h("div");
  const ports = h("div", { id: "ports" });
  const screen = lang.desktop ? desktopScreen(id, lang.desktop, signal) : "";
  root.replaceChildren(
    h("h1", {}, `Session ${s.id}`),
    h("div", { class: "toolbar" },
      h("span", {}, `${s.language} · `, h("span", { class: s.state === "active" ? "ok" : "bad" }, s.state),
        ` · expires ${when(s.expires_at)} · ${s.executions} executions`),
      contexts ? h("a", { class: "button", href: `#/sessions/${enc(id)}/notebook` }, "Open the notebook") : "",
      h("button", { class: "secondary", onclick: async () => {
        try { await api("POST", `/v1/sessions/${enc(id)}/reset`); route(); } catch (err) { failure.replaceChildren(errorBox(err)); }
      } }, "Reset"),
      h("button", { class: "danger", onclick: async () => {
        try { await api("DELETE", `/v1/sessions/${enc(id)}`); location.hash = "#/sessions"; } catch (err) { failure.replaceChildren(errorBox(err)); }
      } }, "Delete")),
    failure,
    h("h2", {}, "What it uses"), usage,
    screen,
    h("h2", {}, "Terminal"), termBox,
    h("h2", {}, "Ports"), ports,
    h("div", { class: "two" }, h("div", {}, h("h2", {}, "Files"), files), h("div", {}, h("h2", {}, "Executions"), execs)));
  openTerminal(termBox, id, signal);
  usageSparklines(usage, id, signal);
  fileBrowser(files, id, ".");
  portList(ports, id, signal);
  const drawExecs = async () => {
    const { executions } = await api("GET", `/v1/executions?session=${enc(id)}&limit=30`);
    execs.replaceChildren(table(["ID", "Started", "Kind", "Outcome", "Total"], executions.map((e) => h("tr", {},
      h("td", { class: "mono" }, e.id.slice(-8)), h("td", {}, when(e.started_at)), h("td", {}, e.kind),
      h("td", {}, outcomeBadge(e.outcome), ` exit ${e.exit_code}`), h("td", {}, ms(e.timings && e.timings.total_ms))))));
  };
  await drawExecs();
  const stop = live((type, data) => { if (type === "execution" && data.session === id) drawExecs(); });
  signal.addEventListener("abort", stop);
}

// desktopScreen is a desktop session's live view: watched, view-only,
// until the person takes control; the view's module (noVNC) loads on
// such a page alone.
function desktopScreen(id, size, signal) {
  const [width, height] = size.split("x").map(Number);
  const view = h("div", { class: "screen", id: "screen" });
  view.style.aspectRatio = `${width} / ${height}`; // CSSOM: the page's policy refuses style attributes
  const status = h("span", { class: "muted", id: "screen-status" }, "connecting…");
  const control = h("button", { class: "secondary", id: "take-control" }, "Take control");
  import(new URL("vnc.js", document.baseURI).href)
    .then(({ liveView }) => liveView(view, status, control, id, signal))
    .catch((err) => status.replaceChildren(errorBox(err)));
  return h("div", {}, h("h2", {}, "Screen"), h("div", { class: "toolbar" }, status, control), view);
}

// portList shows the ports servers listen on in the session, live, each
// with a button that makes a preview link: a token for that port alone,
// opened at an origin of its own.
function portList(box, id, signal) {
  let shown = null;
  const links = {};
  const draw = async () => {
    const { ports } = await api("GET", `/v1/sessions/${enc(id)}/ports`);
    const key = ports.map((p) => p.port).join() + Object.keys(links).join();
    if (key === shown) return;
    shown = key;
    box.replaceChildren(ports.length ? table(["Port", "Address", ""], ports.map((p) => h("tr", {},
      h("td", { class: "mono" }, String(p.port)), h("td", { class: "mono" }, p.address),
      h("td", {}, links[p.port] ? h("a", { class: "preview", href: links[p.port], target: "_blank", rel: "noopener" }, "Open the preview")
        : h("button", { class: "secondary", onclick: async () => {
          try {
            links[p.port] = (await api("POST", `/v1/sessions/${enc(id)}/ports/${p.port}/preview`, { ttl: "1h" })).url;
            await draw();
          } catch (err) { box.append(errorBox(err)); }
        } }, "Preview link"))))) : h("p", { class: "muted" }, "No server listens in the sandbox."));
  };
  draw().catch((err) => box.replaceChildren(errorBox(err)));
  const timer = setInterval(() => draw().catch(() => {}), 2000);
  signal.addEventListener("abort", () => clearInterval(timer));
}

// openTerminal connects an xterm.js terminal to the session's terminal
// WebSocket: keys and screen as binary frames, resizes as JSON.
function openTerminal(box, id, signal) {
  const term = new Terminal({ convertEol: false, cursorBlink: true, fontSize: 13, scrollback: 2000 });
  const fit = new FitAddon();
  term.loadAddon(fit);
  term.open(box);
  fit.fit();
  const scheme = location.protocol === "https:" ? "wss" : "ws";
  const ws = new WebSocket(`${scheme}://${location.host}/v1/sessions/${enc(id)}/terminal?rows=${term.rows}&cols=${term.cols}`);
  ws.binaryType = "arraybuffer";
  const encoder = new TextEncoder();
  ws.onmessage = (m) => {
    if (typeof m.data !== "string") return term.write(new Uint8Array(m.data));
    const c = JSON.parse(m.data);
    if (c.type === "exit") term.write(`\r\n\x1b[2m[exited ${c.exit_code}${c.timed_out ? ", at the deadline" : ""}]\x1b[0m\r\n`);
    if (c.type === "error") term.write(`\r\n\x1b[31m[${c.error.code}: ${c.error.message}]\x1b[0m\r\n`);
  };
  ws.onclose = () => term.write("\r\n\x1b[2m[disconnected — reload the page for a new terminal]\x1b[0m\r\n");
  term.onData((d) => ws.readyState === WebSocket.OPEN && ws.send(encoder.encode(d)));
  term.onResize(({ rows, cols }) => ws.readyState === WebSocket.OPEN && ws.send(JSON.stringify({ type: "resize", rows, cols })));
  const refit = () => fit.fit();
  window.addEventListener("resize", refit);
  signal.addEventListener("abort", () => { window.removeEventListener("resize", refit); ws.close(); term.dispose(); });
  term.focus();
  window.sandboxdTerminal = term; // for tests: what the screen shows
}

async function fileBrowser(box, id, dir) {
  const failure = h("div");
  const refresh = () => fileBrowser(box, id, dir);
  let list;
  try {
    list = await api("GET", `/v1/sessions/${enc(id)}/files?path=${enc(dir)}`);
  } catch (err) {
    box.replaceChildren(errorBox(err));
    return;
  }
  const upload = h("input", { type: "file", name: "upload", "aria-label": "upload a file" });
  upload.addEventListener("change", async () => {
    try {
      for (const f of upload.files) {
        const to = dir === "." ? f.name : `${dir}/${f.name}`;
        await api("PUT", `/v1/sessions/${enc(id)}/files/${filePath(to)}`, f);
      }
      refresh();
    } catch (err) { failure.replaceChildren(errorBox(err)); }
  });
  const parent = dir === "." ? null : dir.includes("/") ? dir.slice(0, dir.lastIndexOf("/")) : ".";
  const rows = list.entries.map((e) => {
    const name = e.path.slice(e.path.lastIndexOf("/") + 1);
    const link = e.type === "dir"
      ? h("a", { href: "#", onclick: (ev) => { ev.preventDefault(); fileBrowser(box, id, e.path); } }, name + "/")
      : e.type === "file"
        ? h("a", { href: `/v1/sessions/${enc(id)}/files/${filePath(e.path)}`, download: name }, name)
        : h("span", {}, name, e.target ? ` → ${e.target}` : "", h("span", { class: "muted" }, ` (${e.type})`));
    return h("tr", {}, h("td", { class: "mono" }, link), h("td", {}, e.type === "file" ? bytes(e.size) : ""),
      h("td", { class: "mono" }, e.mode), h("td", {}, when(e.mtime)),
      h("td", {}, h("button", { class: "danger", title: `delete ${e.path}`, onclick: async () => {
        if (!confirm(`Delete ${e.path}?`)) return;
        try { await api("DELETE", `/v1/sessions/${enc(id)}/files/${filePath(e.path)}`); refresh(); } catch (err) { failure.replaceChildren(errorBox(err)); }
      } }, "Delete")));
  });
  box.replaceChildren(
    h("div", { class: "toolbar" }, h("span", { class: "mono" }, `/workspace/${dir === "." ? "" : dir}`),
      parent !== null ? h("a", { href: "#", onclick: (ev) => { ev.preventDefault(); fileBrowser(box, id, parent); } }, "↑ up") : "",
      h("label", {}, "Upload ", upload), h("button", { class: "secondary", onclick: refresh }, "Refresh")),
    failure,
    table(["Name", "Size", "Mode", "Modified", ""], rows, "Empty."));
}

async function runPage(root, signal) {
  const select = await languageSelect();
  const { languages } = await api("GET", "/v1/languages");
  const languageOf = () => languages.find((l) => l.name === select.value);
  const codeBox = h("div", { class: "editor", id: "code" });
  const stdin = h("input", { name: "stdin", placeholder: "stdin (optional)", size: 30 });
  const output = h("pre", { class: "output", id: "output", "aria-live": "polite" });
  const summary = h("div", { id: "summary" });
  const button = h("button", { type: "submit" }, "Run");
  let editor;
  const submit = async (ev) => {
    if (ev) ev.preventDefault();
    if (button.disabled) return;
    button.disabled = true;
    output.replaceChildren();
    editor.showFindings([]);
    summary.replaceChildren(h("span", { class: "muted" }, "running…"));
    const shown = (findings) => { editor.showFindings(findings); return findingsList(findings); };
    try {
      const resp = await api("POST", "/v1/run", { language: select.value, code: editor.value, ...(stdin.value ? { stdin: stdin.value } : {}) },
        { Accept: "application/x-ndjson" });
      await readEvents(resp, signal, (e) => {
        if (e.type === "stdout" || e.type === "stderr") {
          const text = e.encoding === "base64" ? atob(e.data) : e.data;
          output.append(h("span", { class: e.type }, text));
        } else if (e.type === "queued") {
          summary.replaceChildren(h("span", { class: "muted" }, `waiting: ${e.data}…`));
        } else if (e.type === "result") {
          const r = e.result;
          summary.replaceChildren(h("p", {}, outcomeBadge(r.timed_out ? "timeout" : r.oom_killed ? "oom" : r.exit_code ? "nonzero" : "ok"),
            ` exit ${r.exit_code} · ${ms(r.duration_ms)} in the sandbox · ${ms(r.timings && r.timings.total_ms)} in all`,
            r.timings && r.timings.queue_reason ? ` · waited: ${r.timings.queue_reason}` : "",
            r.truncated ? " · output truncated" : ""),
          shown(r.findings));
        } else if (e.type === "error") {
          summary.replaceChildren(errorBox(e.error), shown(e.error.findings));
        }
      });
    } catch (err) {
      summary.replaceChildren(errorBox(err), shown(err.findings));
    } finally {
      button.disabled = false;
    }
  };
  select.addEventListener("change", () => editor.setLanguage(languageOf()));
  root.replaceChildren(h("h1", {}, "Run"),
    h("form", { onsubmit: submit }, h("div", { class: "toolbar" }, select, stdin, button,
      h("span", { class: "muted" }, "Ctrl-Enter runs")), codeBox),
    h("h2", {}, "Output"), output, summary);
  editor = codeEditor(codeBox, { doc: 'print("hello from sandboxd")\n', language: languageOf(), onRun: () => submit() });
  signal.addEventListener("abort", () => editor.destroy());
}

async function historyPage(root, signal, _, params) {
  const filters = ["language", "session", "kind", "outcome"];
  const inputs = Object.fromEntries(filters.map((f) => [f, h("input", { name: f, placeholder: f, size: 12, value: params.get(f) || "" })]));
  inputs.kind = h("select", { name: "kind", "aria-label": "kind" }, ["", "run", "exec", "terminal"].map((k) =>
    h("option", { value: k, selected: params.get("kind") === k }, k || "any kind")));
  inputs.outcome = h("select", { name: "outcome", "aria-label": "outcome" }, ["", "ok", "nonzero", "timeout", "oom", "error", "denied"].map((k) =>
    h("option", { value: k, selected: params.get("outcome") === k }, k || "any outcome")));
  const q = new URLSearchParams({ limit: "100" });
  for (const f of filters) if (params.get(f)) q.set(f, params.get(f));
  const { executions } = await api("GET", `/v1/executions?${q}`);
  const apply = (ev) => {
    ev.preventDefault();
    const next = new URLSearchParams();
    for (const f of filters) if (inputs[f].value) next.set(f, inputs[f].value);
    location.hash = `#/history?${next}`;
  };
  root.replaceChildren(h("h1", {}, "History"),
    h("form", { class: "inline", onsubmit: apply }, filters.map((f) => inputs[f]), h("button", { type: "submit" }, "Filter")),
    table(executionColumns, executions.map((e) => executionRow(e)), "No executions match."));
}

// approvalsPage lists the requests asking policies hold for a person, live:
// each with what it would run and the findings at their lines, to approve
// or deny (with a reason, which its client is told); the decided ones
// below, with who decided.
async function approvalsPage(root, signal) {
  const pendingBox = h("div", { id: "pending" });
  const decidedBox = h("div", { id: "decided" });
  root.replaceChildren(h("h1", {}, "Approvals"),
    h("p", { class: "muted" }, "Requests a policy in mode \"ask\" holds until a person decides. Decisions are recorded with who made them."),
    h("h2", {}, "Pending"), pendingBox, h("h2", {}, "Decided"), decidedBox);
  let shown = null;
  const draw = async () => {
    const { approvals } = await api("GET", "/v1/approvals");
    const pending = approvals.filter((a) => a.state === "pending");
    // Redrawn only when the list changes: a reason being typed stays.
    const key = approvals.map((a) => a.id + a.state).join();
    if (key === shown) return;
    shown = key;
    pendingBox.replaceChildren(...(pending.length ? pending.map(approvalCard) : [h("p", { class: "muted" }, "Nothing waits for a decision.")]));
    decidedBox.replaceChildren(table(["ID", "Decision", "Kind", "Language", "Asked by", "Decided by", "Reason", "Decided"],
      approvals.filter((a) => a.state !== "pending").slice(0, 30).map((a) => h("tr", {},
        h("td", { class: "mono" }, a.id), h("td", {}, h("span", { class: "badge " + (a.state === "approved" ? "ok" : "bad") }, a.state)),
        h("td", {}, a.kind), h("td", {}, a.language), h("td", {}, requester(a.requested_by)), h("td", {}, a.by || ""),
        h("td", {}, a.reason || ""), h("td", {}, when(a.decided)))),
      "None yet."));
  };
  const approvalCard = (a) => {
    const reason = h("input", { name: "reason", placeholder: "reason (required to deny)", size: 40 });
    const failure = h("div");
    const decide = (verb) => async () => {
      if (verb === "deny" && !reason.value.trim()) {
        failure.replaceChildren(errorBox(new Error("Say why: the client that asked is told.")));
        return;
      }
      try {
        await api("POST", `/v1/approvals/${enc(a.id)}/${verb}`, { reason: reason.value });
        shown = null;
        await draw();
      } catch (err) { failure.replaceChildren(errorBox(err)); }
    };
    return h("div", { class: "card approval", "data-id": a.id },
      h("h2", {}, `${a.kind} in ${a.language}`, h("span", { class: "muted" }, ` · ${a.id}${a.session ? " · session " + a.session : ""} · asked ${when(a.created)} · expires ${when(a.deadline)}`),
        a.waiting ? "" : h("span", { class: "warn" }, " · its client no longer waits")),
      h("p", {}, h("span", { class: "bad" }, `${a.question.policy}/${a.question.rule}`), `: ${a.question.message}`),
      a.requested_by ? h("p", { class: "muted" }, `asked by ${requester(a.requested_by)}`) : "",
      (a.refused || []).map((r) => h("p", { class: "warn" }, `refused ${when(r.at)}: ${requester(r.by)} tried to decide: ${r.reason}`)),
      a.argv && a.argv.length ? h("pre", { class: "mono" }, "$ " + a.argv.join(" ")) : "",
      (a.files || []).flatMap((f) => [h("h3", { class: "mono" }, f.path + (f.truncated ? " (cut)" : "")),
        annotated(f.content, (a.findings || []).filter((x) => !x.file || x.file === f.path), f.first_line)]),
      h("div", { class: "toolbar" }, reason,
        h("button", { onclick: decide("approve") }, "Approve"),
        h("button", { class: "danger", onclick: decide("deny") }, "Deny")),
      failure);
  };
  await draw();
  const timer = setInterval(() => draw().catch(() => {}), 1500);
  signal.addEventListener("abort", () => clearInterval(timer));
}

async function projectsPage(root) {
  const { projects } = await api("GET", "/v1/projects");
  const failure = h("div");
  const name = h("input", { name: "name", placeholder: "project name", required: true });
  const create = async (ev) => {
    ev.preventDefault();
    try { await api("POST", "/v1/projects", { name: name.value }); route(); } catch (err) { failure.replaceChildren(errorBox(err)); }
  };
  const act = (fn) => async () => { try { await fn(); route(); } catch (err) { failure.replaceChildren(errorBox(err)); } };
  root.replaceChildren(h("h1", {}, "Projects"),
    h("p", { class: "muted" }, "A project's files are read-only at /workspace/project_files in the sessions created with it."),
    h("form", { class: "inline", onsubmit: create }, name, h("button", { type: "submit" }, "Create project")),
    failure,
    projects.length ? projects.map((p) => {
      const upload = h("input", { type: "file", "aria-label": `add a file to ${p.name}` });
      upload.addEventListener("change", act(async () => {
        for (const f of upload.files) await api("POST", `/v1/projects/${enc(p.id)}/files?name=${enc(f.name)}&overwrite=true`, f);
      }));
      return h("div", { class: "card" },
        h("h2", {}, p.name, h("span", { class: "muted" }, ` · ${p.id} · ${bytes(p.size)} · used by ${(p.sessions || []).length} sessions`)),
        table(["File", "Size", "SHA-256", "Added", ""], (p.files || []).map((f) => h("tr", {},
          h("td", { class: "mono" }, h("a", { href: `/v1/projects/${enc(p.id)}/files/${filePath(f.name)}`, download: f.name.split("/").pop() }, f.name)),
          h("td", {}, bytes(f.size)), h("td", { class: "mono" }, f.sha256.slice(0, 12)), h("td", {}, when(f.added_at)),
          h("td", {}, h("button", { class: "danger", onclick: act(() => api("DELETE", `/v1/projects/${enc(p.id)}/files/${filePath(f.name)}`)) }, "Remove")))), "No files."),
        h("div", { class: "toolbar" }, h("label", {}, "Add a file ", upload),
          h("button", { class: "danger", onclick: act(() => api("DELETE", `/v1/projects/${enc(p.id)}`)) }, "Delete project")));
    }) : h("p", { class: "muted" }, "No projects."));
}

// ---- routing -----------------------------------------------------------------

const pages = [
  [/^#?\/?$/, overview],
  [/^#\/run$/, runPage],
  [/^#\/sessions$/, sessionsPage],
  [/^#\/sessions\/([^/]+)$/, sessionPage],
  [/^#\/sessions\/([^/]+)\/notebook$/, notebookPage],
  [/^#\/history$/, historyPage],
  [/^#\/languages$/, languagesPage],
  [/^#\/projects$/, projectsPage],
  [/^#\/approvals$/, approvalsPage],
];

let leaving = new AbortController();
async function route() {
  leaving.abort();
  leaving = new AbortController();
  const signal = leaving.signal;
  const [path, query] = location.hash.split("?");
  for (const a of document.querySelectorAll("header nav a")) {
    const target = a.getAttribute("href");
    a.classList.toggle("active", target === "#/" ? path === "#/" || path === "" : path.startsWith(target));
  }
  const root = h("div");
  main().replaceChildren(root);
  for (const [re, page] of pages) {
    const m = path.match(re);
    if (!m) continue;
    try {
      await page(root, signal, m[1] && decodeURIComponent(m[1]), new URLSearchParams(query || ""));
    } catch (err) {
      if (!signal.aborted) root.replaceChildren(errorBox(err));
    }
    return;
  }
  root.replaceChildren(h("h1", {}, "Not found"), h("p", {}, h("a", { href: "#/" }, "Overview")));
}

window.addEventListener("hashchange", route);
route();
