// Builds typescript.blob, a startup snapshot of node with TypeScript
// loaded and its code run (node --snapshot-blob typescript.blob
// --build-snapshot snapshot.js, in the image's Dockerfile): a transpile
// started from it skips loading the compiler, two thirds of a cold
// transpile's CPU, so no transpiler need be started ahead of a run.
// Run from it, node takes transpile.js's arguments: OUTDIR FILE.ts...
'use strict';
const fs = require('fs');
const path = require('path');
const vm = require('vm');

// A snapshot's entry may require built-in modules only: load CommonJS
// files by hand, with modules of our own for some names.
function load(file, own = {}) {
  const module = { exports: {} };
  const wrapper = vm.runInThisContext(
    '(function (exports, require, module, __filename, __dirname) {' + fs.readFileSync(file, 'utf8') + '\n})', { filename: file });
  wrapper(module.exports, (name) => own[name] || require(name), module, file, path.dirname(file));
  return module.exports;
}

const ts = load(path.join(__dirname, 'node-tools/node_modules/typescript/lib/typescript.js'));
const transpile = load(path.join(__dirname, 'transpile.js'));
load(path.join(__dirname, 'prime.js'), { typescript: ts, './transpile.js': transpile });
require('v8').startupSnapshot.setDeserializeMainFunction(() => {
  process.exitCode = transpile.main(ts, process.argv.slice(1));
});
