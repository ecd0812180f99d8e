// Transpiles TypeScript to JavaScript for sandboxd's typescript language:
// types are stripped, not checked, so a program starts in well under a
// second; syntax errors fail the compile step with file:line:col.
// Usage: node transpile.js OUTDIR FILE.ts... (or, faster, node
// --snapshot-blob typescript.blob OUTDIR FILE.ts...: see snapshot.js).
'use strict';
const fs = require('fs');
const path = require('path');

// options are the compiler's, here and in prime.js.
function options(ts, fileName) {
  return {
    fileName,
    reportDiagnostics: true,
    compilerOptions: { module: ts.ModuleKind.CommonJS, target: ts.ScriptTarget.ES2020, esModuleInterop: true },
  };
}

// main transpiles each file into outdir and returns the exit code.
function main(ts, [outdir, ...files]) {
  let failed = false;
  for (const file of files) {
    const source = fs.readFileSync(file, 'utf8');
    const result = ts.transpileModule(source, options(ts, file));
    for (const d of result.diagnostics || []) {
      const { line, character } = d.file.getLineAndCharacterOfPosition(d.start);
      console.error(`${file}:${line + 1}:${character + 1}: error TS${d.code}: ${ts.flattenDiagnosticMessageText(d.messageText, '\n')}`);
      failed = true;
    }
    const out = path.join(outdir, file.replace(/\.ts$/, '.js'));
    fs.mkdirSync(path.dirname(out), { recursive: true });
    fs.writeFileSync(out, result.outputText);
  }
  return failed ? 1 : 0;
}

module.exports = { main, options };

if (require.main === module) {
  process.exit(main(require('./node-tools/node_modules/typescript'), process.argv.slice(2)));
}
