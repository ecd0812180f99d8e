# sandboxd's default configuration: works as-is after `make`.
# Relative paths are taken from this file's directory.

socket     = "/run/sandboxd/sandboxd.sock"
state_dir  = "/var/lib/sandboxd"
plugin_dir = "bin/plugins"
supervisor = "bin/sandbox-init"

docker {
  host    = "unix:///var/run/docker.sock"
  runtime = "runc"            # e.g. "runsc" for gVisor where installed
}

defaults {                    # ceilings a request may lower, never raise
  timeout      = "30s"
  memory       = "512MiB"     # workspace and /tmp files count toward it (tmpfs)
  cpus         = 1.0
  pids         = 128
  disk         = "256MiB"     # size of /workspace and of /tmp: a full one is ENOSPC
  network      = "none"
  output_limit = "1MiB"
}

sessions {
  ttl          = "1h"         # default lifetime; a request may ask up to max_ttl
  max_ttl      = "24h"
  idle_timeout = "10m"        # expire after this long unused
  max          = 32           # sessions at once; more get too_many_sessions (429)
  max_transfer = "256MiB"     # per file upload or download
}

language "python" {
  plugin = "python"           # bin/plugins/sandbox-lang-python
  image  = "sandboxd/python:latest"
  pool {
    min_idle = 2
    max      = 16
  }
}

language "node" {
  plugin = "node"
  image  = "sandboxd/node:latest"
  pool {
    min_idle = 2
    max      = 16
  }
}
