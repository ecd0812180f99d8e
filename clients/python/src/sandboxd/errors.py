"""Errors of the sandboxd API, one class per error code."""
from __future__ import annotations

from typing import Any, Dict, List, Optional, Type


class SandboxdError(Exception):
    """An error sandboxd answered with: its stable code, message and HTTP status."""

    code = "internal"

    def __init__(self, message: str, *, code: Optional[str] = None, status: int = 0,
                 findings: Optional[List[Dict[str, Any]]] = None) -> None:
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code
        self.status = status
        self.findings = findings or []

    def __str__(self) -> str:
        return "%s: %s" % (self.code, self.message)


class InvalidRequest(SandboxdError):
    code = "invalid_request"


class UnknownLanguage(SandboxdError):
    code = "unknown_language"


class PolicyDenied(SandboxdError):
    """The policies refused the request; ``findings`` say why, with file:line."""

    code = "policy_denied"


class ApprovalDenied(SandboxdError):
    """A person, asked by a policy in mode "ask", denied the request (the message says who and why)."""

    code = "approval_denied"


class ApprovalTimeout(SandboxdError):
    """Nobody decided on the request within the approval timeout."""

    code = "approval_timeout"


class NotFound(SandboxdError):
    code = "not_found"


class Conflict(SandboxdError):
    code = "conflict"


class SessionLost(SandboxdError):
    code = "session_lost"


class SnapshotDamaged(SandboxdError):
    code = "snapshot_damaged"


class TooLarge(SandboxdError):
    code = "too_large"


class PoolExhausted(SandboxdError):
    code = "pool_exhausted"


class TooManySessions(SandboxdError):
    code = "too_many_sessions"


class NoSpace(SandboxdError):
    code = "no_space"


class RuntimeUnavailable(SandboxdError):
    code = "runtime_unavailable"


class ImageMissing(SandboxdError):
    code = "image_missing"


class ImageBuilding(SandboxdError):
    """sandboxd is building the language's image: retry (the message says when)."""
    code = "image_building"


class PluginUnavailable(SandboxdError):
    code = "plugin_unavailable"


class ShuttingDown(SandboxdError):
    code = "shutting_down"


class InternalError(SandboxdError):
    code = "internal"


class Unreachable(SandboxdError):
    """The daemon's socket did not answer: sandboxd is not running there."""

    code = "unreachable"


_BY_CODE: Dict[str, Type[SandboxdError]] = {
    cls.code: cls for cls in (InvalidRequest, UnknownLanguage, PolicyDenied, ApprovalDenied, ApprovalTimeout, NotFound,
                              Conflict, SessionLost,
                              TooLarge, PoolExhausted, TooManySessions, NoSpace, RuntimeUnavailable, ImageMissing,
                              ImageBuilding, PluginUnavailable, ShuttingDown, InternalError)
}


def from_body(status: int, body: Dict[str, Any]) -> SandboxdError:
    """The exception for an error body ``{"error": {code, message, findings}}``."""
    err = body.get("error") or {}
    code = err.get("code") or "internal"
    cls = _BY_CODE.get(code, SandboxdError)
    return cls(err.get("message") or "HTTP %d" % status, code=code, status=status, findings=err.get("findings"))
