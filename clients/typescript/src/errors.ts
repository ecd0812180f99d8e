import type { Finding } from "./types.js";

/** An error sandboxd answered with: its stable code, message and HTTP status. */
export class SandboxdError extends Error {
  constructor(
    message: string,
    readonly code: string,
    readonly status: number,
    readonly findings: Finding[] = [],
  ) {
    super(`${code}: ${message}`);
    this.name = new.target.name;
  }
}

export class InvalidRequest extends SandboxdError {}
export class UnknownLanguage extends SandboxdError {}
/** The policies refused the request; `findings` say why, with file:line. */
export class PolicyDenied extends SandboxdError {}
/** A person, asked by a policy in mode "ask", denied the request (the message says who and why). */
export class ApprovalDenied extends SandboxdError {}
/** Nobody decided on the request within the approval timeout. */
export class ApprovalTimeout extends SandboxdError {}
export class NotFound extends SandboxdError {}
export class Conflict extends SandboxdError {}
export class SessionLost extends SandboxdError {}
export class TooLarge extends SandboxdError {}
export class PoolExhausted extends SandboxdError {}
export class TooManySessions extends SandboxdError {}
export class NoSpace extends SandboxdError {}
export class RuntimeUnavailable extends SandboxdError {}
export class ImageMissing extends SandboxdError {}
/** sandboxd is building the language's image: retry (the message says when). */
export class ImageBuilding extends SandboxdError {}
export class PluginUnavailable extends SandboxdError {}
export class ShuttingDown extends SandboxdError {}
export class InternalError extends SandboxdError {}
/** A snapshot's archive was changed or damaged on disk: delete it. */
export class SnapshotDamaged extends SandboxdError {}
/** The daemon's socket did not answer: sandboxd is not running there. */
export class Unreachable extends SandboxdError {}

const byCode: Record<string, typeof SandboxdError> = {
  invalid_request: InvalidRequest,
  unknown_language: UnknownLanguage,
  policy_denied: PolicyDenied,
  approval_denied: ApprovalDenied,
  approval_timeout: ApprovalTimeout,
  not_found: NotFound,
  conflict: Conflict,
  session_lost: SessionLost,
  snapshot_damaged: SnapshotDamaged,
  too_large: TooLarge,
  pool_exhausted: PoolExhausted,
  too_many_sessions: TooManySessions,
  no_space: NoSpace,
  runtime_unavailable: RuntimeUnavailable,
  image_missing: ImageMissing,
  image_building: ImageBuilding,
  plugin_unavailable: PluginUnavailable,
  shutting_down: ShuttingDown,
  internal: InternalError,
};

/** The error for an error body `{error: {code, message, findings}}`. */
export function fromBody(status: number, body: { error?: { code?: string; message?: string; findings?: Finding[] } }): SandboxdError {
  const code = body.error?.code ?? "internal";
  const Cls = byCode[code] ?? SandboxdError;
  return new Cls(body.error?.message ?? `HTTP ${status}`, code, status, body.error?.findings ?? []);
}
