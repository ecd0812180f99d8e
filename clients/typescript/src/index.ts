// @sandboxd/client: run untrusted code in sandboxd's warm, hardened
// containers from Node.js, over the daemon's Unix socket with Node's own
// http module.
import * as http from "node:http";
import type { Duplex } from "node:stream";
import { fromBody, Unreachable } from "./errors.js";
import { connectPort } from "./ports.js";
import type {
  Context, Desktop, DesktopAction, Event, ExecRequest, FileEntry, FileEvent, Preview, RunRequest, SessionMetrics, RunResult, Session,
  SessionRequest, Snapshot,
} from "./types.js";

export * from "./errors.js";
export type * from "./types.js";

export const DEFAULT_SOCKET = "/run/sandboxd/sandboxd.sock";

export interface ClientOptions {
  /** Default: $SANDBOXD_SOCKET, then /run/sandboxd/sandboxd.sock. */
  socket?: string;
}

interface Answer {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: Buffer;
}

/** A stream's bytes exactly as the program wrote them. */
export function output(res: RunResult, stream: "stdout" | "stderr" = "stdout"): Buffer {
  const [text, enc] = stream === "stdout" ? [res.stdout, res.stdout_encoding] : [res.stderr, res.stderr_encoding];
  return enc === "base64" ? Buffer.from(text, "base64") : Buffer.from(text, "utf8");
}

/** The final value a context showed, as text (a figure's or a display()
 * call's text comes before it). */
export function text(res: RunResult): string | undefined {
  const texts = (res.display ?? []).filter((d) => d.mime === "text/plain");
  const value = texts.filter((d) => d.main);
  return (value.length ? value : texts).at(-1)?.data;
}

export class Client {
  readonly socket: string;

  constructor(opts: ClientOptions = {}) {
    this.socket = opts.socket ?? process.env.SANDBOXD_SOCKET ?? DEFAULT_SOCKET;
  }

  private open(method: string, path: string, body?: unknown, accept = "application/json",
    contentType = "application/json"): Promise<http.IncomingMessage> {
    const data = body === undefined ? undefined : Buffer.isBuffer(body) ? body : Buffer.from(JSON.stringify(body));
    const headers: Record<string, string | number> = { Accept: accept };
    if (data) {
      headers["Content-Type"] = contentType;
      headers["Content-Length"] = data.length;
    }
    return new Promise((resolve, reject) => {
      const req = http.request({ socketPath: this.socket, method, path, headers }, async (res) => {
        if ((res.statusCode ?? 500) < 300) {
          resolve(res);
          return;
        }
        const raw = await collect(res);
        let parsed: { error?: { code?: string; message?: string } };
        try {
          parsed = JSON.parse(raw.toString());
        } catch {
          parsed = { error: { code: "internal", message: raw.toString().slice(0, 500) } };
        }
        reject(fromBody(res.statusCode ?? 500, parsed));
      });
      req.on("error", (e: NodeJS.ErrnoException) => {
        if (e.code === "ENOENT" || e.code === "ECONNREFUSED") {
          reject(new Unreachable(`no sandboxd answers on ${this.socket} (${e.code}): start it, or set SANDBOXD_SOCKET`, "unreachable", 0));
        } else {
          reject(e);
        }
      });
      req.end(data);
    });
  }

  private async call<T>(method: string, path: string, body?: unknown, accept?: string, contentType?: string): Promise<Answer & { json: T }> {
    const res = await this.open(method, path, body, accept, contentType);
    const raw = await collect(res);
    const json = raw.length && String(res.headers["content-type"] ?? "").startsWith("application/json") ? JSON.parse(raw.toString()) : undefined;
    return { status: res.statusCode ?? 0, headers: res.headers, body: raw, json };
  }

  /** Events as they come: output, then the result. */
  async *events(path: string, body: unknown): AsyncGenerator<Event> {
    for await (const ev of this.lines<Event>("POST", path, body)) {
      if (ev.type === "error") throw fromBody(200, { error: ev.error });
      yield ev;
    }
  }

  /** A stream of JSON lines (application/x-ndjson), each as it comes. */
  async *lines<T>(method: string, path: string, body?: unknown): AsyncGenerator<T> {
    const res = await this.open(method, path, body, "application/x-ndjson");
    let pending = "";
    try {
      for await (const chunk of res) {
        pending += chunk.toString();
        let nl: number;
        while ((nl = pending.indexOf("\n")) >= 0) {
          const line = pending.slice(0, nl).trim();
          pending = pending.slice(nl + 1);
          if (line) yield JSON.parse(line) as T;
        }
      }
    } finally {
      res.destroy();
    }
  }

  async health(): Promise<Record<string, unknown>> {
    return (await this.call<Record<string, unknown>>("GET", "/v1/health")).json;
  }

  async languages(): Promise<Record<string, unknown>[]> {
    return (await this.call<{ languages: Record<string, unknown>[] }>("GET", "/v1/languages")).json.languages;
  }

  /** Requests a policy in mode "ask" holds for a person, newest first; state "" lists all. */
  async approvals(state = "pending"): Promise<Record<string, unknown>[]> {
    return (await this.call<{ approvals: Record<string, unknown>[] }>("GET", "/v1/approvals?state=" + encodeURIComponent(state))).json.approvals;
  }

  /** Let a pending request run; who approved is this process's user. */
  async approve(id: string, reason = ""): Promise<Record<string, unknown>> {
    return (await this.call<Record<string, unknown>>("POST", `/v1/approvals/${encodeURIComponent(id)}/approve`, { reason })).json;
  }

  /** Refuse a pending request: its client gets approval_denied with the reason. */
  async deny(id: string, reason: string): Promise<Record<string, unknown>> {
    return (await this.call<Record<string, unknown>>("POST", `/v1/approvals/${encodeURIComponent(id)}/deny`, { reason })).json;
  }

  /** The OpenAPI document of the API the daemon serves. */
  async openapi(): Promise<any> {
    return (await this.call("GET", "/v1/openapi.json")).json;
  }

  /** Run a program once in a fresh sandbox. */
  async run(req: RunRequest): Promise<RunResult> {
    return (await this.call<RunResult>("POST", "/v1/run", req)).json;
  }

  /** Run a program once, its output as events as it comes, then the result. */
  stream(req: RunRequest): AsyncGenerator<Event> {
    return this.events("/v1/run", req);
  }

  /** Create a session: a sandbox of one's own whose files persist. */
  async createSession(req: SessionRequest): Promise<SessionHandle> {
    return new SessionHandle(this, (await this.call<Session>("POST", "/v1/sessions", req)).json);
  }

  async sessions(): Promise<Session[]> {
    return (await this.call<{ sessions: Session[] }>("GET", "/v1/sessions")).json.sessions;
  }

  async snapshots(): Promise<Snapshot[]> {
    return (await this.call<{ snapshots: Snapshot[] }>("GET", "/v1/snapshots")).json.snapshots;
  }

  async deleteSnapshot(ref: string): Promise<void> {
    await this.call("DELETE", "/v1/snapshots/" + encodeURIComponent(ref));
  }

  /** @internal */
  request<T>(method: string, path: string, body?: unknown, accept?: string, contentType?: string) {
    return this.call<T>(method, path, body, accept, contentType);
  }
}

/** A session; `close()` removes it and its sandbox. */
export class SessionHandle {
  readonly id: string;
  private readonly path: string;

  constructor(private readonly client: Client, public info: Session) {
    this.id = info.id;
    this.path = "/v1/sessions/" + encodeURIComponent(info.id);
  }

  /** A command (argv), a program (code), or code in a context (code and
   * context: variables persist, the final value comes back in display). */
  async exec(req: ExecRequest): Promise<RunResult> {
    return (await this.client.request<RunResult>("POST", this.path + "/exec", req)).json;
  }

  stream(req: ExecRequest): AsyncGenerator<Event> {
    return this.client.events(this.path + "/exec", req);
  }

  async writeFile(path: string, data: string | Buffer, mode?: number): Promise<void> {
    const q = mode === undefined ? "" : "?mode=" + mode.toString(8);
    await this.client.request("PUT", this.path + "/files/" + filePath(path) + q, Buffer.from(data), "application/json", "application/octet-stream");
  }

  /** A file's bytes (a directory comes as a tar archive). */
  async readFile(path: string): Promise<Buffer> {
    return (await this.client.request("GET", this.path + "/files/" + filePath(path), undefined, "*/*")).body;
  }

  async listFiles(path = ".", recursive = false): Promise<FileEntry[]> {
    const q = new URLSearchParams({ path, recursive: String(recursive) });
    return (await this.client.request<{ entries: FileEntry[] }>("GET", this.path + "/files?" + q)).json.entries;
  }

  /** What changes under a directory of the workspace, as it happens: first
   * "ready" (the watch is set), then create, write, remove, rename and chmod;
   * "overflow" says how many were left out. Until the loop ends or the
   * directory goes. */
  watch(path = ".", recursive = false): AsyncGenerator<FileEvent> {
    const q = new URLSearchParams({ path, recursive: String(recursive) });
    return this.client.lines<FileEvent>("GET", this.path + "/watch?" + q);
  }

  async deleteFile(path: string): Promise<void> {
    await this.client.request("DELETE", this.path + "/files/" + filePath(path));
  }

  /** The TCP ports listening inside the sandbox. */
  async ports(): Promise<{ address: string; port: number }[]> {
    return (await this.client.request<{ ports: { address: string; port: number }[] }>("GET", this.path + "/ports")).json.ports;
  }

  /** What the sandbox uses (CPU, memory, processes, workspace bytes, egress bytes): `now`, and `series` over the last minutes. */
  async metrics(): Promise<SessionMetrics> {
    return (await this.client.request<SessionMetrics>("GET", this.path + "/metrics")).json;
  }

  /** A link that opens the server on `port` to a browser on sandboxd's TCP listener, at an origin of its own, for `ttl` (default "1h"). */
  async preview(port: number, ttl?: string): Promise<Preview> {
    return (await this.client.request<Preview>("POST", `${this.path}/ports/${Math.trunc(port)}/preview`, ttl ? { ttl } : {})).json;
  }

  /** One TCP connection to `port` on the sandbox's own loopback (a server the
   * session runs), carried by sandboxd: a Duplex stream of its bytes. */
  connectPort(port: number): Promise<Duplex> {
    return connectPort(this.client.socket, `${this.path}/ports/${Math.trunc(port)}/connect`);
  }

  /** End every preview link of the session made so far. */
  async revokePreviews(): Promise<void> {
    await this.client.request("DELETE", this.path + "/previews");
  }

  /** The screen of a session whose language has a desktop (the shipped "desktop"): its size, the pointer, the focused window and the windows shown; InvalidRequest for a session without one. */
  async desktop(): Promise<Desktop> {
    return (await this.client.request<Desktop>("GET", this.path + "/desktop")).json;
  }

  /** The session's screen, pointer included, as PNG bytes. */
  async screenshot(): Promise<Buffer> {
    return (await this.client.request("GET", this.path + "/desktop/screenshot", undefined, "image/png")).body;
  }

  /** Do one thing on the session's screen and get the screen as it is then; a point off the screen is InvalidRequest. */
  async desktopAction(action: DesktopAction): Promise<Desktop> {
    return (await this.client.request<Desktop>("POST", this.path + "/desktop/actions", action)).json;
  }

  /** Move the pointer to x, y. */
  move(x: number, y: number): Promise<Desktop> {
    return this.desktopAction({ action: "move", x, y });
  }

  /** Click `button` (left by default) at x, y, or where the pointer is. */
  click(x?: number, y?: number, button?: DesktopAction["button"]): Promise<Desktop> {
    return this.desktopAction({ action: "click", x, y, button });
  }

  /** Double-click `button` (left by default) at x, y, or where the pointer is. */
  doubleClick(x?: number, y?: number, button?: DesktopAction["button"]): Promise<Desktop> {
    return this.desktopAction({ action: "double_click", x, y, button });
  }

  /** Hold `button` (left by default) from x, y to toX, toY. */
  drag(x: number, y: number, toX: number, toY: number, button?: DesktopAction["button"]): Promise<Desktop> {
    return this.desktopAction({ action: "drag", x, y, to_x: toX, to_y: toY, button });
  }

  /** Turn the wheel `amount` clicks (3 by default) up, down, left or right, at x, y or where the pointer is. */
  scroll(direction: NonNullable<DesktopAction["direction"]>, amount?: number, x?: number, y?: number): Promise<Desktop> {
    return this.desktopAction({ action: "scroll", direction, amount, x, y });
  }

  /** Type text, as keystrokes, to the focused window (never shell text). */
  typeText(text: string): Promise<Desktop> {
    return this.desktopAction({ action: "type", text });
  }

  /** Press a key or chord as xdotool names them ("Return", "ctrl+c"), or several separated by spaces. */
  press(keys: string): Promise<Desktop> {
    return this.desktopAction({ action: "key", keys });
  }

  /** Open a URL or a path of the sandbox in Chromium (a file is shown, never run). */
  open(target: string): Promise<Desktop> {
    return this.desktopAction({ action: "open", target });
  }

  /** Raise and focus a window, by the id the screen's windows give. */
  focus(window: string): Promise<Desktop> {
    return this.desktopAction({ action: "focus", window });
  }

  /** Hibernate the session: its files sleep on disk, its sandbox goes away; the next call wakes it (processes and contexts' memory do not survive). */
  async pause(): Promise<void> {
    this.info = (await this.client.request<Session>("POST", this.path + "/pause")).json;
  }

  /** Freeze the session: its processes stop where they stand, keeping their memory (contexts, servers), and use no CPU; the next call thaws it. */
  async freeze(): Promise<void> {
    this.info = (await this.client.request<Session>("POST", this.path + "/freeze")).json;
  }

  /** Wake a hibernated or frozen session now (any call on it does so too). */
  async resume(): Promise<void> {
    this.info = (await this.client.request<Session>("POST", this.path + "/resume")).json;
  }

  /** Set what the session may reach through the egress proxy (HOST[:PORT] entries within its language's allow-list; empty: nothing). */
  async setNetwork(allow: string[]): Promise<void> {
    this.info = (await this.client.request<Session>("PATCH", this.path + "/network", { allow })).json;
  }

  /** Kill every process and empty the workspace; the id stays. */
  async reset(): Promise<void> {
    this.info = (await this.client.request<Session>("POST", this.path + "/reset")).json;
  }

  async contexts(): Promise<Context[]> {
    return (await this.client.request<{ contexts: Context[] }>("GET", this.path + "/contexts")).json.contexts;
  }

  async snapshot(name: string): Promise<Snapshot> {
    return (await this.client.request<Snapshot>("POST", this.path + "/snapshot", { name })).json;
  }

  /** Sessions that start from this one's workspace as it is now. */
  async fork(count = 1): Promise<SessionHandle[]> {
    const res = await this.client.request<{ sessions: Session[] }>("POST", this.path + "/fork", { count });
    return res.json.sessions.map((s) => new SessionHandle(this.client, s));
  }

  /** Remove the session (one gone already is fine). */
  async close(): Promise<void> {
    try {
      await this.client.request("DELETE", this.path);
    } catch (e) {
      if ((e as { code?: string }).code !== "not_found") throw e;
    }
  }
}

function filePath(p: string): string {
  return p.replace(/^\/+/, "").split("/").map(encodeURIComponent).join("/");
}

async function collect(res: http.IncomingMessage): Promise<Buffer> {
  const parts: Buffer[] = [];
  for await (const c of res) parts.push(c as Buffer);
  return Buffer.concat(parts);
}
