"""The API's answers as typed objects. Field names are the JSON's; every
object keeps the dict it came from in ``raw``."""
from __future__ import annotations

import base64
import dataclasses
import typing
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional


def build(cls: Any, data: Optional[Dict[str, Any]]) -> Any:
    """An instance of the dataclass cls from the API's dict, nested objects
    included; fields the dict lacks keep their defaults."""
    if data is None:
        return None
    hints = typing.get_type_hints(cls)
    kwargs: Dict[str, Any] = {}
    for f in dataclasses.fields(cls):
        if f.name == "raw" or f.name not in data:
            continue
        kwargs[f.name] = _convert(hints[f.name], data[f.name])
    obj = cls(**kwargs)
    obj.raw = data
    return obj


def _convert(tp: Any, value: Any) -> Any:
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin is typing.Union:  # Optional[X]
        inner = [a for a in args if a is not type(None)]
        return None if value is None else _convert(inner[0], value)
    if origin in (list, List) and value is not None:
        return [_convert(args[0], v) for v in value]
    if dataclasses.is_dataclass(tp) and isinstance(value, dict):
        return build(tp, value)
    return value


@dataclass
class Finding:
    policy: str = ""
    rule: str = ""
    severity: str = ""
    message: str = ""
    file: str = ""
    line: int = 0
    column: int = 0
    snippet: str = ""
    raw: Dict[str, Any] = field(default_factory=dict, repr=False)


@dataclass
class Display:
    """One representation of something a context showed: ``image/png``
    (data base64), ``text/html``, ``text/plain``...; ``main`` marks those
    of the final value."""

    mime: str = ""
    data: str = ""
    main: bool = False
    raw: Dict[str, Any] = field(default_factory=dict, repr=False)

    def bytes(self) -> "bytes":
        """The data as bytes (images decoded from base64)."""
        if self.mime.startswith("image/") and self.mime != "image/svg+xml":
            return base64.b64decode(self.data)
        return self.data.encode()


@dataclass
class Egress:
    host: str = ""
    port: int = 0
    allowed: bool = False
    bytes_sent: int = 0
    bytes_received: int = 0
    error: str = ""
    raw: Dict[str, Any] = field(default_factory=dict, repr=False)


@dataclass
class OutputFile:
    path: str = ""
    size: int = 0
    mime: str = ""
    raw: Dict[str, Any] = field(default_factory=dict, repr=False)


@dataclass
class ContextState:
    name: str = ""
    started: bool = False
    lost: str = ""
    raw: Dict[str, Any] = field(default_factory=dict, repr=False)


@dataclass
class Usage:
    cpu_user_ms: float = 0
    cpu_sys_ms: float = 0
    max_rss_bytes: int = 0
    workspace_bytes: int = 0
    network_sent_bytes: int = 0
    network_received_bytes: int = 0
    raw: Dict[str, Any] = field(default_factory=dict, repr=False)


@dataclass
class Timings:
    queue_ms: float = 0
    run_ms: float = 0
    total_ms: float = 0
    queue_reason: str = ""  # what the run waited on in the queue, when it waited long on something
    raw: Dict[str, Any] = field(default_factory=dict, repr=False)


@dataclass
class Step:
    name: str = ""
    exit_code: int = 0
    timed_out: bool = False
    duration_ms: float = 0
    stderr: str = ""
    stderr_encoding: str = ""
    raw: Dict[str, Any] = field(default_factory=dict, repr=False)


@dataclass
class Result:
    """How a run or an exec ended. ``stdout`` and ``stderr`` are text;
    ``output("stdout")`` gives the exact bytes when they were not UTF-8."""

    id: str = ""
    language: str = ""
    session: str = ""
    container: str = ""  # a one-shot run's container, which serves many runs, each made fresh
    exit_code: int = 0
    signal: str = ""
    stdout: str = ""
    stdout_encoding: str = ""
    stderr: str = ""
    stderr_encoding: str = ""
    stdout_bytes: int = 0
    stderr_bytes: int = 0
    duration_ms: float = 0
    warm: bool = False
    timed_out: bool = False
    oom_killed: bool = False
    truncated: bool = False
    stage: str = ""
    steps: List[Step] = field(default_factory=list)
    error: str = ""
    usage: Optional[Usage] = None
    timings: Optional[Timings] = None
    findings: List[Finding] = field(default_factory=list)
    decision: str = ""
    display: List[Display] = field(default_factory=list)
    context: Optional[ContextState] = None
    outputs: List[OutputFile] = field(default_factory=list)
    outputs_omitted: int = 0
    egress: List[Egress] = field(default_factory=list)
    egress_unrecorded: int = 0
    # How a person decided, when a policy in mode "ask" held the run:
    # {"id", "state", "by", "reason"}.
    approval: Optional[Dict[str, Any]] = None
    resumed: bool = False
    resume_ms: float = 0
    raw: Dict[str, Any] = field(default_factory=dict, repr=False)

    def output(self, stream: str = "stdout") -> bytes:
        """A stream's bytes exactly as the program wrote them."""
        text, encoding = (self.stdout, self.stdout_encoding) if stream == "stdout" else (self.stderr, self.stderr_encoding)
        return base64.b64decode(text) if encoding == "base64" else text.encode()

    @property
    def ok(self) -> bool:
        """The program exited 0 and was not killed."""
        return self.exit_code == 0 and not self.timed_out and not self.oom_killed and not self.error

    def text(self) -> Optional[str]:
        """The final value a context showed, as text; None if none. A
        figure's or a display() call's text comes before it."""
        texts = [d for d in self.display if d.mime == "text/plain"]
        value = [d for d in texts if d.main] or texts
        return value[-1].data if value else None


@dataclass
class Event:
    """One event of a stream: ``stdout`` or ``stderr`` output as it comes
    (``data`` decoded), then the ``result``."""

    type: str = ""
    data: str = ""
    encoding: str = ""
    result: Optional[Result] = None
    error: Optional[Dict[str, Any]] = None  # the client raises it instead
    raw: Dict[str, Any] = field(default_factory=dict, repr=False)

    def bytes(self) -> "bytes":
        return base64.b64decode(self.data) if self.encoding == "base64" else self.data.encode()


@dataclass
class Session:
    id: str = ""
    language: str = ""
    state: str = ""
    error: str = ""
    project: str = ""
    created_at: str = ""
    expires_at: str = ""
    last_used_at: str = ""
    idle_timeout: Any = None
    limits: Dict[str, Any] = field(default_factory=dict)
    network: Dict[str, Any] = field(default_factory=dict)
    env: Dict[str, str] = field(default_factory=dict)
    secrets: List[str] = field(default_factory=list)
    container_id: str = ""
    executions: int = 0
    hibernation: Optional[Dict[str, Any]] = None
    frozen_at: Optional[str] = None
    resumes: int = 0
    resume_ms: float = 0
    contexts_lost: List[str] = field(default_factory=list)
    raw: Dict[str, Any] = field(default_factory=dict, repr=False)


@dataclass
class FileEntry:
    path: str = ""
    type: str = ""
    size: int = 0
    mode: str = ""
    mtime: str = ""
    target: str = ""
    metadata: Dict[str, str] = field(default_factory=dict)
    raw: Dict[str, Any] = field(default_factory=dict, repr=False)


@dataclass
class FileEvent:
    """A change under a watched directory: type is create, write, remove,
    rename (moved away or in) or chmod; ready first, once the watch is
    set; overflow when count events were left out."""
    path: str = ""
    type: str = ""
    count: int = 0
    raw: Dict[str, Any] = field(default_factory=dict, repr=False)


@dataclass
class Snapshot:
    id: str = ""
    name: str = ""
    language: str = ""
    session: str = ""
    size: int = 0
    sha256: str = ""
    skipped: int = 0
    created_at: str = ""
    raw: Dict[str, Any] = field(default_factory=dict, repr=False)


@dataclass
class Context:
    name: str = ""
    language: str = ""
    pid: int = 0
    started_at: str = ""
    executions: int = 0
    rss_bytes: int = 0
    raw: Dict[str, Any] = field(default_factory=dict, repr=False)


@dataclass
class Point:
    """A place on a screen, in pixels from its top left corner."""
    x: int = 0
    y: int = 0
    raw: Dict[str, Any] = field(default_factory=dict, repr=False)


@dataclass
class DesktopWindow:
    id: str = ""
    title: str = ""
    raw: Dict[str, Any] = field(default_factory=dict, repr=False)


@dataclass
class Desktop:
    """A desktop session's screen: its size, the pointer (``cursor``), the
    focused window's id ("" when none has the focus) and the windows shown."""
    width: int = 0
    height: int = 0
    cursor: Point = field(default_factory=Point)
    focused: str = ""
    windows: List[DesktopWindow] = field(default_factory=list)
    raw: Dict[str, Any] = field(default_factory=dict, repr=False)


# The API schema each class follows (the OpenAPI document's names).
SCHEMAS = {
    "RunResult": Result, "Finding": Finding, "Display": Display, "Egress": Egress, "OutputFile": OutputFile,
    "ContextState": ContextState, "Usage": Usage, "Timings": Timings, "Step": Step, "Event": Event,
    "Session": Session, "FileEntry": FileEntry, "FileEvent": FileEvent, "Snapshot": Snapshot, "Context": Context,
    "Desktop": Desktop, "DesktopWindow": DesktopWindow, "Point": Point,
}
