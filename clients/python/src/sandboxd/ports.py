"""One TCP connection to a port inside a session's sandbox, carried by
sandboxd over its socket: ``GET /v1/sessions/{id}/ports/{port}/connect``
upgraded to a WebSocket whose binary frames are the connection's bytes
(RFC 6455; the standard library has no WebSocket client, and this needs
only its binary frames)."""
from __future__ import annotations

import base64
import json
import os
import socket as _socket
import struct
from typing import Optional

from . import errors

_CONTINUATION, _TEXT, _BINARY, _CLOSE, _PING, _PONG = 0x0, 0x1, 0x2, 0x8, 0x9, 0xA


class PortConnection:
    """A connection to a port in a sandbox: ``sendall``, ``recv`` (b"" once
    the server closed it) and ``close``, as a socket's. ``recv`` raises
    ``ConnectionRefusedError`` when nothing listens on the port, and the
    API's error (``SandboxdError``, e.g. code ``too_many_connections``) when
    sandboxd refused or failed the connection."""

    def __init__(self, sock: _socket.socket, buffered: bytes) -> None:
        self._sock = sock
        self._raw = buffered  # bytes read past the upgrade's answer
        self._data = b""  # payload not yet returned by recv
        self._closed = False

    # --- the socket's side

    def _read(self, n: int) -> bytes:
        while len(self._raw) < n:
            chunk = self._sock.recv(65536)
            if not chunk:
                raise ConnectionError("sandboxd closed the connection")
            self._raw += chunk
        out, self._raw = self._raw[:n], self._raw[n:]
        return out

    def _send_frame(self, opcode: int, payload: bytes) -> None:
        mask = os.urandom(4)
        n = len(payload)
        if n < 126:
            head = struct.pack("!BB", 0x80 | opcode, 0x80 | n)
        elif n < 1 << 16:
            head = struct.pack("!BBH", 0x80 | opcode, 0x80 | 126, n)
        else:
            head = struct.pack("!BBQ", 0x80 | opcode, 0x80 | 127, n)
        masked = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
        self._sock.sendall(head + mask + masked)

    def _frame(self) -> tuple:
        b0, b1 = self._read(2)
        n = b1 & 0x7F
        if n == 126:
            (n,) = struct.unpack("!H", self._read(2))
        elif n == 127:
            (n,) = struct.unpack("!Q", self._read(8))
        mask = self._read(4) if b1 & 0x80 else b""
        payload = self._read(n)
        if mask:
            payload = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
        return b0 & 0x0F, payload

    # --- a socket's interface

    def sendall(self, data: bytes) -> None:
        """Send bytes to the server in the sandbox."""
        if data:
            self._send_frame(_BINARY, bytes(data))

    def recv(self, bufsize: int = 65536) -> bytes:
        """Up to bufsize bytes the server sent; b"" once it closed."""
        while not self._data:
            if self._closed:
                return b""
            opcode, payload = self._frame()
            if opcode in (_BINARY, _CONTINUATION):
                self._data = payload
            elif opcode == _PING:
                self._send_frame(_PONG, payload)
            elif opcode == _CLOSE:
                self._closed = True
                code = struct.unpack("!H", payload[:2])[0] if len(payload) >= 2 else 1000
                reason = payload[2:].decode(errors="replace")
                if code == 4404:  # nothing listens on the port
                    raise ConnectionRefusedError(reason)
                if code != 1000:  # "CODE: message" of the API's error
                    api_code, _, message = reason.partition(": ")
                    raise errors.from_body(0, {"error": {"code": api_code, "message": message or reason}})
        out, self._data = self._data[:bufsize], self._data[bufsize:]
        return out

    def close(self) -> None:
        """End the connection (the server sees it closed)."""
        try:
            self._send_frame(_CLOSE, struct.pack("!H", 1000))
        except OSError:
            pass
        self._sock.close()

    def __enter__(self) -> "PortConnection":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def connect(socket_path: str, path: str, timeout: Optional[float]) -> PortConnection:
    """Open the WebSocket at path on sandboxd's socket."""
    sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    sock.settimeout(timeout)
    try:
        sock.connect(socket_path)
    except (FileNotFoundError, ConnectionRefusedError) as e:
        sock.close()
        raise errors.Unreachable("no sandboxd answers on %s (%s)" % (socket_path, e)) from None
    key = base64.b64encode(os.urandom(16)).decode()
    sock.sendall(("GET %s HTTP/1.1\r\nHost: sandboxd\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                  "Sec-WebSocket-Key: %s\r\nSec-WebSocket-Version: 13\r\n\r\n" % (path, key)).encode())
    raw = b""
    while b"\r\n\r\n" not in raw:
        chunk = sock.recv(65536)
        if not chunk:
            sock.close()
            raise ConnectionError("sandboxd closed the connection before answering the upgrade")
        raw += chunk
    head, rest = raw.split(b"\r\n\r\n", 1)
    status = int(head.split(b" ", 2)[1])
    if status != 101:
        # An error answer before the upgrade: its JSON body follows.
        length = 0
        for line in head.split(b"\r\n")[1:]:
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value.strip())
        while len(rest) < length:
            chunk = sock.recv(65536)
            if not chunk:
                break
            rest += chunk
        sock.close()
        try:
            body = json.loads(rest[:length] or b"{}")
        except ValueError:
            body = {}
        raise errors.from_body(status, body)
    return PortConnection(sock, rest)
