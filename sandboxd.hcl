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
  memory       = "256MiB"
  cpus         = 1.0
  pids         = 128
  disk         = "256MiB"
  network      = "none"
  output_limit = "1MiB"
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
