# sandboxd's default configuration: works as-is after `make`.
# Relative paths are taken from this file's directory.

socket     = "/run/sandboxd/sandboxd.sock"
# socket_group = "sandboxd"  # its members may use the socket (mode 0660); make install sets it
state_dir  = "/var/lib/sandboxd"
plugin_dir = "bin/plugins"
supervisor = "bin/sandbox-init"
images_dir = "images"        # Dockerfiles `sandboxctl images build` builds from
# At start, build in the background every missing image images_dir has a
# Dockerfile for (two at a time, in this file's order); each language
# serves as soon as its image lands, and says `building` until then.
build_missing_images = true
# shutdown_timeout = "60s"  # SIGTERM: how long running executions may finish (below systemd's TimeoutStopSec)

http {
  # The web dashboard (and the API behind its login): `sandboxctl dashboard`
  # prints a link. Loopback only, unless you write another address here.
  listen = "127.0.0.1:7070"
}

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
  ttl          = "24h"        # default lifetime; a request may ask up to max_ttl
  max_ttl      = "168h"
  idle_timeout = "10m"        # after this long unused, on_idle applies
  freeze_after = "30s"        # after this long unused, freeze: processes and memory kept, no CPU; the next call thaws it ("0s": never)
  max_frozen   = 1000         # frozen sessions at once; past it, the longest frozen hibernates
  memory_low   = "1GiB"       # under this much available memory, frozen sessions hibernate, longest frozen first, and pools keep min_idle at most
  on_idle      = "hibernate"  # "hibernate": the workspace sleeps on disk, the next call wakes it; "end"
  max          = 32           # running sessions at once (not frozen or hibernated); more get too_many_sessions (429)
  max_hibernated       = 1000 # hibernated sessions at once (state_dir/sessions)
  max_hibernated_bytes = "20GiB"
  keep_memory  = true         # under gVisor, checkpoint processes and contexts too (slower to pause and resume)
  max_transfer = "256MiB"     # per file upload or download
}

projects {
  max       = 100             # projects at once
  max_bytes = "10GiB"         # all project files together (state_dir/blobs)
}

snapshots {
  max       = 100             # saved workspaces at once (sandboxctl session snapshot|fork)
  max_bytes = "10GiB"         # their archives together (state_dir/snapshots)
}

# Egress: sandboxes have no network. A network block lets programs reach
# the hosts it names, and nothing else, through sandboxd's proxy (see the
# README's Network egress). Here: every language's default and the limits;
# a language's own network block replaces the allow-list.
network {
  allow           = []        # e.g. ["registry.npmjs.org:443", "*.example.net", "203.0.113.0/24:8080"]
  max_connections = 16        # per sandbox at once
  max_bytes       = "1GiB"    # per execution
  connect_timeout = "10s"
}

# One block per language. plugin defaults to the block's name
# (bin/plugins/sandbox-lang-<plugin>); image defaults to the plugin's.
language "python" {
  image = "sandboxd/python:latest"
  # packages = ["scipy"]      # baked into a derived image by `sandboxctl images build python`
  pool {
    min_idle = 2
    max      = 32   # after a burst of sessions it keeps as many idle (up to this) for the next
  }
}

# A second version side by side: Debian bookworm's Python 3.11, by name
# (--lang python3.11); the block above (Python 3.13) stays the default for
# .py files.
language "python3.11" {
  plugin = "python"
  image  = "sandboxd/python311:latest"
  pool {
    min_idle = 1
    max      = 8
  }
}

language "node" {
  image = "sandboxd/node:latest"
  pool {
    min_idle = 2
    max      = 16
  }
  # network {
  #   allow = ["registry.npmjs.org:443"]   # npm install in sessions
  # }
}

language "typescript" {
  image = "sandboxd/node:latest"   # transpiled with the TypeScript compiler, then node
  pool {
    min_idle = 1
    max      = 8
  }
}

language "go" {
  image = "sandboxd/go:latest"
  pool {
    min_idle = 1
    max      = 8
  }
  limits {                          # the go tool runs compile and link processes
    timeout = "60s"
    memory  = "1GiB"
    pids    = 256
  }
}

# Debian's Go 1.24 beside the newest release above, by name (--lang go1.24).
language "go1.24" {
  plugin = "go"
  image  = "sandboxd/go124:latest"
  pool {
    min_idle = 0
    max      = 4
  }
  limits {
    timeout = "60s"
    memory  = "1GiB"
    pids    = 256
  }
}

language "java" {
  image = "sandboxd/java:latest"
  pool {
    min_idle      = 1
    max           = 8
    queue_timeout = "30s"           # a JVM's run and the warm javac after it take seconds under load
  }
  limits {                          # two JVMs per run: javac, then java
    timeout = "60s"
    memory  = "1GiB"
    pids    = 256
  }
}

language "ruby" {
  image = "sandboxd/ruby:latest"
  pool {
    min_idle = 1
    max      = 8
  }
}

language "php" {
  image = "sandboxd/php:latest"
  pool {
    min_idle = 1
    max      = 8
  }
}

language "bash" {
  image = "sandboxd/bash:latest"
  pool {
    min_idle = 1
    max      = 8
  }
}

language "c" {
  image = "sandboxd/c:latest"
  pool {
    min_idle = 1
    max      = 8
  }
}

language "cpp" {
  image = "sandboxd/c:latest"
  pool {
    min_idle = 1
    max      = 8
  }
  limits {
    memory = "1GiB"                 # g++ on template-heavy code
  }
}

language "rust" {
  image = "sandboxd/rust:latest"
  pool {
    min_idle = 1
    max      = 8
  }
  limits {
    timeout = "60s"
    memory  = "1GiB"
  }
}

# A language defined here alone: the generic plugin runs it from these
# attributes; images/lua/Dockerfile makes its image.
language "lua" {
  plugin          = "generic"
  image           = "sandboxd/lua:latest"
  display_name    = "Lua 5.4"
  extensions      = ["lua"]
  main_file       = "main.lua"
  run             = ["lua5.4", "{entry}"]
  version_command = ["lua5.4", "-v"]
  pool {
    min_idle = 1
    max      = 8
  }
}

# C# with Mono (mcs, C# 7) from Debian, with a warm compiler. For .NET,
# whose SDK is not in Debian's packages: docs/languages.md.
language "csharp" {
  image = "sandboxd/csharp:latest"
  pool {
    min_idle = 1
    max      = 8
  }
}

# A desktop to see and drive: a screen (Xvfb) with XFCE and Chromium that
# starts with each session, driven through the desktop API (`sandboxctl
# desktop`, the clients, MCP) and E2B Desktop's SDK. Its image is large
# (about 1.5 GB), built when the first session asks for it, and a session
# takes about 300 MiB: no warm containers wait.
language "desktop" {
  plugin          = "generic"
  image           = "sandboxd/desktop:latest"
  display_name    = "Desktop (XFCE, Chromium; programs in Bash)"
  main_file       = "main.sh"
  run             = ["bash", "{entry}"]
  version_command = ["chromium", "--version"]
  desktop {
    screen = "1024x768"
  }
  limits {
    memory       = "2GiB"
    pids         = 512
    output_limit = "16MiB"      # a screenshot comes back as one
  }
  pool {
    min_idle = 0
    max      = 4
  }
}

# Policies: guard rails and audit, evaluated in this order for every run,
# session exec and validate. mode: "enforce" (a deny blocks the request:
# policy_denied, sandboxctl exit 126), "warn" (findings only) or "off";
# left out, the plugin's default. A plugin that crashes or hangs past
# timeout denies in enforce mode and warns in warn mode.
policy "limits" {
  mode = "enforce"            # sizes, file counts, limits within the ceilings
  options = {
    max_code_size = "1MiB"
    max_files     = "100"
  }
}

policy "patterns" {
  mode = "warn"               # eval, shell commands, rm -rf /, curl | sh, fork bombs
}

policy "secrets" {
  mode = "warn"               # hardcoded credentials, masked in every record
}

policy "commands" {
  mode = "enforce"            # session commands: deny-list, allow-list, paths
  # options = { allow = "python3,node,ls,cat" }
}

# A third party's plugin, loaded only when a block names it:
# policy "no-todo" {
#   plugin  = "example"       # bin/plugins/sandbox-policy-example
#   mode    = "warn"
#   options = { words = "TODO,FIXME" }
# }

# A person's approval before what a policy flags runs (sandboxctl approvals,
# the dashboard's Approvals page); denied when nobody decides in time:
# approval_timeout = "5m"
# policy "review" {
#   plugin  = "patterns"
#   mode    = "ask"
# }
