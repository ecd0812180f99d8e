"""The synchronous client: HTTP/1.1 over sandboxd's Unix socket with the
standard library alone."""
from __future__ import annotations

import http.client
import io
import json
import os
import socket as _socket
import tarfile
import urllib.parse
from typing import Any, Dict, Iterator, List, Optional, Sequence, Union

from . import errors
from . import ports as _ports
from .ports import PortConnection
from .types import Context, Desktop, Event, FileEntry, FileEvent, Result, Session, Snapshot, build

DEFAULT_SOCKET = "/run/sandboxd/sandboxd.sock"

Duration = Union[str, float, int, None]  # "30s", or seconds
Code = Optional[str]


class _UnixConnection(http.client.HTTPConnection):
    def __init__(self, path: str, timeout: Optional[float]) -> None:
        super().__init__("sandboxd", timeout=timeout)
        self._path = path

    def connect(self) -> None:
        sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
        sock.settimeout(self.timeout)
        try:
            sock.connect(self._path)
        except OSError:
            sock.close()
            raise
        self.sock = sock


def _clean(d: Dict[str, Any]) -> Dict[str, Any]:
    """The request body without the arguments left out."""
    return {k: v for k, v in d.items() if v is not None}


class Client:
    """A client of the sandboxd daemon on a Unix socket.

    ``socket`` defaults to ``$SANDBOXD_SOCKET``, then
    ``/run/sandboxd/sandboxd.sock``. ``timeout`` bounds each call in seconds
    (None: as long as the daemon takes; executions end at their own
    deadline).
    """

    def __init__(self, socket: Optional[str] = None, timeout: Optional[float] = None) -> None:
        self.socket = socket or os.environ.get("SANDBOXD_SOCKET") or DEFAULT_SOCKET
        self.timeout = timeout

    # --- transport

    def _open(self, method: str, path: str, body: Any = None, accept: str = "application/json",
              content_type: str = "application/json") -> http.client.HTTPResponse:
        conn = _UnixConnection(self.socket, self.timeout)
        data: Optional[bytes] = None
        if body is not None:
            data = body if isinstance(body, (bytes, bytearray)) else json.dumps(body).encode()
        headers = {"Accept": accept}
        if data is not None:
            headers["Content-Type"] = content_type
        try:
            conn.request(method, path, body=data, headers=headers)
            resp = conn.getresponse()
        except (FileNotFoundError, ConnectionRefusedError) as e:
            conn.close()
            raise errors.Unreachable("no sandboxd answers on %s (%s): start it, or set SANDBOXD_SOCKET" % (self.socket, e)) from None
        if resp.status >= 300:
            raw = resp.read()
            conn.close()
            try:
                body = json.loads(raw)
            except ValueError:
                body = {"error": {"code": "internal", "message": raw.decode(errors="replace")[:500]}}
            raise errors.from_body(resp.status, body)
        return resp

    def _call(self, method: str, path: str, body: Any = None) -> Any:
        resp = self._open(method, path, body)
        raw = resp.read()
        resp.close()
        return json.loads(raw) if raw else None

    def _events(self, path: str, body: Dict[str, Any]) -> Iterator[Event]:
        resp = self._open("POST", path, body, accept="application/x-ndjson")
        try:
            for line in resp:
                if not line.strip():
                    continue
                ev = json.loads(line)
                if ev.get("type") == "error":
                    raise errors.from_body(200, {"error": ev.get("error")})
                event = build(Event, ev)
                if ev.get("type") == "result":
                    event.result = build(Result, ev.get("result"))
                yield event
        finally:
            resp.close()

    # --- the daemon

    def health(self) -> Dict[str, Any]:
        """The daemon's health (raises ShuttingDown... when degraded)."""
        return self._call("GET", "/v1/health")

    def languages(self) -> List[Dict[str, Any]]:
        return self._call("GET", "/v1/languages")["languages"]

    def openapi(self) -> Dict[str, Any]:
        """The OpenAPI document of the API the daemon serves."""
        return self._call("GET", "/v1/openapi.json")

    def approvals(self, state: str = "pending") -> List[Dict[str, Any]]:
        """Requests a policy in mode "ask" holds for a person, newest first;
        ``state`` is pending, approved, denied, expired or "" for all."""
        return self._call("GET", "/v1/approvals?state=" + urllib.parse.quote(state))["approvals"]

    def approve(self, approval_id: str, reason: str = "") -> Dict[str, Any]:
        """Let a pending request run; who approved is this process's user."""
        return self._call("POST", "/v1/approvals/%s/approve" % urllib.parse.quote(approval_id, safe=""), {"reason": reason})

    def deny(self, approval_id: str, reason: str) -> Dict[str, Any]:
        """Refuse a pending request: its client gets ``approval_denied`` with the reason."""
        return self._call("POST", "/v1/approvals/%s/deny" % urllib.parse.quote(approval_id, safe=""), {"reason": reason})

    # --- runs

    def run(self, language: str, code: Code = None, *, files: Optional[Dict[str, Union[str, bytes]]] = None,
            entry: Optional[str] = None, stdin: Union[str, bytes, None] = None, args: Optional[Sequence[str]] = None,
            env: Optional[Dict[str, str]] = None, timeout: Duration = None, limits: Optional[Dict[str, Any]] = None,
            allow: Optional[Sequence[str]] = None, secrets: Optional[Sequence[str]] = None, stream: bool = False) -> Any:
        """Run a program once in a fresh sandbox.

        ``files`` maps paths to contents (``entry`` names the one to run);
        ``allow`` narrows the language's network allow-list; ``secrets`` names
        secrets of sandboxd.hcl (the program gets ``SANDBOXD_SECRET_<name>``, a
        placeholder the egress proxy replaces for the secret's hosts). Returns the
        Result; with ``stream=True``, an iterator of Events ending with the
        ``result`` event.
        """
        body = _clean({"language": language, "code": code, "files": _files(files), "entry": entry, "args": list(args) if args else None,
                       "env": env, "timeout": timeout, "limits": limits,
                       "network": None if allow is None else {"allow": list(allow)},
                       "secrets": list(secrets) if secrets else None})
        body.update(_stdin(stdin))
        if stream:
            return self._events("/v1/run", body)
        return build(Result, self._call("POST", "/v1/run", body))

    # --- sessions

    def session(self, language: str, *, ttl: Duration = None, idle_timeout: Duration = None,
                limits: Optional[Dict[str, Any]] = None, env: Optional[Dict[str, str]] = None,
                project: Optional[str] = None, allow: Optional[Sequence[str]] = None,
                secrets: Optional[Sequence[str]] = None, from_snapshot: Optional[str] = None) -> "SessionHandle":
        """Create a session; use it in a ``with`` block to remove it at the end."""
        info = self._call("POST", "/v1/sessions", _clean({
            "language": language, "ttl": ttl, "idle_timeout": idle_timeout, "limits": limits, "env": env,
            "project": project, "network": None if allow is None else {"allow": list(allow)},
            "secrets": list(secrets) if secrets else None, "from_snapshot": from_snapshot}))
        return SessionHandle(self, build(Session, info))

    def sessions(self) -> List[Session]:
        return [build(Session, s) for s in self._call("GET", "/v1/sessions")["sessions"]]

    def snapshots(self) -> List[Snapshot]:
        return [build(Snapshot, s) for s in self._call("GET", "/v1/snapshots")["snapshots"]]

    def delete_snapshot(self, ref: str) -> None:
        self._call("DELETE", "/v1/snapshots/" + _q(ref))


def _q(s: str) -> str:
    return urllib.parse.quote(s, safe="")


def _files(files: Optional[Dict[str, Union[str, bytes]]]) -> Optional[List[Dict[str, Any]]]:
    if files is None:
        return None
    out = []
    for path, content in files.items():
        if isinstance(content, bytes):
            try:
                out.append({"path": path, "content": content.decode()})
            except UnicodeDecodeError:
                import base64
                out.append({"path": path, "content": base64.b64encode(content).decode(), "encoding": "base64"})
        else:
            out.append({"path": path, "content": content})
    return out


def _stdin(stdin: Union[str, bytes, None]) -> Dict[str, str]:
    if stdin is None:
        return {}
    if isinstance(stdin, bytes):
        try:
            return {"stdin": stdin.decode()}
        except UnicodeDecodeError:
            import base64
            return {"stdin": base64.b64encode(stdin).decode(), "stdin_encoding": "base64"}
    return {"stdin": stdin}


class SessionHandle:
    """A session: a sandbox of one's own whose files (and contexts) persist
    from exec to exec. ``with client.session("python") as s:`` removes it
    at the end."""

    def __init__(self, client: Client, info: Session) -> None:
        self.client = client
        self.info = info
        self.id = info.id
        self._path = "/v1/sessions/" + _q(info.id)

    def __enter__(self) -> "SessionHandle":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def exec(self, argv: Optional[Sequence[str]] = None, *, code: Code = None, context: Optional[str] = None,
             language: Optional[str] = None, files: Optional[Dict[str, Union[str, bytes]]] = None, entry: Optional[str] = None,
             args: Optional[Sequence[str]] = None, stdin: Union[str, bytes, None] = None, cwd: Optional[str] = None,
             env: Optional[Dict[str, str]] = None, timeout: Duration = None, stream: bool = False) -> Any:
        """Run a command (argv), a program (code or files), or code in a
        long-lived interpreter (code and context: variables persist, the
        final expression's value comes back in ``display``; language, a
        context's when it is another the session's language runs)."""
        body = _clean({"argv": list(argv) if argv else None, "code": code, "context": context, "language": language,
                       "files": _files(files),
                       "entry": entry, "args": list(args) if args else None, "cwd": cwd, "env": env, "timeout": timeout})
        body.update(_stdin(stdin))
        if stream:
            return self.client._events(self._path + "/exec", body)
        return build(Result, self.client._call("POST", self._path + "/exec", body))

    def write_file(self, path: str, data: Union[str, bytes], mode: Optional[int] = None) -> Dict[str, Any]:
        """Write a file in the workspace (parent directories are made)."""
        raw = data.encode() if isinstance(data, str) else data
        query = "" if mode is None else "?mode=%o" % mode
        resp = self.client._open("PUT", self._path + "/files/" + _path(path) + query, raw, content_type="application/octet-stream")
        out = json.loads(resp.read())
        resp.close()
        return out

    def read_file(self, path: str) -> bytes:
        """A file's bytes (a directory comes as a tar archive)."""
        resp = self.client._open("GET", self._path + "/files/" + _path(path), accept="*/*")
        data = resp.read()
        resp.close()
        return data

    def list_files(self, path: str = ".", recursive: bool = False) -> List[FileEntry]:
        q = urllib.parse.urlencode({"path": path, "recursive": "true" if recursive else "false"})
        return [build(FileEntry, e) for e in self.client._call("GET", self._path + "/files?" + q)["entries"]]

    def watch(self, path: str = ".", recursive: bool = False) -> Iterator[FileEvent]:
        """What changes under a directory of the workspace, as it happens:
        the first event is ready (the watch is set), then create, write,
        remove, rename and chmod; overflow says how many were left out.
        Until the generator is closed or the directory goes."""
        q = urllib.parse.urlencode({"path": path, "recursive": "true" if recursive else "false"})
        resp = self.client._open("GET", self._path + "/watch?" + q, accept="application/x-ndjson")
        try:
            for line in resp:
                if line.strip():
                    yield build(FileEvent, json.loads(line))
        finally:
            resp.close()

    def download(self, path: str, dest: str) -> str:
        """Copy a file, or a directory, out of the workspace to dest. Links
        in a directory come down as links, never followed; nothing lands
        outside dest."""
        resp = self.client._open("GET", self._path + "/files/" + _path(path), accept="*/*")
        data = resp.read()
        is_tar = resp.getheader("Content-Type", "").startswith("application/x-tar")
        resp.close()
        if not is_tar:
            with open(dest, "wb") as f:
                f.write(data)
            return dest
        os.makedirs(dest, exist_ok=True)
        with tarfile.open(fileobj=io.BytesIO(data)) as tar:
            for member in tar.getmembers():
                name = os.path.normpath(member.name)
                if name.startswith("..") or os.path.isabs(name) or not (member.isfile() or member.isdir() or member.issym()):
                    continue
                member.name = name
                tar.extract(member, dest, set_attrs=False)  # the archive's own, checked above
        return dest

    def delete_file(self, path: str) -> None:
        self.client._call("DELETE", self._path + "/files/" + _path(path))

    def reset(self) -> None:
        """Kill every process and empty the workspace; the id stays."""
        self.info = build(Session, self.client._call("POST", self._path + "/reset"))

    def pause(self) -> None:
        """Hibernate the session: its files sleep on disk, its sandbox goes away;
        the next call wakes it (processes and contexts' memory do not survive)."""
        self.info = build(Session, self.client._call("POST", self._path + "/pause"))

    def freeze(self) -> None:
        """Freeze the session: its processes stop where they stand, keeping their
        memory (contexts, servers), and use no CPU; the next call thaws it."""
        self.info = build(Session, self.client._call("POST", self._path + "/freeze"))

    def resume(self) -> None:
        """Wake a hibernated or frozen session now (any call on it does so too)."""
        self.info = build(Session, self.client._call("POST", self._path + "/resume"))

    def ports(self) -> List[Dict[str, Any]]:
        """The TCP ports listening inside the sandbox: [{"address": ..., "port": ...}]."""
        return self.client._call("GET", self._path + "/ports")["ports"]

    def metrics(self) -> Dict[str, Any]:
        """What the sandbox uses: ``now`` (cpu_seconds, cpu_percent, memory_bytes,
        processes, workspace_bytes, tmp_bytes, network_sent_bytes,
        network_received_bytes) and ``series``, the same every few seconds over
        the last minutes."""
        return self.client._call("GET", self._path + "/metrics")

    def connect_port(self, port: int) -> "PortConnection":
        """One TCP connection to ``port`` on the sandbox's own loopback (a server
        the session runs), carried by sandboxd: ``sendall``, ``recv``, ``close``
        as a socket's; usable as a context manager."""
        return _ports.connect(self.client.socket, self._path + "/ports/%d/connect" % int(port), self.client.timeout)

    def preview(self, port: int, ttl: Duration = None) -> Dict[str, Any]:
        """A link that opens the server on ``port`` to a browser on sandboxd's TCP
        listener, at an origin of its own, for ``ttl`` (default an hour):
        {"url", "host", "token", "session", "port", "expires_at"}."""
        return self.client._call("POST", self._path + "/ports/%d/preview" % int(port), _clean({"ttl": ttl}))

    def revoke_previews(self) -> None:
        """End every preview link of the session made so far."""
        self.client._call("DELETE", self._path + "/previews")

    # --- the desktop of a session whose language has one (the shipped "desktop")

    def desktop(self) -> Desktop:
        """The session's screen: its size, the pointer (``cursor``), the focused
        window and the windows shown. InvalidRequest when the session's
        language has no desktop."""
        return build(Desktop, self.client._call("GET", self._path + "/desktop"))

    def screenshot(self) -> bytes:
        """The session's screen, pointer included, as PNG bytes."""
        resp = self.client._open("GET", self._path + "/desktop/screenshot", accept="image/png")
        data = resp.read()
        resp.close()
        return data

    def desktop_action(self, action: str, *, x: Optional[int] = None, y: Optional[int] = None,
                       to_x: Optional[int] = None, to_y: Optional[int] = None, button: Optional[str] = None,
                       direction: Optional[str] = None, amount: Optional[int] = None, text: Optional[str] = None,
                       keys: Optional[str] = None, target: Optional[str] = None, window: Optional[str] = None) -> Desktop:
        """Do one thing on the session's screen and get the screen as it is then.
        ``action`` is move (to x, y), click or double_click (``button`` left, the
        default, middle or right; at x, y or where the pointer is), drag (from
        x, y to to_x, to_y), scroll (``amount`` wheel clicks, 3 by default, in
        ``direction`` up, down, left or right; at x, y or where the pointer is),
        type (``text``, as keystrokes, to the focused window), key (``keys`` as
        xdotool names them: "Return", "ctrl+c", or several separated by spaces),
        open (``target``, a URL or a path, in Chromium) or focus
        (``window``, an id of the screen's windows). A point off the screen is
        InvalidRequest."""
        return build(Desktop, self.client._call("POST", self._path + "/desktop/actions", _clean({
            "action": action, "x": x, "y": y, "to_x": to_x, "to_y": to_y, "button": button, "direction": direction,
            "amount": amount, "text": text, "keys": keys, "target": target, "window": window})))

    def move(self, x: int, y: int) -> Desktop:
        """Move the pointer to x, y."""
        return self.desktop_action("move", x=x, y=y)

    def click(self, x: Optional[int] = None, y: Optional[int] = None, button: Optional[str] = None) -> Desktop:
        """Click ``button`` (left by default) at x, y, or where the pointer is."""
        return self.desktop_action("click", x=x, y=y, button=button)

    def double_click(self, x: Optional[int] = None, y: Optional[int] = None, button: Optional[str] = None) -> Desktop:
        """Double-click ``button`` (left by default) at x, y, or where the pointer is."""
        return self.desktop_action("double_click", x=x, y=y, button=button)

    def drag(self, x: int, y: int, to_x: int, to_y: int, button: Optional[str] = None) -> Desktop:
        """Hold ``button`` (left by default) from x, y to to_x, to_y."""
        return self.desktop_action("drag", x=x, y=y, to_x=to_x, to_y=to_y, button=button)

    def scroll(self, direction: str, amount: Optional[int] = None, x: Optional[int] = None,
               y: Optional[int] = None) -> Desktop:
        """Turn the wheel ``amount`` clicks (3 by default) up, down, left or right,
        at x, y or where the pointer is."""
        return self.desktop_action("scroll", direction=direction, amount=amount, x=x, y=y)

    def type_text(self, text: str) -> Desktop:
        """Type text, as keystrokes, to the focused window (never shell text)."""
        return self.desktop_action("type", text=text)

    def press(self, keys: str) -> Desktop:
        """Press a key or chord as xdotool names them ("Return", "ctrl+c"), or
        several separated by spaces."""
        return self.desktop_action("key", keys=keys)

    def open(self, target: str) -> Desktop:
        """Open a URL or a path of the sandbox in Chromium (a file is shown, never run)."""
        return self.desktop_action("open", target=target)

    def focus(self, window: str) -> Desktop:
        """Raise and focus a window, by the id the screen's windows give."""
        return self.desktop_action("focus", window=window)

    def set_network(self, allow: List[str]) -> None:
        """Set what the session may reach through the egress proxy (HOST[:PORT]
        entries within its language's allow-list; empty: nothing)."""
        self.info = build(Session, self.client._call("PATCH", self._path + "/network", {"allow": list(allow)}))

    def contexts(self) -> List[Context]:
        return [build(Context, c) for c in self.client._call("GET", self._path + "/contexts")["contexts"]]

    def snapshot(self, name: str) -> Snapshot:
        """Save the workspace as a named snapshot."""
        return build(Snapshot, self.client._call("POST", self._path + "/snapshot", {"name": name}))

    def fork(self, count: int = 1, name: Optional[str] = None) -> List["SessionHandle"]:
        """Sessions that start from this one's workspace as it is now."""
        res = self.client._call("POST", self._path + "/fork", _clean({"count": count, "name": name}))
        return [SessionHandle(self.client, build(Session, s)) for s in res["sessions"]]

    def close(self) -> None:
        """Remove the session and its sandbox (a session gone already is fine)."""
        try:
            self.client._call("DELETE", self._path)
        except errors.NotFound:
            pass


def _path(p: str) -> str:
    return urllib.parse.quote(p.lstrip("/"))
