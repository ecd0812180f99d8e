// The API's bodies, as the daemon's OpenAPI document (GET /v1/openapi.json)
// describes them; field names are the JSON's.

export type Duration = string | number; // "30s", or seconds
export type ByteSize = string | number; // "128MiB", or bytes

export interface Limits {
  timeout?: Duration;
  memory?: ByteSize;
  cpus?: number;
  pids?: number;
  output_limit?: ByteSize;
}

export interface Network {
  allow: string[];
}

export interface File {
  path: string;
  content: string;
  encoding?: string;
  mode?: number;
}

export interface RunRequest {
  language: string;
  code?: string;
  files?: File[];
  entry?: string;
  stdin?: string;
  stdin_encoding?: string;
  args?: string[];
  env?: Record<string, string>;
  timeout?: Duration;
  limits?: Limits;
  network?: Network;
  /** Secrets of sandboxd.hcl by name: the program gets SANDBOXD_SECRET_<name>, a placeholder the egress proxy replaces with the value for the secret's hosts. */
  secrets?: string[];
}

export interface ExecRequest {
  argv?: string[];
  code?: string;
  files?: File[];
  entry?: string;
  args?: string[];
  stdin?: string;
  stdin_encoding?: string;
  cwd?: string;
  context?: string;
  /** A context's language, when another the session's language runs. */
  language?: string;
  env?: Record<string, string>;
  timeout?: Duration;
  limits?: Limits;
}

export interface SessionRequest {
  language: string;
  limits?: Limits;
  env?: Record<string, string>;
  ttl?: Duration;
  idle_timeout?: Duration;
  project?: string;
  network?: Network;
  secrets?: string[];
  from_snapshot?: string;
}

export interface Finding {
  policy: string;
  rule: string;
  severity: string;
  message: string;
  file?: string;
  line?: number;
  column?: number;
  snippet?: string;
}

export interface Display {
  mime: string;
  data: string;
  /** Marks the final value's representations. */
  main?: boolean;
}

export interface Egress {
  host: string;
  port: number;
  allowed: boolean;
  bytes_sent: number;
  bytes_received: number;
  error?: string;
}

export interface OutputFile {
  path: string;
  size: number;
  mime: string;
}

export interface ContextState {
  name: string;
  started: boolean;
  lost?: string;
}

export interface Usage {
  cpu_user_ms: number;
  cpu_sys_ms: number;
  max_rss_bytes: number;
  /** The workspace in use when it ended. */
  workspace_bytes?: number;
  /** Bytes through the egress proxy. */
  network_sent_bytes?: number;
  network_received_bytes?: number;
}

export interface Timings {
  queue_ms: number;
  run_ms: number;
  total_ms: number;
  /** What the run waited on in the queue, when it waited long on something (a node pulling the image). */
  queue_reason?: string;
}

export interface Step {
  name: string;
  exit_code: number;
  timed_out?: boolean;
  duration_ms: number;
  stderr?: string;
  stderr_encoding?: string;
}

export interface RunResult {
  id: string;
  language: string;
  session?: string;
  /** A one-shot run's container, which serves many runs, each made fresh. */
  container?: string;
  exit_code: number;
  signal?: string;
  stdout: string;
  stdout_encoding?: string;
  stderr: string;
  stderr_encoding?: string;
  stdout_bytes: number;
  stderr_bytes: number;
  duration_ms: number;
  /** A runtime started ahead in the sandbox ran the program. */
  warm?: boolean;
  timed_out: boolean;
  oom_killed: boolean;
  truncated: boolean;
  stage?: string;
  steps?: Step[];
  error?: string;
  usage: Usage;
  timings: Timings;
  findings: Finding[];
  decision: string;
  display?: Display[];
  context?: ContextState;
  outputs?: OutputFile[];
  outputs_omitted?: number;
  egress?: Egress[];
  egress_unrecorded?: number;
  /** How a person decided, when a policy in mode "ask" held the run. */
  approval?: ApprovalOutcome;
  /** The session was hibernated and woke for this exec, in resume_ms. */
  resumed?: boolean;
  resume_ms?: number;
}

export interface Event {
  /** "queued": data says what the run waits on before it starts. */
  type: "stdout" | "stderr" | "queued" | "result" | "error";
  data?: string;
  encoding?: string;
  result?: RunResult;
  error?: ApiError;
}

export interface ApiError {
  code: string;
  message: string;
  findings?: Finding[];
}

/** A link that opens a session's port to a browser (POST /v1/sessions/{id}/ports/{port}/preview). */
/** What a session's whole sandbox uses at a moment. */
export interface SandboxUsage {
  at: string;
  cpu_seconds: number;
  cpu_percent: number;
  memory_bytes: number;
  processes: number;
  workspace_bytes: number;
  tmp_bytes: number;
  network_sent_bytes: number;
  network_received_bytes: number;
}

/** The body of GET /v1/sessions/{id}/metrics. */
export interface SessionMetrics {
  session: string;
  language: string;
  limits: Record<string, unknown>;
  now?: SandboxUsage;
  series: SandboxUsage[];
  every: string;
}

export interface Preview {
  url: string;
  host: string;
  token: string;
  session: string;
  port: number;
  expires_at: string;
}

export interface Session {
  id: string;
  language: string;
  state: string;
  error?: string;
  project?: string;
  created_at: string;
  expires_at: string;
  last_used_at: string;
  idle_timeout: Duration;
  limits: Limits;
  network: Network;
  env?: Record<string, string>;
  /** Secrets by name; their placeholders are in env. */
  secrets?: string[];
  container_id: string;
  executions: number;
  /** Set while hibernated: where its workspace sleeps. */
  hibernation?: Hibernation;
  /** Set while frozen: since when (RFC 3339). */
  frozen_at?: string;
  resumes?: number;
  resume_ms?: number;
  contexts_lost?: string[];
}

/** A hibernated session's archive, on sandboxd's host. */
export interface Hibernation {
  at: string;
  path: string;
  bytes: number;
  sha256: string;
  skipped?: number;
  /** Its sandbox was checkpointed too: processes and contexts come back. */
  memory: boolean;
  contexts?: string[];
}

export interface FileEntry {
  path: string;
  type: string;
  size: number;
  mode: string;
  mtime: string;
  target?: string;
  /** Its user.e2b.* extended attributes, the prefix taken off. */
  metadata?: Record<string, string>;
}

/** A change under a watched directory (Session.watch). */
export interface FileEvent {
  path?: string;
  /** create, write, remove, rename, chmod; ready first; overflow: count left out. */
  type: string;
  count?: number;
}

export interface Snapshot {
  id: string;
  name: string;
  language: string;
  session: string;
  size: number;
  sha256: string;
  skipped?: number;
  created_at: string;
}

export interface Context {
  name: string;
  language?: string;
  pid: number;
  started_at: string;
  executions: number;
  rss_bytes: number;
}

/** A desktop session's screen (GET /v1/sessions/{id}/desktop, and the answer to each action). */
export interface Desktop {
  width: number;
  height: number;
  /** Where the pointer is. */
  cursor: Point;
  /** The focused window's id; absent when none has the focus. */
  focused?: string;
  windows: DesktopWindow[];
}

/** A place on a screen, in pixels from its top left corner. */
export interface Point {
  x: number;
  y: number;
}

/** One window on a desktop's screen. */
export interface DesktopWindow {
  id: string;
  title: string;
}

/** One thing done to a desktop session's screen (POST /v1/sessions/{id}/desktop/actions):
 * move (to x, y); click, double_click (button, at x, y or where the pointer is); drag (from x, y to to_x, to_y);
 * scroll (amount wheel clicks, 3 by default, in direction, at x, y or where the pointer is); type (text, as keystrokes,
 * to the focused window); key (keys as xdotool names them: "Return", "ctrl+c", or several separated by spaces);
 * open (target, a URL or a path, in Chromium); focus (window, by the id the screen's windows give). */
export interface DesktopAction {
  action: "move" | "click" | "double_click" | "drag" | "scroll" | "type" | "key" | "open" | "focus";
  x?: number;
  y?: number;
  to_x?: number;
  to_y?: number;
  /** left (the default), middle or right. */
  button?: "left" | "middle" | "right";
  direction?: "up" | "down" | "left" | "right";
  amount?: number;
  text?: string;
  keys?: string;
  target?: string;
  window?: string;
}

/** How a person decided on a request a policy in mode "ask" held. */
export interface ApprovalOutcome {
  id: string;
  state: "approved" | "denied" | "expired" | "pending";
  by?: string;
  reason?: string;
}
