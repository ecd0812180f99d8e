// sandboxd's warm start for Node.js (see the language package's Warm): the
// warm process is `node main.js` with this file preloaded (NODE_OPTIONS
// --require). It runs once node is up, before main.js is loaded: it says
// it is ready, waits for the run, makes the process the run's (argv,
// environment, directory), leaves no trace of itself, and returns; node
// then loads main.js as usual, so the module, stack traces and the exit are
// node's own.
"use strict";
(() => {
  const fs = require("fs");
  fs.writeSync(4, "ready\n");
  fs.closeSync(4);
  const chunks = [];
  const buf = Buffer.alloc(1 << 16);
  for (;;) {
    let n;
    try {
      n = fs.readSync(3, buf, 0, buf.length, null);
    } catch (e) {
      if (e.code === "EAGAIN") continue;
      throw e;
    }
    if (n === 0) break;
    chunks.push(Buffer.from(buf.subarray(0, n)));
  }
  fs.closeSync(3);
  const fields = Buffer.concat(chunks).toString("utf8").split("\0");
  const argc = Number(fields[0]);
  const argv = fields.slice(1, 1 + argc);
  const envc = Number(fields[1 + argc]);
  const env = fields.slice(2 + argc, 2 + argc + envc);
  const cwd = fields[2 + argc + envc];

  process.chdir(cwd);
  const wanted = new Map(env.map((kv) => [kv.slice(0, kv.indexOf("=")), kv.slice(kv.indexOf("=") + 1)]));
  for (const key of Object.keys(process.env)) if (!wanted.has(key)) delete process.env[key];
  for (const [key, value] of wanted) process.env[key] = value;
  // The run's argv begins with what this process was started with (the
  // supervisor hands it only such runs): node made process.argv of that
  // (its options out, a script resolved); the run's own arguments follow.
  const started = 1 + process.execArgv.length + process.argv.length - 1;
  process.argv.push(...argv.slice(started));
  delete require.cache[__filename];
})();
