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
process.argv = [process.argv[0]];

// An error thrown later (a timer, a rejected promise nobody awaited) is
// reported, and the context goes on.
process.on('uncaughtException', (e) => process.stderr.write(stack(e) + '\n'));
process.on('unhandledRejection', (e) => process.stderr.write('Unhandled rejection: ' + stack(e) + '\n'));

// stack drops the kernel's own frames.
function stack(e) {
  if (!(e instanceof Error) || !e.stack) return util.inspect(e);
  return e.stack.split('\n').filter((l) => !/\(node:|\[eval\]|^\s+at node:/.test(l)).join('\n');
}

// compile makes a cell a script. A cell with a top-level await runs as an
// async function: an expression's value is still shown, but what a
// statement cell declares stays in it (assign to globalThis to keep it).
function compile(code, filename) {
  try {
    return new vm.Script(code, { filename });
  } catch (e) {
    if (!(e instanceof SyntaxError) || !/await is only valid/.test(e.message)) throw e;
  }
  try {
    return new vm.Script('(async () => (\n' + code + '\n))()', { filename, lineOffset: -1 });
  } catch (e) {
    return new vm.Script('(async () => {\n' + code + '\n})()', { filename, lineOffset: -1 });
  }
}

async function run(cell) {
  try {
    let value = compile(cell.code, cell.name || '<cell>').runInThisContext();
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
