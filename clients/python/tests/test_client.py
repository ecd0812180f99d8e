"""The Python client against a real sandboxd: $SANDBOXD_SOCKET names the
daemon the Go end-to-end test (TestPythonClient) starts for it."""
import asyncio
import dataclasses
import os
import tempfile

import pytest

import sandboxd
from sandboxd.types import SCHEMAS

pytestmark = pytest.mark.skipif(not os.environ.get("SANDBOXD_SOCKET"), reason="needs a daemon: run through make test")


@pytest.fixture(scope="module")
def client():
    return sandboxd.Client()


def test_run(client):
    res = client.run("python", "import sys; print('hi'); print('oops', file=sys.stderr); sys.exit(3)")
    assert (res.stdout, res.stderr, res.exit_code, res.ok) == ("hi\n", "oops\n", 3, False)
    assert res.timings.total_ms > 0 and res.raw["language"] == "python"
    res = client.run("py", files={"main.py": "import helper; helper.go()", "helper.py": "def go(): print(input()[::-1])"},
                     entry="main.py", stdin="abc")
    assert res.stdout == "cba\n"
    res = client.run("python", "import sys; sys.stdout.buffer.write(bytes([0xff, 0, 1]))")
    assert res.output("stdout") == b"\xff\x00\x01"
    assert client.run("python", "import time; time.sleep(5)", timeout="1s").timed_out


def test_stream(client):
    events = list(client.run("python", "import time\nfor i in range(3): print(i, flush=True); time.sleep(0.1)", stream=True))
    out = [e.data for e in events if e.type == "stdout"]
    assert "".join(out) == "0\n1\n2\n" and len(out) >= 3  # as it came, not at the end
    assert events[-1].type == "result" and events[-1].result.exit_code == 0


def test_errors(client):
    with pytest.raises(sandboxd.UnknownLanguage) as e:
        client.run("cobol", "x")
    assert e.value.status == 400 and "cobol" in e.value.message
    with pytest.raises(sandboxd.PolicyDenied) as e:
        client.run("python", "print(1)", timeout="10h")
    assert e.value.status == 403 and e.value.findings
    with pytest.raises(sandboxd.InvalidRequest):
        client.run("python")
    assert isinstance(e.value, sandboxd.SandboxdError)
    with pytest.raises(sandboxd.Unreachable):
        sandboxd.Client("/nonexistent.sock").health()


def test_session(client):
    with client.session("python", ttl="5m") as s:
        s.write_file("data/in.txt", "three\nlines\nhere\n")
        s.write_file("run.sh", "#!/bin/sh\necho ran\n", mode=0o755)
        assert s.exec(["sh", "-c", "wc -l < data/in.txt"]).stdout.strip() == "3"
        assert s.exec(["./run.sh"]).stdout == "ran\n"
        assert s.exec(code="print(open('data/in.txt').read().split()[1])").stdout == "lines\n"
        assert s.read_file("data/in.txt") == b"three\nlines\nhere\n"
        assert {e.path for e in s.list_files(recursive=True)} >= {"data", "data/in.txt", "run.sh"}
        res = s.exec(["sh", "-c", "echo a > outputs/a.txt; ln -s /etc/passwd outputs/link"])
        assert [o.path for o in res.outputs] == ["outputs/a.txt"]
        with tempfile.TemporaryDirectory() as d:
            s.download("outputs", os.path.join(d, "out"))
            assert open(os.path.join(d, "out", "outputs", "a.txt")).read() == "a\n"
            assert os.readlink(os.path.join(d, "out", "outputs", "link")) == "/etc/passwd"
            s.download("data/in.txt", os.path.join(d, "in.txt"))
            assert open(os.path.join(d, "in.txt")).read().startswith("three")
        # A context keeps its state; its final value comes back.
        s.exec(code="x = 20", context="main")
        res = s.exec(code="x + 22", context="main")
        assert res.text() == "42" and res.context.name == "main" and not res.context.started
        assert [c.name for c in s.contexts()] == ["main"]
        assert isinstance(s.ports(), list)
        m = s.metrics()
        assert m["now"]["memory_bytes"] > 0 and m["now"]["workspace_bytes"] > 0 and isinstance(m["series"], list)
        with pytest.raises(sandboxd.NotFound, match="TCP listener"):
            s.preview(8000, ttl="10m")  # this daemon has none
        s.revoke_previews()
        # Paused, it keeps its files; its context's memory is reported lost once.
        s.pause()
        assert s.info.state == "hibernated" and s.info.hibernation["bytes"] > 0
        res = s.exec(code="y = 1", context="main")
        assert res.resumed and res.resume_ms > 0 and res.context.lost == "hibernated without memory"
        assert s.read_file("data/in.txt") == b"three\nlines\nhere\n"
        s.pause()
        s.resume()
        assert s.info.state == "active" and s.info.resumes == 2
        s.set_network([])  # the language allows nothing: an empty list is all there is
        assert s.info.network["allow"] == []
        with pytest.raises(sandboxd.InvalidRequest):
            s.set_network(["example.org"])
        s.reset()
        with pytest.raises(sandboxd.NotFound):
            s.read_file("data/in.txt")
        sid = s.id
    with pytest.raises(sandboxd.NotFound):  # closed with the block
        sandboxd.SessionHandle(client, sandboxd.Session(id=sid)).exec(["true"])


def test_snapshot_and_fork(client):
    with client.session("python") as s:
        s.exec(["sh", "-c", "echo base > f.txt"])
        forks = s.fork(2)
        try:
            for i, f in enumerate(forks):
                f.exec(["sh", "-c", "echo %d >> f.txt" % i])
            assert [f.read_file("f.txt") for f in forks] == [b"base\n0\n", b"base\n1\n"]
            assert s.read_file("f.txt") == b"base\n"
        finally:
            for f in forks:
                f.close()
    for sn in client.snapshots():
        client.delete_snapshot(sn.id)


def test_async(client):
    async def main():
        c = sandboxd.AsyncClient()
        res = await c.run("python", "print(6*7)")
        assert res.stdout == "42\n"
        out = [e.data async for e in c.run("python", "print(1); print(2)", stream=True) if e.type == "stdout"]
        assert "".join(out) == "1\n2\n"
        async with await c.session("python") as s:
            await s.write_file("a.txt", "x")
            assert (await s.exec(["cat", "a.txt"])).stdout == "x"
        with pytest.raises(sandboxd.UnknownLanguage):
            await c.run("cobol", "x")
    asyncio.run(main())


def test_desktop(client):
    """A desktop session's screen, looked at and driven as an agent does
    (its own desktop takes the keys: no browser)."""
    with client.session("desktop", ttl="5m") as s:
        screen = s.desktop()
        assert (screen.width, screen.height) == (1024, 768) and isinstance(screen.windows, list)
        assert s.screenshot().startswith(b"\x89PNG\r\n\x1a\n")
        after = s.move(100, 200)
        assert (after.cursor.x, after.cursor.y) == (100, 200) and after.width == 1024
        after = s.click(300, 250)
        assert (after.cursor.x, after.cursor.y) == (300, 250)
        assert (s.desktop().cursor.x, s.desktop().cursor.y) == (300, 250)
        s.type_text("hello $(touch /workspace/pwned)")
        s.press("Escape")
        assert s.desktop_action("scroll", direction="down", amount=2).cursor.y == 250
        assert s.exec(["sh", "-c", "test -e /workspace/pwned && echo yes || echo no"]).stdout == "no\n"
        with pytest.raises(sandboxd.InvalidRequest, match="off the 1024x768 screen") as e:
            s.click(1024, 0)
        assert e.value.code == "invalid_request" and e.value.status == 400

        async def main():
            a = sandboxd.AsyncSession(s)
            assert (await a.move(10, 20)).cursor.y == 20
            assert (await a.screenshot()).startswith(b"\x89PNG")
            with pytest.raises(sandboxd.InvalidRequest):
                await a.desktop_action("click", x=0, y=768)
        asyncio.run(main())
    with client.session("python") as p:
        with pytest.raises(sandboxd.InvalidRequest, match="has no desktop"):
            p.screenshot()


def test_types_follow_the_openapi_document(client):
    """Every property the daemon's document gives a schema is a field of
    the class that stands for it."""
    schemas = client.openapi()["components"]["schemas"]
    # Schemas the document nests rather than names: where they are.
    nested = {"Finding": ("RunResult", "findings"), "Display": ("RunResult", "display"), "Egress": ("RunResult", "egress"),
              "OutputFile": ("RunResult", "outputs"), "ContextState": ("RunResult", "context"), "Usage": ("RunResult", "usage"),
              "Timings": ("RunResult", "timings"), "Step": ("RunResult", "steps"), "FileEntry": ("FileList", "entries"),
              "DesktopWindow": ("Desktop", "windows"), "Point": ("Desktop", "cursor")}
    missing = []
    for name, cls in SCHEMAS.items():
        fields = {f.name for f in dataclasses.fields(cls)}
        if name in nested:
            parent, prop = nested[name]
            schema = schemas[parent]["properties"][prop]
            schema = schema.get("items", schema)
        else:
            schema = schemas[name]
        for prop in schema.get("properties", {}):
            if prop not in fields:
                missing.append("%s.%s" % (name, prop))
    assert not missing, "fields of the OpenAPI document the client's types lack: %s" % missing


def test_watch(client):
    """What a program changes, as it happens."""
    import threading

    with client.session("python", ttl="5m") as s:
        seen = []
        for ev in s.watch(".", recursive=True):
            seen.append((ev.type, ev.path))
            if ev.type == "ready":
                threading.Thread(target=s.exec, args=(["sh", "-c", "echo x > made.txt"],)).start()
            if ("write", "made.txt") in seen:
                break
        assert seen[0] == ("ready", "") and ("create", "made.txt") in seen


def test_connect_port(client):
    """A connection to a server the session runs, carried by sandboxd."""
    import time

    with client.session("python", ttl="5m") as s:
        s.write_file("site/index.html", "hello over the socket\n")
        s.exec(["sh", "-c", "cd site && python3 -m http.server 8000 --bind 127.0.0.1 >/dev/null 2>&1 </dev/null &"])
        for _ in range(100):
            if any(p["port"] == 8000 for p in s.ports()):
                break
            time.sleep(0.1)
        with s.connect_port(8000) as conn:
            conn.sendall(b"GET /index.html HTTP/1.0\r\n\r\n")
            answer = b""
            while True:
                chunk = conn.recv()
                if not chunk:
                    break
                answer += chunk
        assert answer.startswith(b"HTTP/1.0 200") and answer.endswith(b"hello over the socket\n")
        with pytest.raises(ConnectionRefusedError, match="8001"):
            s.connect_port(8001).recv()
