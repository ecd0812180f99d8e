// E2B's own SDKs (e2b, @e2b/code-interpreter; pinned in package-lock.json)
// against sandboxd's E2B-compatible listener, as a framework written for
// E2B would call them. e2e/e2b_test.go starts sandboxd with an e2b block
// and runs this file with node --test, setting E2B_API_KEY, E2B_API_URL
// and E2B_SANDBOX_URL as examples/e2b.env does, and beside them
// E2B_OTHER_KEY (a second key), SANDBOXCTL and SANDBOXD_SOCKET.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { Sandbox, CommandExitError, AuthenticationError, SandboxNotFoundError, TimeoutError, InvalidArgumentError, NotFoundError } from 'e2b';
import { Sandbox as CodeSandbox } from '@e2b/code-interpreter';

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// until polls check every 100 ms, at most ms.
async function until(ms, check) {
  const end = Date.now() + ms;
  for (;;) {
    if (await check()) return true;
    if (Date.now() > end) return false;
    await sleep(100);
  }
}

// withSandbox gives fn a new sandbox and kills it after, whatever happens.
async function withSandbox(template, fn, opts = {}) {
  const sb = await Sandbox.create(template, opts);
  try {
    return await fn(sb);
  } finally {
    await sb.kill().catch(() => {});
  }
}

test('a sandbox lives, is listed, is timed and is killed', async () => {
  const sb = await Sandbox.create('base', { metadata: { suite: 'e2b' }, timeoutMs: 120_000 });
  const info = await sb.getInfo();
  assert.equal(info.sandboxId, sb.sandboxId);
  assert.equal(info.templateId, 'base');
  assert.deepEqual(info.metadata, { suite: 'e2b' });
  assert.equal(info.state, 'running');
  const metrics = await sb.getMetrics();
  const last = metrics.at(-1);
  assert.ok(last && last.memUsed > 0 && last.memTotal >= last.memUsed && last.cpuCount > 0 && last.diskTotal > 0 && last.timestamp instanceof Date,
    `metrics: ${JSON.stringify(metrics)}`);
  const listed = await Sandbox.list({ query: { metadata: { suite: 'e2b' } } }).nextItems();
  assert.ok(listed.some((s) => s.sandboxId === sb.sandboxId), 'listed by its metadata');

  await sb.setTimeout(600_000);
  const later = await sb.getInfo();
  assert.ok(later.endAt - info.endAt > 400_000, `setTimeout moved the end: ${info.endAt} -> ${later.endAt}`);

  assert.equal(await sb.isRunning(), true);
  await sb.kill();
  assert.equal(await sb.isRunning(), false);
  const after = await Sandbox.list().nextItems();
  assert.ok(!after.some((s) => s.sandboxId === sb.sandboxId), 'a killed sandbox is not listed');
  await assert.rejects(sb.commands.run('echo hi'), SandboxNotFoundError);
  await assert.rejects(Sandbox.connect(sb.sandboxId), SandboxNotFoundError);
  assert.equal(await Sandbox.kill(sb.sandboxId), false, 'killing it again finds nothing');
});

test('list: metadata with "/", spaces and ":", pages, template, order, startedAfter', async () => {
  const before = new Date(Date.now() - 1000);
  const repo = { repo: 'octo/hello world', ref: 'a:b&c=d%e' };
  const made = [];
  try {
    for (let i = 0; i < 3; i++) {
      made.push(await Sandbox.create('base', { metadata: { ...repo, n: String(i) } }));
    }
    const ids = made.map((s) => s.sandboxId);
    const found = await Sandbox.list({ query: { metadata: repo } }).nextItems();
    assert.deepEqual(found.map((s) => s.sandboxId).filter((id) => ids.includes(id)).sort(), [...ids].sort(), 'found by metadata as the SDK encodes it');
    assert.deepEqual((await Sandbox.list({ query: { metadata: { repo: 'octo/hello' } } }).nextItems()).filter((s) => ids.includes(s.sandboxId)), []);

    const pages = Sandbox.list({ query: { metadata: repo }, limit: 1 });
    const seen = [];
    while (pages.hasNext) {
      const page = await pages.nextItems();
      assert.ok(page.length <= 1, `a page of ${page.length}`);
      seen.push(...page.map((s) => s.sandboxId));
    }
    assert.deepEqual([...seen].sort(), [...ids].sort(), 'every sandbox once, a page at a time');

    const desc = (await Sandbox.list({ query: { metadata: repo }, order: 'desc' }).nextItems()).map((s) => s.metadata.n);
    assert.deepEqual(desc, ['2', '1', '0'], 'newest first');
    assert.equal((await Sandbox.list({ query: { metadata: repo, template: 'other' } }).nextItems()).length, 0, 'by template');
    assert.equal((await Sandbox.list({ query: { metadata: repo, template: 'base' } }).nextItems()).length, 3);
    assert.equal((await Sandbox.list({ query: { metadata: repo, startedAfter: new Date(Date.now() + 60_000) } }).nextItems()).length, 0, 'startedAfter');
    assert.equal((await Sandbox.list({ query: { metadata: repo, startedAfter: before } }).nextItems()).length, 3);
  } finally {
    await Promise.all(made.map((s) => s.kill().catch(() => {})));
  }
});

test('fork: new sandboxes with the files, apart from it; updateNetwork', async () => {
  await withSandbox('base', async (sb) => {
    await sb.files.write('/home/user/state.txt', 'before');
    const forks = await sb.fork({ count: 2 });
    try {
      assert.equal(forks.length, 2);
      for (const f of forks) {
        assert.ok(!(f instanceof Error), `a fork failed: ${f}`);
        assert.notEqual(f.sandboxId, sb.sandboxId);
        assert.equal(await f.files.read('/home/user/state.txt'), 'before');
        assert.equal((await f.getInfo()).templateId, 'base');
      }
      await forks[0].files.write('/home/user/state.txt', 'changed');
      assert.equal(await sb.files.read('/home/user/state.txt'), 'before', 'a fork changes nothing of its source');
      assert.equal(await forks[1].files.read('/home/user/state.txt'), 'before', 'nor of another fork');
    } finally {
      await Promise.all(forks.filter((f) => !(f instanceof Error)).map((f) => f.kill().catch(() => {})));
    }
    await sb.updateNetwork({ allowInternetAccess: false });
    await assert.rejects(sb.updateNetwork({ allowOut: ['example.com'] }), /no egress|beyond/, 'a host its template does not allow');
  });
});

test('snapshots: taken, listed, started from, kept apart by key, deleted', async () => {
  await withSandbox('base', async (sb) => {
    await sb.files.write('/home/user/saved.txt', 'saved');
    const snap = await sb.createSnapshot({ name: 'first' });
    assert.ok(snap.snapshotId && snap.names.includes('first'), JSON.stringify(snap));
    await sb.files.write('/home/user/saved.txt', 'changed after');
    const mine = await Sandbox.listSnapshots({ sandboxId: sb.sandboxId }).nextItems();
    assert.deepEqual(mine.map((s) => s.snapshotId), [snap.snapshotId]);
    const other = { apiKey: process.env.E2B_OTHER_KEY };
    assert.deepEqual(await Sandbox.listSnapshots(other).nextItems(), [], "another key's list");
    await assert.rejects(Sandbox.create(snap.snapshotId, other), "another key's create from it");
    assert.equal(await Sandbox.deleteSnapshot(snap.snapshotId, other), false, "another key's delete");
    for (const ref of [snap.snapshotId, 'first']) {
      const from = await Sandbox.create(ref);
      try {
        assert.equal(await from.files.read('/home/user/saved.txt'), 'saved', `started from ${ref}`);
      } finally {
        await from.kill();
      }
    }
    assert.equal(await Sandbox.deleteSnapshot(snap.snapshotId), true);
    assert.equal(await Sandbox.deleteSnapshot(snap.snapshotId), false, 'deleted already');
    assert.deepEqual(await Sandbox.listSnapshots({ sandboxId: sb.sandboxId }).nextItems(), []);
  });
});

test('a paused sandbox keeps its files, processes and streams, and resumes on connect', async () => {
  await withSandbox('base', async (sb) => {
    await sb.files.write('/home/user/kept.txt', 'kept');
    // A process left running in the background, and a command the
    // client follows: both stop with the pause and go on after.
    await sb.commands.run('sleep 600 >/dev/null 2>&1 & echo $! > /home/user/bg.pid');
    let seen = '';
    const ticking = await sb.commands.run('for i in $(seq 1 40); do echo tick $i; sleep 0.1; done', { background: true, onStdout: (d) => { seen += d; } });
    assert.ok(await until(5_000, () => seen.includes('tick 3')), `the command's first ticks: ${seen}`);
    assert.equal(await sb.pause(), true);
    assert.equal((await sb.getInfo()).state, 'paused');
    assert.equal(await sb.pause(), false, 'pausing it again says so');
    assert.equal(await sb.isRunning(), false, 'a paused sandbox is not running until it is connected to');
    await assert.rejects(sb.files.read('/home/user/kept.txt'), 'its agent answers nothing while it is paused');
    const paused = seen;
    await sleep(1_000);
    assert.equal(seen, paused, 'a paused command prints nothing');
    const back = await Sandbox.connect(sb.sandboxId);
    assert.equal((await back.getInfo()).state, 'running');
    assert.equal(await back.files.read('/home/user/kept.txt'), 'kept');
    assert.equal((await back.commands.run('kill -0 "$(cat /home/user/bg.pid)" && echo alive')).stdout, 'alive\n', 'the background process survived');
    const done = await ticking.wait();
    assert.equal(done.exitCode, 0);
    assert.ok(seen.includes('tick 40'), `the followed command went on where it stood: ${seen.slice(-40)}`);
  });
});

test("a paused code interpreter keeps its variables", async () => {
  const sb = await CodeSandbox.create();
  try {
    await sb.runCode('x = 41');
    const ctx = await sb.createCodeContext({ language: 'python' });
    await sb.runCode('y = 5', { context: ctx });
    assert.equal(await sb.pause(), true);
    const back = await CodeSandbox.connect(sb.sandboxId);
    assert.equal((await back.runCode('x + 1')).text, '42');
    assert.equal((await back.runCode('y * 2', { context: ctx })).text, '10');
  } finally {
    await sb.kill().catch(() => {});
  }
});

test('network: denyOut by CIDR with allowOut exceptions, all traffic denied, egressProxy, as getInfo shows them', async () => {
  const { ORIGIN, SOCKS } = process.env;
  // The origin is on the host's loopback: through the egress proxy, which
  // NO_PROXY would skip for 127.0.0.1.
  const fetchIn = (sb) => sb.commands.run(`python3 -c "import urllib.request; print(urllib.request.urlopen('http://${ORIGIN}/', timeout=10).read().decode())"`,
    { envs: { NO_PROXY: '', no_proxy: '' } });
  // reaches says whether sb fetched the origin; what it got otherwise
  // goes to the log.
  const reaches = async (sb) => {
    try {
      return (await fetchIn(sb)).stdout === 'hello from the origin\n';
    } catch (e) {
      if (!(e instanceof CommandExitError)) throw e;
      console.log(`fetching the origin: exit ${e.exitCode}: ${e.stderr.trim().split('\n').pop()}`);
      return false;
    }
  };
  const socksTargets = async () => (await fetch(`http://${ORIGIN}/socks-targets`)).json();

  await withSandbox('python', async (sb) => {
    assert.equal(await reaches(sb), true, 'the template allows the origin');
    await sb.updateNetwork({ denyOut: ['127.0.0.0/8'] });
    assert.equal(await reaches(sb), false, 'a CIDR in denyOut, every port');
    await sb.updateNetwork({ denyOut: ['127.0.0.0/8'], allowOut: [ORIGIN] });
    assert.equal(await reaches(sb), true, 'allowOut wins over denyOut');
    await sb.updateNetwork({ denyOut: ['0.0.0.0/0'] });
    assert.equal(await reaches(sb), false, 'all traffic denied');
    assert.deepEqual((await sb.getInfo()).network?.denyOut, ['0.0.0.0/0']);
    await sb.updateNetwork({});
    assert.equal(await reaches(sb), true, 'an update without rules gives back what the template allows');
  });

  const before = (await socksTargets()).length;
  await withSandbox('python', async (sb) => {
    assert.equal(await reaches(sb), true, 'through the SOCKS5 proxy');
    const targets = await socksTargets();
    assert.deepEqual(targets.slice(before), [ORIGIN], 'the proxy made the connection');
    const info = await sb.getInfo();
    assert.deepEqual(info.network?.egressProxy, { address: SOCKS, username: 'proxy-user' }, 'shown without its password');
    await sb.updateNetwork({ egressProxy: { address: SOCKS, username: 'proxy-user', password: 'wrong' } });
    assert.equal(await reaches(sb), false, 'a proxy that refuses fails closed: nothing goes out directly');
    await sb.updateNetwork({});
    assert.equal(await reaches(sb), true);
    assert.equal((await socksTargets()).length, before + 1, 'without the proxy, directly');
  }, { network: { egressProxy: { address: SOCKS, username: 'proxy-user', password: 'proxy-password' } } });

  await assert.rejects(Sandbox.create('python', { network: { egressProxy: { address: '127.0.0.1:9' } } }), /network allows/, 'a proxy the template does not allow');
});

test('pause({ keepMemory: false }) keeps the files alone', async () => {
  await withSandbox('base', async (sb) => {
    await sb.files.write('/home/user/kept.txt', 'kept');
    await sb.commands.run('sleep 600 >/dev/null 2>&1 & echo $! > /home/user/bg.pid');
    assert.equal(await sb.pause({ keepMemory: false }), true);
    const back = await Sandbox.connect(sb.sandboxId);
    assert.equal(await back.files.read('/home/user/kept.txt'), 'kept');
    await assert.rejects(back.commands.run('grep -qx sleep "/proc/$(cat /home/user/bg.pid)/comm"'), CommandExitError, 'its processes are gone');
  });
});

test('lifecycle: paused at the timeout, memory kept; connect, or a call when autoResume, wakes it', async () => {
  await withSandbox('base', async (sb) => {
    await sb.commands.run('sleep 600 >/dev/null 2>&1 & echo $! > /home/user/bg.pid');
    assert.deepEqual((await sb.getInfo()).lifecycle, { onTimeout: 'pause', autoResume: false });
    assert.ok(await until(20_000, async () => (await sb.getInfo()).state === 'paused'), 'paused at its timeout');
    assert.equal(await sb.isRunning(), false, 'its agent answers nothing until connect');
    assert.ok((await Sandbox.list().nextItems()).some((s) => s.sandboxId === sb.sandboxId && s.state === 'paused'), 'listed as paused');
    const back = await Sandbox.connect(sb.sandboxId, { timeoutMs: 60_000 });
    const info = await back.getInfo();
    assert.equal(info.state, 'running');
    assert.ok(info.endAt.getTime() > Date.now() + 30_000, `the connect's timeout: ${info.endAt}`);
    assert.equal((await back.commands.run('kill -0 "$(cat /home/user/bg.pid)" && echo alive')).stdout, 'alive\n', 'its processes kept');
    await back.setTimeout(1_000);
    assert.ok(await until(20_000, async () => (await back.getInfo()).state === 'paused'), 'paused again at the timeout setTimeout set');
  }, { timeoutMs: 2_000, lifecycle: { onTimeout: 'pause' } });

  await withSandbox('base', async (sb) => {
    await sb.files.write('/home/user/kept.txt', 'kept');
    assert.ok(await until(20_000, async () => (await sb.getInfo()).state === 'paused'));
    assert.equal(await sb.files.read('/home/user/kept.txt'), 'kept', 'a call wakes it');
    const info = await sb.getInfo();
    assert.equal(info.state, 'running');
    assert.deepEqual(info.lifecycle, { onTimeout: 'pause', autoResume: true });
    // A fork pauses at its own timeout too.
    const [fork] = await sb.fork({ timeoutMs: 2_000 });
    try {
      assert.deepEqual((await fork.getInfo()).lifecycle, { onTimeout: 'pause', autoResume: true });
      assert.ok(await until(20_000, async () => (await fork.getInfo()).state === 'paused'), 'the fork paused at its timeout');
    } finally {
      await fork.kill().catch(() => {});
    }
  }, { timeoutMs: 2_000, lifecycle: { onTimeout: 'pause', autoResume: true } });

  await withSandbox('base', async (sb) => {
    await sb.files.write('/home/user/kept.txt', 'kept');
    await sb.commands.run('sleep 600 >/dev/null 2>&1 & echo $! > /home/user/bg.pid');
    assert.ok(await until(20_000, async () => (await sb.getInfo()).state === 'paused'));
    const back = await Sandbox.connect(sb.sandboxId);
    assert.equal(await back.files.read('/home/user/kept.txt'), 'kept', 'its files kept');
    // Its pid may name another process in the new container: the sleep
    // is what must be gone.
    await assert.rejects(back.commands.run('grep -qx sleep "/proc/$(cat /home/user/bg.pid)/comm"'), CommandExitError, 'its processes gone');
  }, { timeoutMs: 2_000, lifecycle: { onTimeout: { action: 'pause', keepMemory: false } } });

  // What the SDK refuses itself, the API refuses too.
  for (const body of [{ autoPause: true, autoPauseMemory: false, autoResume: { enabled: true } }, { autoResume: { enabled: true } }, { autoPauseMemory: true }]) {
    const res = await fetch(`${process.env.E2B_API_URL}/sandboxes`, {
      method: 'POST', headers: { 'X-API-KEY': process.env.E2B_API_KEY, 'Content-Type': 'application/json' },
      body: JSON.stringify({ templateID: 'base', ...body }),
    });
    assert.equal(res.status, 400, `${JSON.stringify(body)}: ${await res.text()}`);
  }
});

test('commands: output, exit codes, env, cwd, stdin, background, timeouts', async () => {
  await withSandbox('base', async (sb) => {
    const r = await sb.commands.run('echo out; echo err >&2');
    assert.equal(r.exitCode, 0);
    assert.equal((await sb.commands.run('pwd; echo $HOME; cd ~ && pwd')).stdout, '/home/user\n/home/user\n/home/user\n', "E2B's home by name");
    assert.equal(r.stdout, 'out\n');
    assert.equal(r.stderr, 'err\n');

    await assert.rejects(sb.commands.run('echo partial; exit 3'), (e) => e instanceof CommandExitError && e.exitCode === 3 && e.stdout === 'partial\n');

    await sb.files.makeDir('/home/user/sub');
    const env = await sb.commands.run('pwd; echo "$FOO"', { cwd: '/home/user/sub', envs: { FOO: 'bar' } });
    assert.equal(env.stdout, '/home/user/sub\nbar\n');

    // The home E2B's clients write to is where commands find it.
    await sb.files.write('/home/user/hello.py', 'print("hi from a file")');
    const listed = (await sb.commands.run('cat /home/user/hello.py && ls /workspace')).stdout;
    assert.ok(listed.startsWith('print("hi from a file")hello.py\n') && listed.includes('sub\n'), listed);

    const cat = await sb.commands.run('cat', { background: true, stdin: true });
    await sb.commands.sendStdin(cat.pid, 'line one\n');
    await sb.commands.sendStdin(cat.pid, 'line two\n');
    await sb.commands.closeStdin(cat.pid);
    assert.equal((await cat.wait()).stdout, 'line one\nline two\n');

    // A server beside it, which killing another command leaves alone.
    const server = await sb.commands.run('echo $$ > /home/user/server.pid; exec sleep 600', { background: true });
    const ticks = [];
    const bg = await sb.commands.run('i=0; while true; do i=$((i+1)); echo tick $i; sleep 0.2; done', {
      background: true, onStdout: (d) => ticks.push(d),
    });
    assert.ok(await until(10_000, () => ticks.length >= 3), `a background command's output streams (${ticks.length})`);
    assert.ok((await sb.commands.list()).some((p) => p.pid === bg.pid && p.cmd === '/bin/bash'), 'listed while it runs');
    // Another client follows it too.
    const seen = [];
    const follower = await sb.commands.connect(bg.pid, { onStdout: (d) => seen.push(d) });
    assert.ok(await until(10_000, () => seen.length >= 2), 'a second client follows its output');
    assert.equal(await sb.commands.kill(bg.pid), true);
    await assert.rejects(bg.wait(), CommandExitError);
    await assert.rejects(follower.wait(), CommandExitError);
    assert.ok(await until(5_000, async () => !(await sb.commands.list()).some((p) => p.pid === bg.pid)), 'gone from the list once killed');
    assert.equal(await sb.commands.kill(bg.pid), false, 'killing it again finds nothing');

    await assert.rejects(sb.commands.run('sleep 30', { timeoutMs: 1000 }), TimeoutError);
    assert.equal((await sb.commands.run('kill -0 "$(cat /home/user/server.pid)" && echo alive')).stdout, 'alive\n',
      'a kill and a timeout end their own command, not the server beside them');
    assert.ok((await sb.commands.list()).some((p) => p.pid === server.pid), 'the server is still listed');
    assert.equal(await sb.commands.kill(server.pid), true);
  });
});

test('files: write, read, list, stat, rename, remove; nothing outside the home', async () => {
  await withSandbox('base', async (sb) => {
    const w = await sb.files.write('/home/user/dir/a.txt', 'alpha');
    assert.equal(w.path, '/home/user/dir/a.txt');
    assert.equal(await sb.files.read('/home/user/dir/a.txt'), 'alpha');
    assert.equal(await sb.files.read('dir/a.txt'), 'alpha', 'relative paths start at the home');
    await sb.files.write([{ path: '/home/user/dir/b.bin', data: new Uint8Array([0, 1, 2, 255]) }, { path: '/home/user/dir/c.txt', data: 'gamma' }]);
    assert.deepEqual(await sb.files.read('/home/user/dir/b.bin', { format: 'bytes' }), new Uint8Array([0, 1, 2, 255]));

    const names = (await sb.files.list('/home/user/dir')).map((e) => `${e.name}:${e.type}`).sort();
    assert.deepEqual(names, ['a.txt:file', 'b.bin:file', 'c.txt:file']);
    assert.equal(await sb.files.makeDir('/home/user/dir/deep/er'), true);
    assert.equal(await sb.files.makeDir('/home/user/dir/deep/er'), false, 'making it again says it exists');
    const deep = (await sb.files.list('/home/user/dir', { depth: 2 })).map((e) => e.path).sort();
    assert.ok(deep.includes('/home/user/dir/deep/er'), `depth 2 lists the grandchildren: ${deep}`);

    const info = await sb.files.getInfo('/home/user/dir/a.txt');
    assert.equal(info.size, 5);
    assert.equal(info.type, 'file');
    const moved = await sb.files.rename('/home/user/dir/a.txt', '/home/user/moved.txt');
    assert.equal(moved.path, '/home/user/moved.txt');
    assert.equal(await sb.files.exists('/home/user/dir/a.txt'), false);
    await sb.files.remove('/home/user/moved.txt');
    assert.equal(await sb.files.exists('/home/user/moved.txt'), false);

    await assert.rejects(sb.files.read('/etc/passwd'), InvalidArgumentError);
    await assert.rejects(sb.files.write('/etc/evil', 'x'), InvalidArgumentError);
    await assert.rejects(sb.files.read('/home/user/../../etc/passwd'), (e) => e instanceof InvalidArgumentError || e instanceof NotFoundError);
    // A link the code plants to lead out is never followed.
    await sb.commands.run('ln -s /etc/passwd /home/user/link && mkfifo /home/user/fifo');
    await assert.rejects(sb.files.read('/home/user/link'));
    await assert.rejects(sb.files.read('/home/user/fifo'));
    await assert.rejects(sb.files.write('/home/user/link/x', 'x'));
  });
});

test('signed file URLs: downloadUrl and uploadUrl work with no header, for their path and operation alone, until they expire', async () => {
  await withSandbox('base', async (sb) => {
    await sb.files.write('/home/user/shared.txt', 'signed');
    const down = await sb.downloadUrl('/home/user/shared.txt');
    assert.match(down, /signature=v1_/);
    const got = await fetch(down);
    assert.equal(got.status, 200);
    assert.equal(await got.text(), 'signed');

    const up = await sb.uploadUrl('/home/user/uploaded.txt', { useSignatureExpiration: 60 });
    const form = new FormData();
    form.append('file', new Blob(['uploaded']), 'uploaded.txt');
    const put = await fetch(up, { method: 'POST', body: form });
    assert.equal(put.status, 200, await put.text());
    assert.equal(await sb.files.read('/home/user/uploaded.txt'), 'uploaded');

    const other = new URL(down);
    other.searchParams.set('path', '/home/user/uploaded.txt');
    assert.equal((await fetch(other)).status, 401, 'a signature is for its own path');
    assert.equal((await fetch(down, { method: 'POST', body: form })).status, 401, 'a download URL does not upload');
    const expired = await sb.downloadUrl('/home/user/shared.txt', { useSignatureExpiration: -10 });
    assert.equal((await fetch(expired)).status, 401, 'an expired signature');
    // A signature opens that file alone, not the rest of the agent.
    const envs = new URL(down);
    envs.pathname = '/envs';
    assert.equal((await fetch(envs, { headers: { 'E2b-Sandbox-Id': sb.sandboxId } })).status, 401, 'a download URL does not read the environment');
    const start = new URL(up);
    start.pathname = '/process.Process/Start';
    const started = await fetch(start, { method: 'POST', headers: { 'E2b-Sandbox-Id': sb.sandboxId, 'Content-Type': 'application/json' }, body: '{"process":{"cmd":"true"}}' });
    assert.equal(started.status, 401, 'an upload URL starts no process');
    const bare = new URL(down);
    bare.searchParams.delete('signature');
    assert.notEqual((await fetch(bare)).status, 200, 'no signature, no header');
  });
});

test('files.watchDir reports what changes', async () => {
  await withSandbox('base', async (sb) => {
    await sb.files.makeDir('/home/user/watched');
    const events = [];
    const w = await sb.files.watchDir('/home/user/watched', (ev) => events.push(`${ev.type} ${ev.name}`));
    const has = (want) => until(10_000, () => events.includes(want));
    await sb.files.write('/home/user/watched/x.txt', 'one');
    assert.ok(await has('create x.txt'), `created: ${events}`);
    await sb.commands.run('echo more >> /home/user/watched/x.txt');
    assert.ok(await has('write x.txt'), `written: ${events}`);
    await sb.files.remove('/home/user/watched/x.txt');
    assert.ok(await has('remove x.txt'), `removed: ${events}`);
    await w.stop();
  });
});

test('pty: an interactive shell', async () => {
  await withSandbox('base', async (sb) => {
    let screen = '';
    const pty = await sb.pty.create({ cols: 80, rows: 24, onData: (d) => { screen += Buffer.from(d).toString(); } });
    await sb.pty.resize(pty.pid, { cols: 120, rows: 40 });
    await sb.pty.sendInput(pty.pid, new TextEncoder().encode('echo cols=$(tput cols) answer=$((6*7))\n'));
    assert.ok(await until(10_000, () => screen.includes('answer=42')), `the shell answered: ${JSON.stringify(screen.slice(-300))}`);
    assert.match(screen, /cols=120/);
    await sb.pty.sendInput(pty.pid, new TextEncoder().encode('exit\n'));
    const r = await pty.wait();
    assert.equal(r.exitCode, 0);
  });
});

test('the code interpreter keeps state, shows errors, charts and tables', async () => {
  const sb = await CodeSandbox.create();
  try {
    let e = await sb.runCode('x = 41\nprint("set")');
    assert.deepEqual(e.logs.stdout, ['set\n']);
    e = await sb.runCode('x + 1');
    assert.equal(e.text, '42');
    assert.equal(e.results[0].isMainResult, true);

    e = await sb.runCode('1/0');
    assert.equal(e.error.name, 'ZeroDivisionError');
    assert.equal(e.error.value, 'division by zero');
    assert.match(e.error.traceback, /Traceback/);

    e = await sb.runCode('import matplotlib.pyplot as plt\nplt.plot([1, 2, 3], [1, 4, 9])\nplt.show()');
    const png = e.results.find((r) => r.png);
    assert.ok(png, `a chart comes as PNG: ${JSON.stringify(e.results.map((r) => r.formats()))}`);
    assert.equal(Buffer.from(png.png, 'base64').subarray(1, 4).toString(), 'PNG');
    assert.ok(Buffer.from(png.png, 'base64').length > 1000);

    e = await sb.runCode('import pandas as pd\npd.DataFrame({"a": [1, 2], "b": [3, 4]})');
    assert.match(e.results[0].html, /<table/);
    assert.match(e.text, /a\s+b/);

    const ctx = await sb.createCodeContext({ language: 'python' });
    await sb.runCode('y = 5', { context: ctx });
    assert.equal((await sb.runCode('y * 2', { context: ctx })).text, '10');
    assert.equal((await sb.runCode('x', { context: ctx })).error.name, 'NameError', 'contexts do not share state');
    assert.ok((await sb.listCodeContexts()).some((c) => c.id === ctx.id));
    await sb.restartCodeContext(ctx);
    assert.equal((await sb.runCode('y', { context: ctx })).error.name, 'NameError', 'a restart forgets');
    await sb.removeCodeContext(ctx);
    assert.ok(!(await sb.listCodeContexts()).some((c) => c.id === ctx.id));
    // The Code Interpreter's template runs JavaScript, TypeScript, R, Java
    // and Bash beside Python, sharing its files, in /home/user.
    await sb.runCode('open("shared.txt", "w").write("from python")');
    assert.equal((await sb.runCode('require("fs").readFileSync("shared.txt", "utf8")', { language: 'javascript' })).text, 'from python');
    assert.equal((await sb.runCode('const n: number = 21; n * 2', { language: 'ts' })).text, '42');
    assert.equal((await sb.runCode('toupper(readLines("shared.txt", warn = FALSE))', { language: 'r' })).text, '[1] "FROM PYTHON"');
    assert.deepEqual((await sb.runCode('cat shared.txt; echo', { language: 'bash' })).logs.stdout, ['from python\n']);
    assert.equal((await sb.runCode('Files.readString(Path.of("shared.txt")) + " in " + System.getProperty("user.dir")', { language: 'java' })).text, 'from python in /home/user');
    await assert.rejects(sb.runCode('1', { language: 'cobol' }), 'a sandbox runs no COBOL');
  } finally {
    await sb.kill();
  }
});

test('code contexts: a silent cell is cut at its timeoutMs alone; contexts and files run side by side', async () => {
  const sb = await CodeSandbox.create();
  try {
    await sb.runCode('x = 41');
    const other = await sb.createCodeContext({ language: 'python' });
    // Silent for longer than its timeoutMs: cut then, not after requestTimeoutMs.
    const began = Date.now();
    await assert.rejects(sb.runCode('import time\ntime.sleep(600)', { context: other, timeoutMs: 2_000, requestTimeoutMs: 30_000 }));
    assert.ok(Date.now() - began < 25_000, `cut after ${Date.now() - began} ms`);
    assert.equal((await sb.runCode('x + 1')).text, '42', 'another context keeps its state');

    // One context waits for a file the files API writes, then for one the
    // default context writes: one after the other, it would never end.
    const waiting = sb.runCode('import os, time\nfor n in ("/home/user/sent", "/home/user/written"):\n    while not os.path.exists(n):\n        time.sleep(0.05)\nprint("both")', { context: other, timeoutMs: 20_000 });
    await sleep(300);
    await sb.files.write('/home/user/sent', 'x');
    await sb.runCode('open("/home/user/written", "w").close()');
    assert.deepEqual((await waiting).logs.stdout, ['both\n']);
  } finally {
    await sb.kill();
  }
});

test('the code interpreter runs javascript in a node sandbox', async () => {
  const sb = await CodeSandbox.create('node');
  try {
    await sb.runCode('const xs = [1, 2, 3]', { language: 'js' });
    const e = await sb.runCode('console.log("sum"); xs.reduce((a, b) => a + b, 0)', { language: 'javascript' });
    assert.deepEqual(e.logs.stdout, ['sum\n']);
    assert.equal(e.text, '6');
    assert.equal((await sb.runCode('nope()', { language: 'js' })).error.name, 'ReferenceError');
  } finally {
    await sb.kill();
  }
});

test('keys: a wrong key, an unknown sandbox, another key\'s sandbox', async () => {
  await assert.rejects(Sandbox.create({ apiKey: 'e2b_0123456789abcdef0123456789abcdef01234567' }), AuthenticationError);
  await assert.rejects(Sandbox.connect('no-such-sandbox'), SandboxNotFoundError);
  await withSandbox('base', async (sb) => {
    const other = { apiKey: process.env.E2B_OTHER_KEY };
    const theirs = await Sandbox.list(other).nextItems();
    assert.ok(!theirs.some((s) => s.sandboxId === sb.sandboxId), 'another key does not list it');
    await assert.rejects(Sandbox.connect(sb.sandboxId, other), SandboxNotFoundError);
    await assert.rejects(Sandbox.getInfo(sb.sandboxId, other), SandboxNotFoundError);
    assert.equal(await Sandbox.kill(sb.sandboxId, other), false, 'nor kills it');
    assert.equal(await sb.isRunning(), true);
  });
});

test('a command the policies deny is the SDK\'s error, and in the history', async () => {
  await withSandbox('base', async (sb) => {
    await assert.rejects(sb.commands.run('reboot'), (e) => /policy_denied/.test(e.message) && /deny-list/.test(e.message));
    // The history is written in the background: wait for it.
    let out = '';
    const recorded = await until(10_000, () => {
      out = execFileSync(process.env.SANDBOXCTL, ['history', '--json', '--session', sb.sandboxId, '--outcome', 'denied']).toString();
      return JSON.parse(out).some((r) => r.kind === 'process');
    });
    assert.ok(recorded, `recorded: ${out}`);
  });
});

test('two clients, two sandboxes, at once', async () => {
  const run = (tag) => withSandbox('base', async (sb) => {
    await sb.files.write('/home/user/mine.txt', tag);
    const r = await sb.commands.run('cat mine.txt; ls | grep -c txt');
    return r.stdout;
  });
  const [a, b] = await Promise.all([run('A'), run('B')]);
  assert.equal(a, 'A1\n');
  assert.equal(b, 'B1\n');
});
