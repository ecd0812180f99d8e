// Bundles the dashboard into ../dist: app.js (the pages and xterm.js),
// app.css (ours and xterm's), index.html. Nothing is fetched at run time.
import * as esbuild from "esbuild";
import { copyFileSync, mkdirSync } from "node:fs";

const out = new URL("../dist/", import.meta.url).pathname;
mkdirSync(out, { recursive: true });
await esbuild.build({
  entryPoints: { app: "src/app.js", style: "src/app.css" },
  bundle: true,
  minify: true,
  format: "iife",
  target: ["chrome110", "firefox110", "safari16"],
  outdir: out,
  entryNames: "[name]",
  legalComments: "eof",
  logLevel: "warning",
});
// The desktop's live view (noVNC) is a module of its own: noVNC awaits at
// its top level, which app.js's format cannot; app.js imports it on a
// desktop session's page alone.
await esbuild.build({
  entryPoints: { vnc: "src/vnc.js" },
  bundle: true,
  minify: true,
  format: "esm",
  target: ["chrome110", "firefox110", "safari16"],
  outdir: out,
  entryNames: "[name]",
  legalComments: "eof",
  logLevel: "warning",
});
copyFileSync("src/index.html", out + "index.html");
