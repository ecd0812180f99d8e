"""Client for sandboxd: run untrusted code in warm, hardened containers.

    from sandboxd import Client
    c = Client()                         # $SANDBOXD_SOCKET or /run/sandboxd/sandboxd.sock
    print(c.run("python", "print(6*7)").stdout)
    with c.session("python") as s:
        s.exec(code="import pandas as pd", context="main")
        print(s.exec(code="pd.__version__", context="main").text())
"""
from .aio import AsyncClient, AsyncSession
from .client import Client, SessionHandle
from .errors import (ApprovalDenied, ApprovalTimeout, Conflict, ImageBuilding, ImageMissing, InternalError, InvalidRequest, NoSpace, NotFound, PluginUnavailable,
                     PolicyDenied, PoolExhausted, RuntimeUnavailable, SandboxdError, SessionLost, ShuttingDown, TooLarge,
                     TooManySessions, Unreachable, UnknownLanguage)
from .types import (Context, ContextState, Desktop, DesktopWindow, Display, Egress, Event, FileEntry, FileEvent, Finding,
                    OutputFile, Point, Result, Session, Snapshot)

__all__ = [
    "AsyncClient", "AsyncSession", "Client", "SessionHandle",
    "SandboxdError", "ApprovalDenied", "ApprovalTimeout", "Conflict", "ImageBuilding", "ImageMissing", "InternalError", "InvalidRequest", "NoSpace", "NotFound",
    "PluginUnavailable", "PolicyDenied", "PoolExhausted", "RuntimeUnavailable", "SessionLost", "ShuttingDown",
    "TooLarge", "TooManySessions", "Unreachable", "UnknownLanguage",
    "Context", "ContextState", "Desktop", "DesktopWindow", "Display", "Egress", "Event", "FileEntry", "FileEvent", "Finding",
    "OutputFile", "Point", "Result", "Session", "Snapshot",
]
