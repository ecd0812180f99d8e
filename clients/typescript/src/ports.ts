// One TCP connection to a port inside a session's sandbox, carried by
// sandboxd over its socket: GET /v1/sessions/{id}/ports/{port}/connect
// upgraded to a WebSocket whose binary frames are the connection's bytes
// (RFC 6455; only its binary frames are needed, so Node's http upgrade
// serves without a WebSocket library).
import * as http from "node:http";
import { randomBytes } from "node:crypto";
import { Duplex } from "node:stream";
import type { Socket } from "node:net";
import { fromBody } from "./errors.js";

const BINARY = 0x2, CLOSE = 0x8, PING = 0x9, PONG = 0xa;

function frame(opcode: number, payload: Buffer): Buffer {
  const n = payload.length;
  const head = n < 126 ? Buffer.from([0x80 | opcode, 0x80 | n])
    : n < 65536 ? Buffer.from([0x80 | opcode, 0x80 | 126, n >> 8, n & 0xff])
    : Buffer.concat([Buffer.from([0x80 | opcode, 0x80 | 127]), (() => { const b = Buffer.alloc(8); b.writeBigUInt64BE(BigInt(n)); return b; })()]);
  const mask = randomBytes(4);
  const masked = Buffer.alloc(n);
  for (let i = 0; i < n; i++) masked[i] = payload[i] ^ mask[i % 4];
  return Buffer.concat([head, mask, masked]);
}

/** A connection to a port in a sandbox, as a Duplex stream of its bytes.
 * It errors with code "ECONNREFUSED" when nothing listens on the port, and
 * with the API's error (e.g. too_many_connections) when sandboxd refused
 * or failed it. */
class PortConnection extends Duplex {
  private buf = Buffer.alloc(0);

  constructor(private readonly sock: Socket, head: Buffer) {
    super();
    sock.on("data", (d: Buffer) => this.feed(d));
    sock.on("end", () => this.push(null));
    sock.on("error", (e) => this.destroy(e));
    if (head.length) this.feed(head);
  }

  private feed(data: Buffer): void {
    this.buf = Buffer.concat([this.buf, data]);
    for (;;) {
      if (this.buf.length < 2) return;
      const opcode = this.buf[0] & 0x0f;
      let n = this.buf[1] & 0x7f, at = 2;
      if (n === 126) {
        if (this.buf.length < 4) return;
        n = this.buf.readUInt16BE(2); at = 4;
      } else if (n === 127) {
        if (this.buf.length < 10) return;
        n = Number(this.buf.readBigUInt64BE(2)); at = 10;
      }
      if (this.buf.length < at + n) return;
      const payload = this.buf.subarray(at, at + n); // the server's frames are not masked
      this.buf = this.buf.subarray(at + n);
      if (opcode === PING) this.sock.write(frame(PONG, payload));
      else if (opcode === CLOSE) return this.ended(payload);
      else if (payload.length) this.push(Buffer.from(payload));
    }
  }

  private ended(payload: Buffer): void {
    const code = payload.length >= 2 ? payload.readUInt16BE(0) : 1000;
    const reason = payload.subarray(2).toString();
    this.sock.end();
    if (code === 1000) {
      this.push(null);
    } else if (code === 4404) { // nothing listens on the port
      this.destroy(Object.assign(new Error(reason), { code: "ECONNREFUSED" }));
    } else { // "CODE: message" of the API's error
      const [apiCode, ...rest] = reason.split(": ");
      this.destroy(fromBody(0, { error: { code: apiCode, message: rest.join(": ") || reason } }));
    }
  }

  override _read(): void {}

  override _write(chunk: Buffer, _enc: BufferEncoding, done: (err?: Error | null) => void): void {
    this.sock.write(frame(BINARY, chunk), done);
  }

  override _final(done: (err?: Error | null) => void): void {
    const bye = Buffer.alloc(2);
    bye.writeUInt16BE(1000);
    this.sock.write(frame(CLOSE, bye), done);
  }

  override _destroy(err: Error | null, done: (err?: Error | null) => void): void {
    this.sock.destroy();
    done(err);
  }
}

/** Opens the WebSocket at path on sandboxd's socket. */
export function connectPort(socketPath: string, path: string): Promise<Duplex> {
  return new Promise((resolve, reject) => {
    const req = http.request({
      socketPath, path, headers: {
        Connection: "Upgrade", Upgrade: "websocket", "Sec-WebSocket-Version": "13", "Sec-WebSocket-Key": randomBytes(16).toString("base64"),
      },
    });
    req.on("upgrade", (_res, sock: Socket, head: Buffer) => resolve(new PortConnection(sock, head)));
    req.on("response", async (res) => { // an error answer before the upgrade
      const chunks: Buffer[] = [];
      for await (const c of res) chunks.push(c as Buffer);
      let body = {};
      try { body = JSON.parse(Buffer.concat(chunks).toString()); } catch { /* not JSON */ }
      reject(fromBody(res.statusCode ?? 500, body));
    });
    req.on("error", reject);
    req.end();
  });
}
