# sandboxd answering E2B's SDKs (the e2b block): agent frameworks written
# for E2B run their sandboxes here, unchanged. Start it, export the
# variables of e2b.env, and run the SDK's own code:
#
#   bin/sandboxd --config examples/e2b.hcl
#   set -a; . examples/e2b.env; set +a
#   node -e 'const {Sandbox} = require("e2b"); (async () => {
#     const sb = await Sandbox.create(); console.log((await sb.commands.run("uname -a")).stdout); await sb.kill() })()'
#
# Paths are relative to this file.
socket     = "/run/sandboxd/sandboxd.sock"
state_dir  = "/var/lib/sandboxd"
plugin_dir = "../bin/plugins"
supervisor = "../bin/sandbox-init"
images_dir = "../images"
build_missing_images = true

e2b {
  # Loopback only, unless you write another address here. The port is
  # below the ephemeral range, where no outgoing connection can hold it.
  listen = "127.0.0.1:4982"
  # The keys clients send (E2B_API_KEY), "e2b_" and hex digits as the SDKs
  # take them. Make your own: echo e2b_$(openssl rand -hex 20)
  api_keys = ["e2b_00000000000000000000000000000000000000ee"]
  # Templates: every language by its name; "base" (E2B's has python3) is
  # python's, and "code-interpreter-v1" (the Code Interpreter's) is
  # code-interpreter's below (python's when there is none).
  # A template block names another: environment and limits of its own,
  # and a command its sandboxes start as they are made.
  template "data-science" {
    language = "python"
    env      = { MPLBACKEND = "Agg" }
    limits {
      memory = "384MiB"
    }
  }
  template "web" {
    language = "python"
    start    = ["python3", "-m", "http.server", "8000", "--bind", "127.0.0.1"]
  }
}

defaults {
  # The longest one E2B command or cell may run, a background server's
  # included (the SDK's own timeoutMs, 60 s unless it says otherwise,
  # ends it sooner).
  timeout = "1h"
  # What a command or cell may print and be kept, per stream, as E2B's
  # service streams 10 MiB and more (the rest is counted, not kept).
  output_limit = "16MiB"
}

sessions {
  ttl          = "1h"         # an E2B sandbox's life is its timeout (default 5 minutes)
  max_ttl      = "24h"        # the longest setTimeout may ask for
  max          = 32
  max_transfer = "256MiB"
}

language "python" {
  image = "sandboxd/python:latest"
  pool {
    min_idle = 1
    max      = 16
  }
}

# The Code Interpreter's sandboxes: Python, with JavaScript, TypeScript,
# R, Java and Bash contexts beside it (runCode(code, {language: "js"})),
# as E2B's template runs them. Its image is python's with Node.js, the JDK
# and R.
language "code-interpreter" {
  plugin   = "python"
  image    = "sandboxd/code-interpreter:latest"
  contexts = ["node", "typescript", "r", "java", "bash"]
  pool {
    min_idle = 2
    max      = 16
  }
  limits {
    pids = 512 # a node kernel runs about 11 threads: room for E2B's 32 contexts
  }
}

language "typescript" {
  image = "sandboxd/node:latest"
  pool {
    min_idle = 0
    max      = 8
  }
}

language "r" {
  image = "sandboxd/code-interpreter:latest"
  pool {
    min_idle = 0
    max      = 8
  }
}

language "node" {
  image = "sandboxd/node:latest"
  pool {
    min_idle = 1
    max      = 8
  }
}

language "java" {
  image = "sandboxd/java:latest"
  pool {
    min_idle = 0
    max      = 4
  }
}

language "bash" {
  image = "sandboxd/bash:latest"
  pool {
    min_idle = 1
    max      = 8
  }
}

# E2B Desktop's template (the `desktop` template its SDK creates by
# default): a screen, XFCE and Chromium. The SDK starts the screen at the
# size it asks for; the desktop API drives it too.
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
    memory = "2GiB"
    pids   = 512
  }
  pool {
    min_idle = 0
    max      = 4
  }
}

policy "limits" {
  mode = "enforce"
}

policy "commands" {
  mode = "enforce"            # E2B's commands run as bash -l -c "...": the deny-list applies to them
}
