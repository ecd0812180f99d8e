package docker

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/hashicorp/go-hclog"

	"github.com/sandboxd/sandboxd/runtime"
	"github.com/sandboxd/sandboxd/runtime/supervisor"
)

// The hardening list of docs/security.md, field by field, as the container
// config sandboxd sends the engine.
func TestContainerConfigIsHardened(t *testing.T) {
	d := &Docker{opts: Options{Supervisor: "/opt/sandbox-init", Instance: "inst", Runtime: "runc",
		Labels: map[string]string{runtime.LabelInstance: "forged", "team": "a"}}, seccomp: `{"profile":1}`, logger: hclog.NewNullLogger()}
	spec := runtime.Spec{
		Language: "python", Image: "img",
		Limits: runtime.Limits{Timeout: time.Second, Memory: 256 << 20, CPUs: 0.5, Pids: 64, Disk: 32 << 20},
		Labels: map[string]string{runtime.LabelManaged: "false", runtime.LabelSession: "s1"},
		Mounts: []runtime.Mount{{Source: "/state/projects/p1", Target: "/workspace/project_files", ReadOnly: true}},
	}
	cfg, host := d.containerConfig(spec, 1000000007, "")

	if cfg.User != "1000000007:1000000007" || cfg.Labels[runtime.LabelUID] != "1000000007" {
		t.Errorf("user %q", cfg.User)
	}
	if cfg.StopSignal != "SIGKILL" {
		t.Errorf("stop signal %q: the supervisor ignores the engine's SIGTERM", cfg.StopSignal)
	}
	if cfg.Entrypoint[0] != runtime.SupervisorPath || !cfg.OpenStdin || cfg.StdinOnce || cfg.Tty {
		t.Errorf("supervisor channel: entrypoint %v stdin %v once %v tty %v", cfg.Entrypoint, cfg.OpenStdin, cfg.StdinOnce, cfg.Tty)
	}
	for _, e := range cfg.Env {
		if strings.HasPrefix(e, "PATH=/root") || strings.HasPrefix(e, "DOCKER") {
			t.Errorf("host environment leaked: %s", e)
		}
	}
	// Mandatory labels are set last: neither operator nor spec labels win.
	if cfg.Labels[runtime.LabelManaged] != "true" || cfg.Labels[runtime.LabelInstance] != "inst" ||
		cfg.Labels[runtime.LabelLanguage] != "python" || cfg.Labels["team"] != "a" || cfg.Labels[runtime.LabelSession] != "s1" {
		t.Errorf("labels %v", cfg.Labels)
	}
	if host.NetworkMode != "none" || !host.ReadonlyRootfs || host.Privileged || host.PidMode != "" || host.IpcMode != "" || host.UTSMode != "" {
		t.Errorf("network %q readonly %v privileged %v pid %q ipc %q uts %q", host.NetworkMode, host.ReadonlyRootfs, host.Privileged, host.PidMode, host.IpcMode, host.UTSMode)
	}
	if len(host.CapDrop) != 1 || host.CapDrop[0] != "ALL" || len(host.CapAdd) != 0 {
		t.Errorf("capabilities: drop %v add %v", host.CapDrop, host.CapAdd)
	}
	if len(host.SecurityOpt) != 2 || host.SecurityOpt[0] != "no-new-privileges" || host.SecurityOpt[1] != `seccomp={"profile":1}` {
		t.Errorf("security options %v", host.SecurityOpt)
	}
	if host.LogConfig.Type != "none" || host.Runtime != "runc" || host.Init == nil || *host.Init {
		t.Errorf("log %q runtime %q init %v", host.LogConfig.Type, host.Runtime, host.Init)
	}
	r := host.Resources
	if r.Memory != 256<<20 || r.MemorySwap != r.Memory || r.NanoCPUs != 5e8 || r.PidsLimit == nil || *r.PidsLimit != 64+supervisor.ReservedThreads {
		t.Errorf("resources: memory %d swap %d cpus %d pids %v", r.Memory, r.MemorySwap, r.NanoCPUs, r.PidsLimit)
	}
	ulimits := map[string]int64{}
	for _, u := range r.Ulimits {
		if u.Soft != u.Hard {
			t.Errorf("ulimit %s soft %d hard %d", u.Name, u.Soft, u.Hard)
		}
		ulimits[u.Name] = u.Hard
	}
	if ulimits["core"] != 0 || ulimits["nofile"] == 0 || ulimits["nproc"] == 0 {
		t.Errorf("ulimits %v", ulimits)
	}
	for _, dir := range []string{runtime.Workspace, "/tmp"} {
		opts := host.Tmpfs[dir]
		for _, want := range []string{"nosuid", "nodev", "exec", "size=33554432", "uid=1000000007,gid=1000000007"} {
			if !strings.Contains(opts, want) {
				t.Errorf("tmpfs %s %q lacks %s", dir, opts, want)
			}
		}
	}
	if len(host.Binds) != 0 || len(host.Mounts) != 2 {
		t.Fatalf("binds %v mounts %+v", host.Binds, host.Mounts)
	}
	if m := host.Mounts[0]; m.Source != "/opt/sandbox-init" || m.Target != runtime.SupervisorPath || !m.ReadOnly {
		t.Errorf("supervisor mount %+v", m)
	}
	if m := host.Mounts[1]; m.Source != "/state/projects/p1" || !m.ReadOnly || m.BindOptions == nil || !m.BindOptions.NonRecursive {
		t.Errorf("project mount %+v", m)
	}
}

// A supervisor that dials sandboxd's socket has the socket's directory
// read-only, its token in its environment, and no stdio attached.
func TestTheChannelSocketIsMountedReadOnly(t *testing.T) {
	d := &Docker{opts: Options{Supervisor: "/opt/sandbox-init", ChannelDir: "/state/channel", Runtime: "runc"}, logger: hclog.NewNullLogger()}
	cfg, host := d.containerConfig(runtime.Spec{Language: "python", Image: "img"}, 1000000007, "t0k")
	if cfg.OpenStdin || cfg.AttachStdin || cfg.AttachStdout || cfg.AttachStderr {
		t.Errorf("stdio attached: %+v", cfg)
	}
	if m := host.Mounts[len(host.Mounts)-1]; m.Source != "/state/channel" || m.Target != supervisor.ChannelDir || !m.ReadOnly {
		t.Errorf("channel mount %+v", m)
	}
	if key, uid := channelOf(container.InspectResponse{Config: cfg}); key != supervisor.TokenSum("t0k") || uid != 1000000007 {
		t.Errorf("token's sum and uid read back: %q %d", key, uid)
	}
	// The labels carry the same, and not the token.
	listed := runtime.Container{Labels: cfg.Labels, Running: true}
	if key, uid := channelOfLabels(listed); key != supervisor.TokenSum("t0k") || uid != 1000000007 {
		t.Errorf("token's sum and uid from the labels: %q %d", key, uid)
	}
	for k, v := range cfg.Labels {
		if strings.Contains(v, "t0k") {
			t.Errorf("label %s carries the token: %q", k, v)
		}
	}
	listed.Running = false
	if key, _ := channelOfLabels(listed); key != "" {
		t.Error("the labels were trusted for a container not known to run")
	}
	// An operator's label of that name does not make it one that dials.
	d.opts.Labels = map[string]string{channelLabel: supervisor.TokenSum("x")}
	cfg, _ = d.containerConfig(runtime.Spec{Language: "python", Image: "img"}, 1000000007, "")
	if key, _ := channelOfLabels(runtime.Container{Labels: cfg.Labels, Running: true}); key != "" {
		t.Errorf("an attached container's channel label: %q", key)
	}
	if key, _ := channelOf(container.InspectResponse{Config: cfg}); key != "" {
		t.Errorf("an attached container's token: %q", key)
	}
}

// An engine that is down, or shutting down, is unavailable, not broken.
func TestEngineErrorsSayUnavailable(t *testing.T) {
	d := &Docker{}
	for _, err := range []error{
		errors.New("Error response from daemon: grpc: the client connection is closing: context canceled"),
		context.DeadlineExceeded,
	} {
		if got := d.engineError("starting a container", err); !errors.Is(got, runtime.ErrUnavailable) {
			t.Errorf("%v: %v", err, got)
		}
	}
	if got := d.engineError("starting a container", errors.New("No such image")); errors.Is(got, runtime.ErrUnavailable) {
		t.Errorf("an engine's refusal: %v", got)
	}
}
