// The notebook: cells of the session's language run one after another in
// a named context (a long-lived interpreter in the sandbox), their output
// streamed in under them and what they show rendered: images as images,
// HTML in a frame with no script and no network, JSON as a tree, text as
// text. The cells' code is kept in this browser, per session.
import { h, api, enc, errorBox, ms, bytes, when, outcomeBadge, readEvents, findingsList, styleNonce } from "./lib.js";
import { codeEditor } from "./editor.js";

const starter = {
  py: ["import matplotlib.pyplot as plt\nimport pandas as pd\n\ndf = pd.DataFrame({\"x\": range(10), \"y\": [v * v for v in range(10)]})\ndf.head()",
    "plt.plot(df.x, df.y)\nplt.title(\"y = x²\")\nplt.savefig(\"outputs/plot.png\")\nplt.show()"],
  js: ["const xs = Array.from({ length: 10 }, (_, i) => i * i);\nxs", "xs.reduce((a, b) => a + b, 0)"],
};

export async function notebookPage(root, signal, id) {
  const [s, { languages }] = await Promise.all([api("GET", `/v1/sessions/${enc(id)}`), api("GET", "/v1/languages")]);
  const language = languages.find((l) => l.name === s.language);
  const title = h("h1", {}, "Notebook ", h("a", { href: `#/sessions/${enc(id)}` }, `session ${id}`), ` · ${s.language}`);
  if (!language || !language.contexts) {
    root.replaceChildren(title, h("p", { class: "muted" }, `${s.language} keeps no context between executions: a notebook needs a language with contexts (python, node).`));
    return;
  }
  const stored = `sandboxd.notebook.${id}`;
  const ext = ((language.extensions || [])[0] || "").replace(/^\./, "");
  let saved = [];
  try { saved = JSON.parse(localStorage.getItem(stored) || "[]"); } catch { saved = []; }
  const name = h("input", { name: "context", value: saved.context || "main", size: 12, "aria-label": "context name" });
  const state = h("span", { id: "context-state", class: "muted" });
  const failure = h("div");
  const list = h("div", { class: "cells" });
  const cells = [];
  const save = () => localStorage.setItem(stored, JSON.stringify(Object.assign(cells.map((c) => c.editor.value), { context: name.value })));

  const showState = async (note) => {
    try {
      const { contexts } = await api("GET", `/v1/sessions/${enc(id)}/contexts`);
      const c = contexts.find((x) => x.name === name.value);
      state.className = c ? "ok" : "muted";
      state.textContent = c ? `context ${c.name}: running, pid ${c.pid}, since ${when(c.started_at)}, ${c.executions} cells, ${bytes(c.rss_bytes)}`
        : `context ${name.value}: not running (the next cell starts it)`;
      state.dataset.state = c ? "running" : "stopped";
      if (note) state.append(h("span", { class: note.bad ? "bad" : "warn" }, ` · ${note.text}`));
    } catch (err) { failure.replaceChildren(errorBox(err)); }
  };

  const addCell = (code = "", after) => {
    const output = h("div", { class: "cell-output" });
    const run = h("button", { class: "secondary", title: "Run (Shift-Enter)" }, "▶ Run");
    const remove = h("button", { class: "secondary", title: "Remove the cell" }, "✕");
    const editorBox = h("div", { class: "cell-editor" });
    const el = h("div", { class: "cell" }, h("div", { class: "cell-tools" }, h("span", { class: "prompt mono" }, "[ ]"), run, remove), editorBox, output);
    const cell = { el, output, prompt: el.querySelector(".prompt") };
    cell.editor = codeEditor(editorBox, { doc: code, language, onRun: () => runCell(cell), onChange: save, label: "cell code" });
    run.addEventListener("click", () => runCell(cell));
    remove.addEventListener("click", () => { cells.splice(cells.indexOf(cell), 1); el.remove(); cell.editor.destroy(); save(); });
    const at = after ? cells.indexOf(after) + 1 : cells.length;
    cells.splice(at, 0, cell);
    if (after) after.el.after(el); else list.append(el);
    return cell;
  };

  let count = 0;
  const runCell = async (cell) => {
    const out = cell.output;
    out.replaceChildren();
    out.dataset.state = "running";
    cell.prompt.textContent = "[*]";
    const stream = h("pre", { class: "stream" });
    out.append(stream);
    const context = name.value || "main";
    try {
      const resp = await api("POST", `/v1/sessions/${enc(id)}/exec`, { code: cell.editor.value, context }, { Accept: "application/x-ndjson" });
      await readEvents(resp, signal, (e) => {
        if (e.type === "stdout" || e.type === "stderr") {
          stream.append(h("span", { class: e.type }, e.encoding === "base64" ? atob(e.data) : e.data));
        } else if (e.type === "result") {
          showResult(cell, e.result);
        } else if (e.type === "error") {
          out.append(errorBox(e.error), findingsList(e.error.findings));
          cell.editor.showFindings(e.error.findings);
        }
      });
    } catch (err) {
      out.append(errorBox(err), findingsList(err.findings));
      cell.editor.showFindings(err.findings);
    } finally {
      out.dataset.state = "done";
      if (cell.prompt.textContent === "[*]") cell.prompt.textContent = "[!]";
    }
  };

  const showResult = (cell, r) => {
    const out = cell.output;
    cell.prompt.textContent = `[${++count}]`;
    cell.editor.showFindings(r.findings);
    for (const el of display(r.display || [])) out.append(el);
    if (r.outputs && r.outputs.length) out.append(outputFiles(id, r.outputs));
    const c = r.context || {};
    const failed = r.timed_out || r.oom_killed || r.exit_code !== 0;
    out.append(h("div", { class: "cell-meta muted" }, outcomeBadge(r.timed_out ? "timeout" : r.oom_killed ? "oom" : r.exit_code ? "nonzero" : "ok"),
      ` ${ms(r.duration_ms)}`, c.started ? " · context started" : "", failed ? ` · exit ${r.exit_code}` : ""));
    showState(c.lost ? { text: c.lost, bad: true } : c.started && count > 1 ? { text: "started afresh: earlier cells' state is gone" } : null);
  };

  const runAll = async () => { for (const c of cells.slice()) await runCell(c); };
  const restart = async () => {
    try {
      await api("POST", `/v1/sessions/${enc(id)}/contexts/${enc(name.value)}/restart`);
      count = 0;
      await showState({ text: "restarted" });
    } catch (err) { failure.replaceChildren(errorBox(err)); }
  };
  name.addEventListener("change", () => { save(); showState(); });

  root.replaceChildren(title,
    h("div", { class: "toolbar" }, h("label", {}, "Context ", name),
      h("button", { onclick: runAll }, "Run all"),
      h("button", { class: "secondary", onclick: restart }, "Restart context"),
      h("button", { class: "secondary", onclick: () => { addCell("").editor.focus(); save(); } }, "Add cell"),
      state),
    failure, list);
  const codes = saved.length ? saved : starter[ext] || [""];
  for (const code of codes) addCell(code);
  await showState();
  signal.addEventListener("abort", () => { for (const c of cells) c.editor.destroy(); });
}

// display renders what a cell showed: the figures it drew and its value's
// representations, richest first; the value's text only when nothing
// richer came (as Jupyter, a figure stands for the repr of what drew it).
export function display(items) {
  const rich = items.filter((d) => d.mime !== "text/plain");
  return (rich.length ? rich : items).map(render);
}

function render(d) {
  switch (d.mime) {
    case "image/png":
      return h("img", { class: "shown", alt: "figure", src: `data:image/png;base64,${d.data}` });
    case "image/svg+xml": {
      // As an image: an SVG's scripts never run in <img>.
      const svg = /^\s*</.test(d.data) ? btoa(String.fromCharCode(...new TextEncoder().encode(d.data))) : d.data;
      return h("img", { class: "shown", alt: "figure", src: `data:image/svg+xml;base64,${svg}` });
    }
    case "text/html":
      return htmlFrame(d.data);
    case "application/json":
      try { return h("div", { class: "json mono" }, tree(JSON.parse(d.data), 0)); } catch { return h("pre", { class: "shown" }, d.data); }
    default:
      return h("pre", { class: "shown" }, d.data);
  }
}

// htmlFrame shows a program's HTML in a frame that is sandboxed without
// any permission: no script, no form, no navigation of the page, an
// origin of its own; and a Content Security Policy of its own (on top of
// the page's, which it inherits) lets it load nothing, not even from
// sandboxd, but images inlined as data, nor style itself (our table style
// goes first, with the page's nonce). Its height follows the rows of a
// table, as a DataFrame's.
const frameStyle = "body{font:13px system-ui,sans-serif;margin:6px;color:#1d1f21}table{border-collapse:collapse}" +
  "th,td{border:1px solid #dcdcd6;padding:2px 8px;text-align:right}thead th{background:#efefeb}tbody th{background:#f7f7f5}";
function htmlFrame(html) {
  const rows = (html.match(/<tr[\s>]/gi) || []).length;
  const frame = h("iframe", { class: "shown html", sandbox: "", title: "HTML output", referrerpolicy: "no-referrer" });
  const policy = `default-src 'none'; img-src data:; style-src 'nonce-${styleNonce}'`;
  frame.srcdoc = `<!doctype html><meta charset="utf-8"><meta http-equiv="Content-Security-Policy" content="${policy}">` +
    `<style nonce="${styleNonce}">${frameStyle}</style>${html}`;
  frame.height = String(Math.min(480, Math.max(60, 24 * rows + 30)));
  return frame;
}

// tree renders a JSON value as nested, collapsible lists (open two deep).
function tree(v, depth) {
  if (v === null || typeof v !== "object") return h("span", { class: typeof v }, JSON.stringify(v));
  const entries = Array.isArray(v) ? v.map((x, i) => [i, x]) : Object.entries(v);
  const summary = Array.isArray(v) ? `[${entries.length}]` : `{${entries.length}}`;
  return h("details", { open: depth < 2 }, h("summary", {}, summary),
    h("ul", {}, entries.map(([k, x]) => h("li", {}, h("span", { class: "key" }, `${k}: `), tree(x, depth + 1)))));
}

// outputFiles lists the files a cell made under outputs/, images shown.
function outputFiles(id, files) {
  return h("div", { class: "outputs" }, files.map((f) => {
    const url = `/v1/sessions/${enc(id)}/files/${f.path.split("/").map(enc).join("/")}`;
    const item = h("div", { class: "output-file" }, h("a", { href: url, download: f.path.split("/").pop() }, f.path), ` ${bytes(f.size)}`);
    if (/^image\/(png|jpeg|gif|webp)$/.test(f.mime)) {
      // Fetched, then shown from a blob: the file's own answer is an
      // attachment that no page renders.
      fetch(url, { credentials: "same-origin" }).then((r) => (r.ok ? r.blob() : null)).then((b) => {
        if (b) item.append(h("img", { class: "preview", alt: f.path, src: URL.createObjectURL(new Blob([b], { type: f.mime })) }));
      });
    }
    return item;
  }));
}
