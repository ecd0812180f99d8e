// Transpiles TypeScript to JavaScript for sandboxd's typescript language:
// types are stripped, not checked, so a program starts in well under a
// second; syntax errors fail the compile step with file:line:col.
// Usage: node transpile.js OUTDIR FILE.ts...
'use strict';
const ts = require('typescript');
const fs = require('fs');
const path = require('path');

const [outdir, ...files] = process.argv.slice(2);
let failed = false;
for (const file of files) {
  const source = fs.readFileSync(file, 'utf8');
  const result = ts.transpileModule(source, {
    fileName: file,
    reportDiagnostics: true,
    compilerOptions: { module: ts.ModuleKind.CommonJS, target: ts.ScriptTarget.ES2020, esModuleInterop: true },
  });
  for (const d of result.diagnostics || []) {
    const { line, character } = d.file.getLineAndCharacterOfPosition(d.start);
    console.error(`${file}:${line + 1}:${character + 1}: error TS${d.code}: ${ts.flattenDiagnosticMessageText(d.messageText, '\n')}`);
    failed = true;
  }
  const out = path.join(outdir, file.replace(/\.ts$/, '.js'));
  fs.mkdirSync(path.dirname(out), { recursive: true });
  fs.writeFileSync(out, result.outputText);
}
process.exit(failed ? 1 : 0);
