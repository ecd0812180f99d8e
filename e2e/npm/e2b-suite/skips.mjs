// The tests of E2B's suites that do not pass against sandboxd, by file and
// then by the test's full name (its describe blocks' names and its own,
// joined by spaces, as vitest reports it), each with its reason.
// docs/e2b.md counts them; E2B_SUITE_ALL=1 runs them anyway.

const why = {
  CTX_CWD: "a context's working directory must be in the home (/root is not a sandbox's)",
  SYSTEMD: "the Jupyter server and systemd units are E2B's template's: contexts here are the supervisor's, which a program cannot kill",
  PUBLIC: "needs the internet (public addresses such as 1.1.1.1 and 8.8.8.8 or public names), which these machines cannot reach",
  DOMAIN: "reaches a sandbox's port or files by E2B's host names (https://PORT-ID.e2b.app): sandboxd serves them on its own listener",
  HTTPBIN: "needs the httpbin template E2B builds on its service",
  OUTSIDE: "outside the home and /tmp: /0/ is in the sandbox's read-only root",
  ROOT_HOME: "a sandbox has no root user: user 'root' is refused or names the sandbox's user, whose home is /home/user",
  SUDO: "no sudo in a sandbox: commands run as its own unprivileged user",
  BOOTID: "a container shares its host's boot id: a filesystem-only resume starts programs again, but /proc/sys/kernel/random/boot_id stays",
  FAST_PAUSE: "a race in the test: it checks for a file 2 s after resuming, assuming pause and resume took most of the 2 s a background `sleep 2` needs; here they take about 80 ms, so the check meets the sleep's end",
  KEYFIRST: "the test's placeholder key is not one of the listener's, and sandboxd checks the key before the request's body",
}

export const skips = {
  "code-interpreter/tests/contexts.test.ts": {
    "create context with options": why.CTX_CWD,
  },
  "code-interpreter/tests/systemd.test.ts": {
    "restart after jupyter kill": why.SYSTEMD,
    "restart after code-interpreter kill": why.SYSTEMD,
  },
  "js-sdk/tests/sandbox/commands/envVars.test.ts": {
    "bash command scoped env vars": why.SUDO,
  },
  "js-sdk/tests/sandbox/files/signing.test.ts": {
    "file signing test upload file with valid signing as root user": why.ROOT_HOME,
  },
  "js-sdk/tests/sandbox/files/write.test.ts": {
    "write multiple files": why.OUTSIDE,
  },
  "js-sdk/tests/sandbox/fork.test.ts": {
    "fork with count lower than 1 fails": why.KEYFIRST,
  },
  "js-sdk/tests/sandbox/host.test.ts": {
    "ping server in running sandbox": why.DOMAIN,
    "ping server in non-running sandbox": why.DOMAIN,
  },
  "js-sdk/tests/sandbox/internetAccess.test.ts": {
    "internet access enabled internet access enabled": why.PUBLIC,
    "internet access default internet access default": why.PUBLIC,
  },
  "js-sdk/tests/sandbox/lifecyclePayload.test.ts": {
    "filesystem-only auto-pause reboots on connect": why.BOOTID,
    "auto-resume wakes paused sandbox on http request": why.DOMAIN,
  },
  "js-sdk/tests/sandbox/network.test.ts": {
    "allow only 1.1.1.1 allow specific IP with deny all traffic": why.PUBLIC,
    "deny specific IP address deny specific IP address": why.PUBLIC,
    "allow takes precedence over deny allow takes precedence over deny": why.PUBLIC,
    "allowPublicTraffic=false sandbox requires traffic access token": why.PUBLIC,
    "allowPublicTraffic=true sandbox works without token": why.PUBLIC,
    "firewall transform injects headers injected header is reflected by the httpbin sidecar": why.HTTPBIN,
    "updateNetwork applies new egress rules denies a previously reachable IP after update": why.PUBLIC,
    "updateNetwork clears existing rules when fields are omitted omitting fields replaces all egress rules": why.PUBLIC,
    "maskRequestHost option verify maskRequestHost modifies Host header correctly": why.PUBLIC,
  },
  "js-sdk/tests/sandbox/snapshot.test.ts": {
    "pause and resume a sandbox with completed long running process": why.FAST_PAUSE,
    "pause and resume a sandbox with http server": why.DOMAIN,
    "filesystem-only pause reboots on resume but keeps the filesystem": why.BOOTID,
  },
  "js-sdk/tests/sandbox/urls.test.ts": {
    "sandbox file URLs file URLs use direct sandbox host when envd API uses stable host": why.DOMAIN,
  },
}

// skipReason is the reason the task is skipped, or undefined.
export function skipReason(task) {
  const names = []
  for (let t = task; t && !t.filepath; t = t.suite) names.unshift(t.name)
  return skips[task.file.name]?.[names.join(' ')]
}
