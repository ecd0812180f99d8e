# sandboxd with its sandboxes in pods of the single-node cluster that
# `make cluster` brings up (scripts/cluster.sh), beside the local Docker
# engine. Push the images the cluster pulls first:
#
#   make cluster
#   bin/sandboxd --config examples/kubernetes.hcl
#   bin/sandboxctl images build python node
#
# Paths are relative to this file.
socket     = "/run/sandboxd/sandboxd.sock"
state_dir  = "/var/lib/sandboxd"
plugin_dir = "../bin/plugins"
supervisor = "../bin/sandbox-init"
images_dir = "../images"

docker {
  host = "unix:///var/run/docker.sock"
}

runtime "kubernetes" {
  kubeconfig     = "/var/lib/sandboxd-cluster/admin.kubeconfig"
  namespace      = "sandboxd"
  runtime_class  = ""                # the cluster's default (runc here)
  node_selector  = {}
  image_registry = "127.0.0.1:5000"  # sandboxctl images build pushes them there
}

# Pods request what they may use (limits equal to requests): a quarter of
# a core each lets this 2-core node hold the pools and a few sessions.
language "python" {
  runtime = "kubernetes"
  limits {
    cpus   = 0.25
    memory = "256MiB"
    disk   = "128MiB"                # workspace files count toward memory
  }
  pool {
    min_idle = 2
    max      = 8
  }
}

language "node" {
  runtime = "kubernetes"
  limits {
    cpus   = 0.25
    memory = "256MiB"
    disk   = "128MiB"                # workspace files count toward memory
  }
  pool {
    min_idle = 1
    max      = 4
  }
}

# Stays on the local engine.
language "bash" {}
