// E2B Desktop's own SDK (@e2b/desktop, pinned in package-lock.json)
// against sandboxd's E2B-compatible listener, as a computer-use agent
// written for E2B calls it: the `desktop` template (examples/e2b.hcl),
// its screen, screenshots, the mouse and keyboard, open, launch, the
// windows, and the VNC stream's start and stop. e2e/e2b_test.go starts
// sandboxd and runs this file with node --test, with E2B_API_KEY,
// E2B_API_URL and E2B_SANDBOX_URL set as examples/e2b.env does.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import http from 'node:http';
import { Sandbox } from '@e2b/desktop';

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function until(ms, check) {
  const end = Date.now() + ms;
  for (;;) {
    if (await check()) return true;
    if (Date.now() > end) return false;
    await sleep(200);
  }
}

// A page whose title says what its text field holds.
const page = `<!doctype html><html><head><title>desktop sdk</title></head>
<body><input id=t autofocus oninput="document.title='typed:'+this.value"></body></html>`;

test('E2B Desktop: screen, mouse, keyboard, windows, open and launch', async () => {
  const desktop = await Sandbox.create({ timeoutMs: 300_000, resolution: [1280, 800] });
  try {
    assert.deepEqual(await desktop.getScreenSize(), { width: 1280, height: 800 });

    const png = await desktop.screenshot();
    assert.ok(png instanceof Uint8Array && png.length > 1000, 'a screenshot');
    assert.deepEqual([...png.slice(0, 8)], [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a], 'a PNG');
    const blob = await desktop.screenshot('blob');
    assert.ok(blob.size > 1000);

    await desktop.moveMouse(100, 200);
    assert.deepEqual(await desktop.getCursorPosition(), { x: 100, y: 200 });
    await desktop.leftClick(300, 300);
    assert.deepEqual(await desktop.getCursorPosition(), { x: 300, y: 300 });
    await desktop.doubleClick();
    await desktop.middleClick();
    await desktop.rightClick();
    await desktop.press('Escape');
    await desktop.scroll('down', 2);
    await desktop.scroll('up');
    await desktop.drag([10, 400], [60, 450]);
    await desktop.mousePress('left');
    await desktop.mouseRelease('left');

    await desktop.files.write('/home/user/site/index.html', page);
    await desktop.commands.run('cd /home/user/site && python3 -m http.server 8000 --bind 127.0.0.1', { background: true });
    assert.ok(await until(10_000, async () => (await desktop.commands.run('curl -sf http://127.0.0.1:8000/ >/dev/null; echo $?')).stdout.trim() === '0'), 'the page served');
    await desktop.open('http://127.0.0.1:8000/');
    let id = '';
    assert.ok(await until(60_000, async () => {
      const ids = (await desktop.getApplicationWindows('chromium').catch(() => [])).filter(Boolean);
      for (const w of ids) {
        if ((await desktop.getWindowTitle(w)).startsWith('desktop sdk')) { id = w; return true; }
      }
      return false;
    }), 'the page in Chromium');
    assert.equal(await desktop.getCurrentWindowId(), id);

    await desktop.write('hello world', { chunkSize: 4, delayInMs: 10 });
    await desktop.press(['ctrl', 'a']);
    await desktop.write('agent');
    await desktop.press('Return');
    assert.ok(await until(10_000, async () => (await desktop.getWindowTitle(id)).startsWith('typed:agent')), 'typed text and a chord in the field');

    await desktop.launch('xfce4-terminal');
    assert.ok(await until(30_000, async () => (await desktop.getApplicationWindows('xfce4-terminal').catch(() => [])).filter(Boolean).length > 0), 'a launched application');

    await desktop.stream.start();
    assert.match(desktop.stream.getUrl(), /vnc\.html/);
    const vnc = await desktop.commands.run('pgrep -x x11vnc >/dev/null && curl -sf http://127.0.0.1:6080/vnc.html | grep -c noVNC');
    assert.ok(Number(vnc.stdout.trim()) > 0, 'noVNC serves the screen in the sandbox');
    // The stream through a preview link of the sandbox's port 6080 (the
    // sandbox's id is its session's), opened as a browser would.
    const link = new URL(execFileSync(process.env.SANDBOXCTL, ['--socket', process.env.SANDBOXD_SOCKET, 'session', 'preview', desktop.sandboxId, '6080']).toString().trim());
    const viaPreview = await new Promise((resolve, reject) => {
      const get = (path, cookie) => http.get({ host: '127.0.0.1', port: link.port, path, headers: { Host: link.host, ...(cookie ? { Cookie: cookie } : {}) } }, (res) => {
        if (res.statusCode >= 300 && res.statusCode < 400) {
          res.resume();
          return get(new URL(res.headers.location, link).pathname + 'vnc.html', (res.headers['set-cookie'] || []).map((c) => c.split(';')[0]).join('; '));
        }
        let body = '';
        res.on('data', (d) => { body += d; });
        res.on('end', () => resolve({ status: res.statusCode, body }));
      }).on('error', reject);
      get(link.pathname + link.search);
    });
    assert.equal(viaPreview.status, 200);
    assert.match(viaPreview.body, /noVNC/, 'noVNC\'s page through the preview link');
    await desktop.stream.stop();
  } finally {
    await desktop.kill().catch(() => {});
  }
});
