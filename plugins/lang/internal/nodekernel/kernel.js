// sandboxd's context kernel for Node.js: a long-lived interpreter that runs
// each cell it is sent in one global scope, REPL-like (the completion value
// of a cell is shown; a promise is awaited first). The protocol is the
// language plugin contract's (plugins/language: ContextCommand): a cell is
// a JSON line on descriptor 3 ({"code", "name", "mark", "env"}), output goes to 1
// and 2, then the cell's mark on both, then a JSON reply line on
// descriptor 4 ({"name", "status", "exit_code", "display"}).
'use strict';
// A block of its own: the kernel's names must not take the cells' (a cell's
// top-level const and let live in the global scope, from cell to cell).
{
const fs = require('fs');
const readline = require('readline');
const util = require('util');
const vm = require('vm');

globalThis.require = require;
const typescript = process.argv[1] === 'typescript';
process.argv = [process.argv[0]];

// What the kernel itself uses is experimental in Node 24; saying so is not
// the cell's output.
const emitWarning = process.emitWarning;
process.emitWarning = function (warning, ...rest) {
  if (/^(vm\.USE_MAIN_CONTEXT_DEFAULT_LOADER|stripTypeScriptTypes) is an experimental feature/.test(String(warning))) return;
  return emitWarning.call(process, warning, ...rest);
};

// An error thrown later (a timer, a rejected promise nobody awaited) is
// reported, and the context goes on.
process.on('uncaughtException', (e) => process.stderr.write(stack(e) + '\n'));
process.on('unhandledRejection', (e) => process.stderr.write('Unhandled rejection: ' + stack(e) + '\n'));

// stack drops the kernel's own frames.
function stack(e) {
  if (!(e instanceof Error) || !e.stack) return util.inspect(e);
  return e.stack.split('\n').filter((l) => !/\(node:|\[eval\]|^\s+at node:/.test(l)).join('\n');
}

// compile makes a cell a script. A cell with a top-level await (or an
// import, which becomes one) runs as an async function: its value is still
// shown, an expression's or its last statement's when that is one, but what
// it declares stays in it (assign to globalThis to keep it).
function compile(code, filename, imports) {
  // import() resolves as the main script's would, from the working directory.
  const importModuleDynamically = vm.constants.USE_MAIN_CONTEXT_DEFAULT_LOADER;
  if (!imports) {
    try {
      return new vm.Script(code, { filename, importModuleDynamically });
    } catch (e) {
      if (!(e instanceof SyntaxError) || !/await is only valid/.test(e.message)) throw e;
    }
  }
  const opts = { filename, lineOffset: -1, importModuleDynamically };
  const parses = (t) => { try { return new vm.Script(t, opts); } catch (e) { return null; } };
  const body = code.replace(/[\s;]+$/, '');
  const whole = parses('(async () => (\n' + body + '\n))()');
  if (whole) return whole;
  // The last statement's value: cut after the last ; or line, where what
  // comes before is whole statements (not a loop's head) and what comes
  // after is an expression; a line that goes on from the one before (an
  // operator, or what would index or call it) is not one of its own.
  for (const [cut, goesOn] of [[body.lastIndexOf(';'), null], [body.lastIndexOf('\n'), /^[-+*/%&|^.,?:=<>(\[`!~]/]]) {
    const head = body.slice(0, cut + 1), last = body.slice(cut + 1).trim();
    if (cut >= 0 && last && !(goesOn && goesOn.test(last)) && parses('(async () => {\n' + head + '\n})')) {
      const script = parses('(async () => {\n' + head + '\nreturn (' + last + '\n)})()');
      if (script) return script;
    }
  }
  return new vm.Script('(async () => {\n' + code + '\n})()', opts);
}

// javascript is a cell's code as a script: its types stripped (TypeScript,
// enums and namespaces included), its static imports made dynamic; and
// whether it had any.
function javascript(code) {
  if (typescript) {
    code = require('module').stripTypeScriptTypes(code, { mode: 'transform' });
  }
  const hoisted = hoistImports(code);
  return [hoisted, hoisted !== code];
}

// hoistImports makes each top-level `import ... from "m"` (a line of its own,
// as a cell writes it) an `await import("m")` whose bindings are set on the
// global object, so that they serve this cell and the ones after it.
function hoistImports(code) {
  // An import's attributes (with {type: "json"}) are import()'s options.
  const options = (attrs) => (attrs ? `, { with: ${attrs} }` : '');
  return code
    .replace(/^([ \t]*)import\s*(['"][^'"\n]+['"])(?:\s*with\s*(\{[^}]*\}))?[ \t]*;?/gm,
      (all, indent, from, attrs) => `${indent}void (await import(${from}${options(attrs)}));`)
    .replace(/^([ \t]*)import(?=[\s{*])\s*([\w$*{}\s,]+?)\s*from\s*(['"][^'"\n]+['"])(?:\s*with\s*(\{[^}]*\}))?[ \t]*;?/gm, (all, indent, clause, from, attrs) => {
      const sets = [];
      for (const part of clause.match(/\{[^}]*\}|[^,{}]+/g) || []) {
        const p = part.trim();
        if (p.startsWith('{')) {
          for (const spec of p.slice(1, -1).split(',').map((x) => x.trim()).filter(Boolean)) {
            const [name, as] = spec.split(/\s+as\s+/);
            sets.push(`globalThis[${JSON.stringify(as || name)}] = m[${JSON.stringify(name)}];`);
          }
        } else if (p.startsWith('*')) {
          sets.push(`globalThis[${JSON.stringify(p.split(/\s+as\s+/)[1])}] = m;`);
        } else if (p) {
          sets.push(`globalThis[${JSON.stringify(p)}] = 'default' in m ? m.default : m;`);
        }
      }
      return `${indent}await (async () => { const m = await import(${from}${options(attrs)}); ${sets.join(' ')} })();`;
    });
}

async function run(cell) {
  try {
    const [code, imports] = javascript(cell.code);
    let value = compile(code, cell.name || '<cell>', imports).runInThisContext();
    if (value && typeof value.then === 'function') value = await value;
    const display = value === undefined ? [] : [{ mime: 'text/plain', data: util.inspect(value), main: true }];
    return { status: 'ok', exit_code: 0, display };
  } catch (e) {
    process.stderr.write(stack(e) + '\n');
    return { status: 'error', exit_code: 1 };
  }
}

// withEnv sets env in process.env for one cell (its child processes
// inherit it) and takes it back after, as E2B's kernels do.
async function withEnv(env, fn) {
  const saved = Object.keys(env).map((k) => [k, Object.prototype.hasOwnProperty.call(process.env, k), process.env[k]]);
  Object.assign(process.env, env);
  try {
    return await fn();
  } finally {
    for (const [k, had, v] of saved) {
      if (had) process.env[k] = v; else delete process.env[k];
    }
  }
}

const queue = [];
let busy = false;
async function next() {
  if (busy) return;
  busy = true;
  while (queue.length) {
    const cell = queue.shift();
    const reply = await withEnv(cell.env || {}, () => run(cell));
    reply.name = cell.name;
    for (const fd of [1, 2]) {
      try { fs.writeSync(fd, cell.mark); } catch (e) { /* the cell closed it */ }
    }
    fs.writeSync(4, JSON.stringify(reply) + '\n');
  }
  busy = false;
}
readline.createInterface({ input: fs.createReadStream(null, { fd: 3 }), crlfDelay: Infinity })
  .on('line', (line) => { queue.push(JSON.parse(line)); next(); });
}
