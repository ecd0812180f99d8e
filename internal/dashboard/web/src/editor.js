// The dashboard's code editor: CodeMirror 6 with the highlighting of the
// program's language, line numbers, and the policies' findings marked at
// their lines (as lint diagnostics: underlined, with a gutter mark and the
// message on hover).
import { basicSetup } from "codemirror";
import { EditorView, keymap } from "@codemirror/view";
import { Compartment, EditorState, Prec } from "@codemirror/state";
import { StreamLanguage } from "@codemirror/language";
import { setDiagnostics, lintGutter } from "@codemirror/lint";
import { python } from "@codemirror/lang-python";
import { javascript } from "@codemirror/lang-javascript";
import { java } from "@codemirror/lang-java";
import { cpp } from "@codemirror/lang-cpp";
import { go } from "@codemirror/lang-go";
import { php } from "@codemirror/lang-php";
import { rust } from "@codemirror/lang-rust";
import { shell } from "@codemirror/legacy-modes/mode/shell";
import { ruby } from "@codemirror/legacy-modes/mode/ruby";
import { lua } from "@codemirror/legacy-modes/mode/lua";
import { csharp } from "@codemirror/legacy-modes/mode/clike";
import { powerShell } from "@codemirror/legacy-modes/mode/powershell";
import { styleNonce, severe } from "./lib.js";

// Highlighting by a language's file extension, which an operator's own
// languages declare too (a language named "py312" is still Python).
const byExtension = {
  py: () => python(), js: () => javascript(), mjs: () => javascript(), cjs: () => javascript(),
  ts: () => javascript({ typescript: true }), java: () => java(), c: () => cpp(), h: () => cpp(),
  cc: () => cpp(), cpp: () => cpp(), go: () => go(), php: () => php(), rs: () => rust(),
  sh: () => StreamLanguage.define(shell), bash: () => StreamLanguage.define(shell),
  rb: () => StreamLanguage.define(ruby), lua: () => StreamLanguage.define(lua),
  cs: () => StreamLanguage.define(csharp), ps1: () => StreamLanguage.define(powerShell),
};

// highlighting is the support for a language from /v1/languages (its
// extensions), or none.
function highlighting(language) {
  for (const ext of (language && language.extensions) || []) {
    const make = byExtension[ext.replace(/^\./, "")];
    if (make) return make();
  }
  return [];
}

// codeEditor makes an editor in parent. onRun, if given, is called on
// Ctrl-Enter or Shift-Enter. The handle is also parent.editor, for tests.
export function codeEditor(parent, { doc = "", language, onRun, onChange, label = "code" } = {}) {
  const lang = new Compartment();
  const keys = onRun ? [{ key: "Ctrl-Enter", run: () => (onRun(), true) }, { key: "Shift-Enter", run: () => (onRun(), true) }] : [];
  const view = new EditorView({
    parent,
    state: EditorState.create({
      doc,
      extensions: [
        Prec.highest(keymap.of(keys)),
        basicSetup,
        lintGutter(),
        lang.of(highlighting(language)),
        EditorView.cspNonce.of(styleNonce),
        EditorView.contentAttributes.of({ "aria-label": label }),
        // Findings move with the text edited around them.
        EditorView.updateListener.of((u) => { if (u.docChanged && onChange) onChange(u.state.doc.toString()); }),
      ],
    }),
  });
  const handle = {
    view,
    get value() { return view.state.doc.toString(); },
    set value(text) { view.dispatch({ changes: { from: 0, to: view.state.doc.length, insert: text } }); },
    setLanguage(language) { view.dispatch({ effects: lang.reconfigure(highlighting(language)) }); },
    // showFindings marks each finding at its line (the first line when it
    // names none).
    showFindings(findings) {
      const doc = view.state.doc;
      view.dispatch(setDiagnostics(view.state, (findings || []).map((f) => {
        const line = doc.line(Math.min(Math.max(f.line || 1, 1), doc.lines));
        return {
          from: line.from, to: line.to,
          severity: severe(f) ? "error" : f.severity === "info" ? "info" : "warning",
          source: `${f.policy}/${f.rule}`, message: f.message,
        };
      })));
    },
    focus() { view.focus(); },
    destroy() { view.destroy(); },
  };
  parent.editor = handle;
  return handle;
}
