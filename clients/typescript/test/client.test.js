// The TypeScript client against a real sandboxd: $SANDBOXD_SOCKET names the
// daemon the Go end-to-end test (TestTypeScriptClient) starts for it.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import {
  Client, InvalidRequest, NotFound, PolicyDenied, SandboxdError, UnknownLanguage, Unreachable, output, text,
} from "../dist/index.js";

const skip = !process.env.SANDBOXD_SOCKET && "needs a daemon: run through make test";
const client = new Client();

test("run", { skip }, async () => {
  let res = await client.run({ language: "python", code: "import sys; print('hi'); print('oops', file=sys.stderr); sys.exit(3)" });
  assert.deepEqual([res.stdout, res.stderr, res.exit_code], ["hi\n", "oops\n", 3]);
  res = await client.run({ language: "js", code: "process.stdout.write(Buffer.from([0xff, 0, 1]))" });
  assert.deepEqual(output(res), Buffer.from([0xff, 0, 1]));
  res = await client.run({ language: "python", code: "import time; time.sleep(5)", timeout: "1s" });
  assert.equal(res.timed_out, true);
});

test("stream", { skip }, async () => {
  const events = [];
  for await (const ev of client.stream({ language: "python", code: "import time\nfor i in range(3): print(i, flush=True); time.sleep(0.1)" })) {
    events.push(ev);
  }
  const out = events.filter((e) => e.type === "stdout").map((e) => e.data);
  assert.equal(out.join(""), "0\n1\n2\n");
  assert.ok(out.length >= 3, "output as it came, not at the end");
  assert.equal(events.at(-1).type, "result");
  assert.equal(events.at(-1).result.exit_code, 0);
});

test("errors", { skip }, async () => {
  await assert.rejects(client.run({ language: "cobol", code: "x" }), (e) => e instanceof UnknownLanguage && e.status === 400 && e instanceof SandboxdError);
  await assert.rejects(client.run({ language: "python", code: "print(1)", timeout: "10h" }), (e) => e instanceof PolicyDenied && e.findings.length > 0);
  await assert.rejects(client.run({ language: "python" }), InvalidRequest);
  await assert.rejects(new Client({ socket: "/nonexistent.sock" }).health(), Unreachable);
});

test("session", { skip }, async () => {
  const s = await client.createSession({ language: "python", ttl: "5m" });
  try {
    await s.writeFile("data/in.txt", "three\nlines\nhere\n");
    await s.writeFile("run.sh", "#!/bin/sh\necho ran\n", 0o755);
    assert.equal((await s.exec({ argv: ["sh", "-c", "wc -l < data/in.txt"] })).stdout.trim(), "3");
    assert.equal((await s.exec({ argv: ["./run.sh"] })).stdout, "ran\n");
    assert.equal((await s.readFile("data/in.txt")).toString(), "three\nlines\nhere\n");
    const paths = (await s.listFiles(".", true)).map((e) => e.path);
    assert.ok(paths.includes("data/in.txt") && paths.includes("run.sh"));
    await s.exec({ code: "x = 20", context: "main" });
    const res = await s.exec({ code: "x + 22", context: "main" });
    assert.equal(text(res), "42");
    assert.deepEqual((await s.contexts()).map((c) => c.name), ["main"]);
    const out = await s.exec({ argv: ["sh", "-c", "echo a > outputs/a.txt"] });
    assert.deepEqual(out.outputs.map((o) => o.path), ["outputs/a.txt"]);
    const [fork] = await s.fork(1);
    try {
      assert.equal((await fork.readFile("outputs/a.txt")).toString(), "a\n");
    } finally {
      await fork.close();
    }
    assert.ok(Array.isArray(await s.ports()));
    const m = await s.metrics();
    assert.ok(m.now.memory_bytes > 0 && m.now.workspace_bytes > 0 && Array.isArray(m.series));
    await assert.rejects(s.preview(8000, "10m"), (e) => e instanceof NotFound && /TCP listener/.test(e.message)); // this daemon has none
    await s.revokePreviews();
    // Paused, it keeps its files; its context's memory is reported lost once.
    await s.pause();
    assert.equal(s.info.state, "hibernated");
    assert.ok(s.info.hibernation.bytes > 0);
    const woke = await s.exec({ code: "y = 1", context: "main" });
    assert.ok(woke.resumed && woke.resume_ms > 0);
    assert.equal(woke.context.lost, "hibernated without memory");
    assert.equal((await s.readFile("outputs/a.txt")).toString(), "a\n");
    await s.pause();
    await s.resume();
    assert.equal(s.info.state, "active");
    assert.equal(s.info.resumes, 2);
    await s.setNetwork([]); // the language allows nothing: an empty list is all there is
    assert.deepEqual(s.info.network.allow, []);
    await assert.rejects(s.setNetwork(["example.org"]), InvalidRequest);
    await s.reset();
    await assert.rejects(s.readFile("data/in.txt"), NotFound);
  } finally {
    await s.close();
  }
  await assert.rejects(s.exec({ argv: ["true"] }), NotFound);
  for (const sn of await client.snapshots()) await client.deleteSnapshot(sn.id);
});

test("desktop", { skip }, async () => {
  // A desktop session's screen, looked at and driven as an agent does (its
  // own desktop takes the keys: no browser).
  const s = await client.createSession({ language: "desktop", ttl: "5m" });
  try {
    const screen = await s.desktop();
    assert.deepEqual([screen.width, screen.height], [1024, 768]);
    assert.ok(Array.isArray(screen.windows));
    const png = await s.screenshot();
    assert.deepEqual(png.subarray(0, 8), Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]));
    assert.deepEqual((await s.move(100, 200)).cursor, { x: 100, y: 200 });
    assert.deepEqual((await s.click(300, 250)).cursor, { x: 300, y: 250 });
    assert.deepEqual((await s.desktop()).cursor, { x: 300, y: 250 });
    await s.typeText("hello $(touch /workspace/pwned)");
    await s.press("Escape");
    assert.equal((await s.desktopAction({ action: "scroll", direction: "down", amount: 2 })).cursor.y, 250);
    assert.equal((await s.exec({ argv: ["sh", "-c", "test -e /workspace/pwned && echo yes || echo no"] })).stdout, "no\n");
    await assert.rejects(s.click(1024, 0),
      (e) => e instanceof InvalidRequest && e.code === "invalid_request" && /off the 1024x768 screen/.test(e.message));
  } finally {
    await s.close();
  }
  const py = await client.createSession({ language: "python" });
  try {
    await assert.rejects(py.screenshot(), (e) => e instanceof InvalidRequest && /has no desktop/.test(e.message));
  } finally {
    await py.close();
  }
});

test("types follow the OpenAPI document", { skip }, async () => {
  const schemas = (await client.openapi()).components.schemas;
  // Schemas the document nests rather than names: where they are.
  const nested = {
    Finding: ["RunResult", "findings"], Display: ["RunResult", "display"], Egress: ["RunResult", "egress"],
    OutputFile: ["RunResult", "outputs"], ContextState: ["RunResult", "context"], Usage: ["RunResult", "usage"],
    Timings: ["RunResult", "timings"], Step: ["RunResult", "steps"], FileEntry: ["FileList", "entries"],
    Limits: ["RunRequest", "limits"], DesktopWindow: ["Desktop", "windows"], Point: ["Desktop", "cursor"],
  };
  const schemaOf = (name) => {
    if (!nested[name]) return schemas[name];
    const s = schemas[nested[name][0]].properties[nested[name][1]];
    return s.items ?? s;
  };
  const dts = readFileSync(new URL("../dist/types.d.ts", import.meta.url), "utf8");
  const missing = [];
  for (const name of ["RunResult", "RunRequest", "ExecRequest", "SessionRequest", "Finding", "Display", "Egress",
    "OutputFile", "ContextState", "Usage", "Timings", "Step", "Event", "Session", "FileEntry", "Snapshot", "Context", "Limits",
    "Desktop", "DesktopWindow", "Point", "DesktopAction"]) {
    const body = dts.match(new RegExp(`interface ${name} \\{([^}]*)\\}`))?.[1] ?? "";
    const fields = new Set([...body.matchAll(/^\s*(\w+)\??:/gm)].map((m) => m[1]));
    const schema = schemaOf(name);
    assert.ok(schema, `no schema ${name} in the document`);
    for (const prop of Object.keys(schema.properties ?? {})) {
      if (!fields.has(prop)) missing.push(`${name}.${prop}`);
    }
  }
  assert.deepEqual(missing, [], "fields of the OpenAPI document the client's types lack");
});

test("connectPort", { skip }, async () => {
  const s = await client.createSession({ language: "python", ttl: "5m" });
  try {
    await s.writeFile("site/index.html", "hello over the socket\n");
    await s.exec({ argv: ["sh", "-c", "cd site && python3 -m http.server 8000 --bind 127.0.0.1 >/dev/null 2>&1 </dev/null &"] });
    for (let i = 0; i < 100 && !(await s.ports()).some((p) => p.port === 8000); i++) await new Promise((r) => setTimeout(r, 100));
    const conn = await s.connectPort(8000);
    conn.write("GET /index.html HTTP/1.0\r\n\r\n"); // no end(): a forwarded connection has no half-close
    const chunks = [];
    for await (const c of conn) chunks.push(c);
    const answer = Buffer.concat(chunks).toString();
    assert.ok(answer.startsWith("HTTP/1.0 200") && answer.endsWith("hello over the socket\n"), answer);
    const refused = await s.connectPort(8001);
    await assert.rejects(async () => { for await (const _ of refused) { /* nothing comes */ } }, (e) => e.code === "ECONNREFUSED" && /8001/.test(e.message));
  } finally {
    await s.close();
  }
});

test("watch", { skip }, async () => {
  const s = await client.createSession({ language: "python", ttl: "5m" });
  try {
    const seen = [];
    for await (const ev of s.watch(".", true)) {
      seen.push(`${ev.type} ${ev.path ?? ""}`);
      if (ev.type === "ready") s.exec({ argv: ["sh", "-c", "echo x > made.txt"] });
      if (seen.includes("write made.txt")) break;
    }
    assert.equal(seen[0], "ready ");
    assert.ok(seen.includes("create made.txt"), seen.join(", "));
  } finally {
    await s.close();
  }
});
