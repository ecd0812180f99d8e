// Package docker implements runtime.Runtime with the Docker Go SDK.
//
// Every container is built to the hardening list of docs/security.md: a non-root
// uid that is no host user's, read-only root filesystem, all capabilities
// dropped, no-new-privileges, Docker's default seccomp profile with io_uring
// removed, memory without swap, cpu, pids and ulimits, size-limited tmpfs
// for /workspace and /tmp, network none, no log capture, and the supervisor
// (sandbox-init) bind-mounted read-only as PID 1.
//
// The supervisor is mounted from the host rather than baked into images so
// that it always speaks the protocol of the daemon that started it, and a
// daemon upgrade needs no image rebuild. The channel to it is a Unix
// socket of sandboxd's, mounted read-only (channel.go), for runc sandboxes
// when Options.ChannelDir is set, and the container's attached stdio
// otherwise (see runtime/supervisor).
package docker

import (
	"cmp"
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/checkpoint"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/mount"
	"github.com/docker/docker/client"
	"github.com/docker/docker/pkg/stdcopy"
	"github.com/docker/go-units"
	"github.com/hashicorp/go-hclog"
	"github.com/opencontainers/cgroups"
	"golang.org/x/sys/unix"

	"github.com/sandboxd/sandboxd/runtime"
	"github.com/sandboxd/sandboxd/runtime/supervisor"
)

// Options configure the Docker runtime.
type Options struct {
	Host       string // e.g. unix:///var/run/docker.sock; empty: environment
	TLS        *TLS   // for a tcp:// Host; nil: none
	Runtime    string // OCI runtime, e.g. runc or runsc
	Supervisor string // host path of the sandbox-init binary
	// ChannelDir is the host directory of the supervisors' socket (an
	// engine on this host); empty: each channel is an attach stream.
	ChannelDir string
	Instance   string            // value of io.sandboxd.instance
	Labels     map[string]string // operator labels, set first
	UIDs       *runtime.UIDs     // each sandbox runs as its own uid from here
	Logger     hclog.Logger
}

// TLS names the PEM files of an engine's TLS (dockerd --tlsverify): the CA
// that signed the engine's certificate and, when the engine verifies its
// clients, sandboxd's certificate and key.
type TLS struct {
	CAFile, CertFile, KeyFile string
}

// callTimeout bounds every ordinary engine call.
const callTimeout = 30 * time.Second

// Docker is a runtime.Runtime backed by a Docker engine.
type Docker struct {
	cli     *client.Client
	opts    Options
	seccomp string
	logger  hclog.Logger

	uids *runtime.UIDs

	channels *channels // nil without Options.ChannelDir

	mu     sync.Mutex
	conns  map[string]io.Closer     // open channels (socket or attach stream) by container id
	owners map[string]uint32        // the uid each known container runs as
	frozen map[string]freezerCgroup // containers frozen (Freeze), which Remove thaws first
	// freezers finds the cgroups that freeze runc containers.
	freezers freezers
	// pauseLocks order each container's pause, thaw and removal.
	pauseLocks map[string]*sync.Mutex
}

var _ runtime.Runtime = (*Docker)(nil)

// New connects to the engine, negotiating the API version so that both
// Debian's 20.10 (API 1.41) and newer engines work. Without a Host the
// environment decides, as it does for the docker CLI: DOCKER_HOST,
// DOCKER_TLS_VERIFY and DOCKER_CERT_PATH.
func New(opts Options) (*Docker, error) {
	clientOpts := []client.Opt{client.FromEnv, client.WithAPIVersionNegotiation()}
	if opts.Host != "" {
		clientOpts = []client.Opt{client.WithHost(opts.Host), client.WithAPIVersionNegotiation()}
	}
	if t := opts.TLS; t != nil {
		clientOpts = append(clientOpts, client.WithTLSClientConfig(t.CAFile, t.CertFile, t.KeyFile))
	}
	cli, err := client.NewClientWithOpts(clientOpts...)
	if err != nil {
		return nil, fmt.Errorf("docker client for %q: %w", opts.Host, err)
	}
	profile, err := runtime.SeccompProfile()
	if err != nil {
		return nil, err
	}
	d := &Docker{
		cli: cli, opts: opts, seccomp: profile, logger: opts.Logger.Named("docker"), uids: opts.UIDs,
		conns: map[string]io.Closer{}, owners: map[string]uint32{}, pauseLocks: map[string]*sync.Mutex{},
	}
	if opts.ChannelDir != "" {
		if err := d.listenChannels(); err != nil {
			return nil, err
		}
	}
	return d, nil
}

// listenChannels opens the supervisors' socket in Options.ChannelDir
// where sandboxes can have it mounted: an engine on this host, and a path
// short enough for a socket's address. Elsewhere channels are attached.
func (d *Docker) listenChannels() error {
	path := filepath.Join(d.opts.ChannelDir, filepath.Base(supervisor.ChannelSocket))
	switch {
	case !strings.HasPrefix(d.cli.DaemonHost(), "unix://"):
		d.logger.Info("the engine is not on this host: supervisors speak through attach streams", "host", d.cli.DaemonHost())
		return nil
	case len(path) >= len(unix.RawSockaddrUnix{}.Path):
		d.logger.Warn("the state directory's path is too long for a socket's: supervisors speak through attach streams, which cost more", "socket", path)
		return nil
	}
	var err error
	d.channels, err = listenChannels(d.opts.ChannelDir)
	return err
}

// Ping implements runtime.Runtime.
func (d *Docker) Ping(ctx context.Context) (runtime.EngineInfo, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	v, err := d.cli.ServerVersion(ctx)
	if err != nil {
		return runtime.EngineInfo{}, fmt.Errorf("%w at %s: %v (%s)", runtime.ErrUnavailable, d.cli.DaemonHost(), err, pingHint(err))
	}
	rt := d.opts.Runtime
	if rt == "" {
		rt = "runc"
	}
	return runtime.EngineInfo{Version: v.Version, APIVersion: d.cli.ClientVersion(), Runtime: rt}, nil
}

// pingHint says what to do when the engine does not answer: mostly start
// it, but a TLS failure is a configuration to fix, not an engine to start.
func pingHint(err error) string {
	var unknownCA x509.UnknownAuthorityError
	var badName x509.HostnameError
	var record tls.RecordHeaderError
	switch {
	case errors.As(err, &unknownCA) || errors.As(err, &badName):
		return "the engine's certificate is not one the docker block's tls ca_file (or DOCKER_CERT_PATH's ca.pem) vouches for: name the CA that signed it, for the address in host"
	case strings.Contains(err.Error(), "remote error: tls"): // the engine's alert
		return "the engine refused sandboxd's TLS client certificate: give tls cert_file and key_file signed by the CA the engine trusts (dockerd --tlscacert)"
	case errors.As(err, &record) || strings.Contains(err.Error(), "HTTP request to an HTTPS server"):
		return "the engine and sandboxd disagree on TLS: add or remove the docker block's tls block (or DOCKER_TLS_VERIFY and DOCKER_CERT_PATH) to match dockerd's --tlsverify"
	}
	return "start it with scripts/docker-engine.sh"
}

// Create implements runtime.Runtime: create, attach, start, hello.
func (d *Docker) Create(ctx context.Context, spec runtime.Spec) (sb *runtime.Sandbox, err error) {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	uid, err := d.uids.Take()
	if err != nil {
		return nil, err
	}
	token, key := "", "" // the channel's, and its sum, when it is the socket
	var admitted chan dialed
	if d.channels != nil && d.ociRuntime(spec) != "runsc" {
		// gVisor checkpoints a hibernating session, which a connection
		// to a host socket would keep it from: its channel is attached.
		token = supervisor.NewToken()
		key = supervisor.TokenSum(token)
		admitted = d.channels.expect(key, uid)
	}
	cfg, hostCfg := d.containerConfig(spec, uid, token)
	// Not cancelled half-way: the engine may make a container whose id a
	// cancelled call never hears, and no one would remove it (a pool
	// filling as sandboxd stops left such containers "created"). A
	// cancelled ctx removes it below, once its id is known.
	apart, cancelApart := context.WithTimeout(context.WithoutCancel(ctx), callTimeout)
	defer cancelApart()
	created, err := d.cli.ContainerCreate(apart, cfg, hostCfg, nil, nil, "")
	if err == nil && ctx.Err() != nil {
		_ = d.cli.ContainerRemove(apart, created.ID, container.RemoveOptions{Force: true, RemoveVolumes: true})
		err = ctx.Err()
	}
	if err != nil {
		d.uids.Release(uid)
		if token != "" {
			d.channels.forget(key)
		}
		if cerrdefs.IsNotFound(err) {
			return nil, fmt.Errorf("%w: %s (build it with `make images` or `images/build.sh %s`)", runtime.ErrImageMissing, spec.Image, spec.Language)
		}
		if strings.Contains(err.Error(), "Unknown runtime specified") {
			return nil, fmt.Errorf("the engine has no OCI runtime %q: install it (Debian's runsc package for gVisor) and restart the engine with scripts/docker-engine.sh, which registers runsc, or add it under \"runtimes\" in the engine's daemon.json", d.ociRuntime(spec))
		}
		return nil, d.engineError("creating a container", err)
	}
	id := created.ID
	d.own(id, uid)
	defer runtime.RemoveOnFailure(&err, id, d.Remove)
	var conn *supervisor.Conn
	if token == "" {
		// Attach before start, so that the supervisor's first words are heard.
		if conn, err = d.attach(id); err != nil {
			return nil, err
		}
	}
	if err := d.cli.ContainerStart(ctx, id, container.StartOptions{}); err != nil {
		if token != "" {
			d.channels.forget(key)
		}
		return nil, d.engineError("starting a container", err)
	}
	if token != "" {
		if conn, err = d.connect(ctx, id, key, admitted); err != nil {
			return nil, err
		}
	}
	sb = &runtime.Sandbox{ID: id, Language: spec.Language, Labels: cfg.Labels, Created: time.Now(), Conn: conn, OOMKilled: d.oomKilled(id)}
	if err := sb.Hello(ctx); err != nil {
		// Asked apart from ctx, which may be what ran out: a slow start
		// is not an engine gone.
		if _, perr := d.Ping(context.WithoutCancel(ctx)); perr != nil {
			return nil, perr // the engine went away meanwhile
		}
		return nil, fmt.Errorf("sandbox supervisor did not start: %w", err)
	}
	return sb, nil
}

// oomKilled is Sandbox.OOMKilled for container id. The engine learns of
// the end a moment after the supervisor's connection drops (gVisor's
// teardown can take seconds on a loaded machine), and of the OOM kill a
// moment after that: it waits for the container to stop, 10 s at most.
func (d *Docker) oomKilled(id string) func(context.Context) bool {
	return func(ctx context.Context) bool {
		ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		waited, failed := d.cli.ContainerWait(ctx, id, container.WaitConditionNotRunning)
		select {
		case <-waited:
		case <-failed:
			// Gone already, or the engine cannot say: inspect decides.
		}
		// The OOM event may come in after the exit: a second more for it.
		for range 20 {
			info, err := d.cli.ContainerInspect(ctx, id)
			if err != nil || info.State == nil || info.State.Running {
				return false
			}
			if info.State.OOMKilled || gVisorOutOfMemory(info) {
				return true
			}
			time.Sleep(50 * time.Millisecond)
		}
		return false
	}
}

// gVisorOutOfMemory tells a runsc container that ended for memory: its
// kernel, a Go program, exits 2 when its own allocations fail at the
// limit, or is SIGKILLed by the host's OOM killer, an end the engine does
// not always report as an OOM kill.
func gVisorOutOfMemory(info container.InspectResponse) bool {
	return info.HostConfig != nil && info.HostConfig.Runtime == "runsc" && (info.State.ExitCode == 2 || info.State.ExitCode == 137)
}

// ociRuntime is the OCI runtime spec's container runs under.
func (d *Docker) ociRuntime(spec runtime.Spec) string {
	if spec.Runtime != "" {
		return spec.Runtime
	}
	return d.opts.Runtime
}

// Attach implements runtime.Runtime.
func (d *Docker) Attach(ctx context.Context, c runtime.Container) (*runtime.Sandbox, error) {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	key, uid := channelOfLabels(c)
	if key == "" {
		// The engine lets one attach to a stopped container, which would
		// then never answer hello.
		info, err := d.cli.ContainerInspect(ctx, c.ID)
		if err != nil {
			return nil, d.engineError("inspecting container "+runtime.ShortID(c.ID), err)
		}
		if info.State == nil || !info.State.Running {
			return nil, fmt.Errorf("container %s is not running", runtime.ShortID(c.ID))
		}
		key, uid = channelOf(info)
	}
	var conn *supervisor.Conn
	var err error
	if key != "" && d.channels != nil {
		// Its supervisor dials again once its last connection is closed.
		admitted := d.channels.expect(key, uid)
		d.detach(c.ID)
		conn, err = d.connect(ctx, c.ID, key, admitted)
	} else {
		conn, err = d.attach(c.ID)
	}
	if err != nil {
		return nil, err
	}
	sb := &runtime.Sandbox{ID: c.ID, Language: c.Language, Labels: c.Labels, Created: c.Created, Conn: conn, OOMKilled: d.oomKilled(c.ID)}
	if err := sb.Hello(ctx); err != nil {
		d.detach(c.ID)
		return nil, fmt.Errorf("sandbox supervisor did not answer: %w", err)
	}
	return sb, nil
}

// connect waits for the supervisor of container id to dial the channels'
// socket with the token whose sum is key.
func (d *Docker) connect(ctx context.Context, id, key string, admitted chan dialed) (*supervisor.Conn, error) {
	conn, closer, err := d.channels.wait(ctx, key, admitted)
	if err != nil {
		return nil, err
	}
	d.mu.Lock()
	d.conns[id] = closer
	d.mu.Unlock()
	return conn, nil
}

// channelLabel carries the sum of a container's channel token (the key
// its supervisor is expected by), so that a session frozen across a
// restart connects to its supervisor when it thaws without asking the
// engine: an inspect took 5 / 59 ms p50 / p99 while the engine removed
// the previous instance's containers. The sum, not the token: labels are
// listed (docker ps) and exported (monitoring) more widely than env.
const channelLabel = "io.sandboxd.channel"

// channelOfLabels is channelOf from the labels of c, known to run (a
// container listed running, or just thawed): "" for a container made
// before the label, or not known to run, which is asked of the engine.
func channelOfLabels(c runtime.Container) (key string, uid uint32) {
	n, err := strconv.ParseUint(c.Labels[runtime.LabelUID], 10, 32)
	if !c.Running || err != nil {
		return "", 0
	}
	return c.Labels[channelLabel], uint32(n)
}

// channelOf is the key (the token's sum) and uid of a container whose
// supervisor dials the channels' socket; "" for one whose channel is its
// stdio.
func channelOf(info container.InspectResponse) (key string, uid uint32) {
	var token string
	if info.Config == nil {
		return "", 0
	}
	dials := false
	for _, e := range info.Config.Env {
		k, v, _ := strings.Cut(e, "=")
		switch k {
		case supervisor.EnvDial:
			dials = true
		case supervisor.EnvToken:
			token = v
		}
	}
	id, _, _ := strings.Cut(info.Config.User, ":")
	n, err := strconv.ParseUint(id, 10, 32)
	if !dials || err != nil {
		return "", 0
	}
	return supervisor.TokenSum(token), uint32(n)
}

// attach opens the container's stdio, on a context that outlives the
// call: the stream is the supervisor channel for the container's life.
// The container keeps stdin open (StdinOnce false), so a later sandboxd
// can attach again.
func (d *Docker) attach(id string) (*supervisor.Conn, error) {
	att, err := d.cli.ContainerAttach(context.Background(), id, container.AttachOptions{Stream: true, Stdin: true, Stdout: true, Stderr: true})
	if err != nil {
		return nil, d.engineError("attaching to a container", err)
	}
	d.mu.Lock()
	d.conns[id] = att.Conn
	d.mu.Unlock()
	stdout, stdoutW := io.Pipe()
	go func() {
		// The supervisor's stderr is its own diagnostics: log a bounded amount.
		_, err := stdcopy.StdCopy(stdoutW, &limitedLog{logger: d.logger.With("container_id", runtime.ShortID(id)), left: 64 << 10}, att.Reader)
		stdoutW.CloseWithError(err)
	}()
	return supervisor.NewConn(stdout, att.Conn), nil
}

// detach closes the channel of a container, which goes on running.
func (d *Docker) detach(id string) {
	d.mu.Lock()
	conn := d.conns[id]
	delete(d.conns, id)
	d.mu.Unlock()
	if conn != nil {
		conn.Close()
	}
}

// own records that container id runs as uid, which stays taken until the
// container is removed.
func (d *Docker) own(id string, uid uint32) {
	d.uids.Mark(uid)
	d.mu.Lock()
	d.owners[id] = uid
	d.mu.Unlock()
}

// disown gives back the uid of a container that is gone.
func (d *Docker) disown(id string) {
	d.mu.Lock()
	uid, ok := d.owners[id]
	delete(d.owners, id)
	d.mu.Unlock()
	if ok {
		d.uids.Release(uid)
	}
}

// containerConfig is the container of spec, run as uid. With a token its
// supervisor dials the channels' socket; without, it speaks on its stdio.
func (d *Docker) containerConfig(spec runtime.Spec, uid uint32, token string) (*container.Config, *container.HostConfig) {
	labels := map[string]string{}
	for k, v := range d.opts.Labels {
		labels[k] = v
	}
	for k, v := range spec.Labels {
		labels[k] = v
	}
	// Mandatory labels last: nothing above can override them.
	labels[runtime.LabelManaged] = "true"
	labels[runtime.LabelInstance] = d.opts.Instance
	labels[runtime.LabelLanguage] = spec.Language
	labels[runtime.LabelUID] = strconv.FormatUint(uint64(uid), 10)

	user := fmt.Sprintf("%d:%d", uid, uid)
	env := append([]string{"HOME=" + cmp.Or(spec.WorkspaceAt, runtime.Workspace), "LANG=C.UTF-8", "TMPDIR=/tmp"}, spec.Env...)
	cfg := &container.Config{
		Image:      spec.Image,
		User:       user,
		Entrypoint: []string{runtime.SupervisorPath},
		Cmd:        []string{},
		WorkingDir: runtime.Workspace,
		Env:        env,
		Labels:     labels,
		Hostname:   "sandbox",
		// The supervisor drops every signal it can (code in the sandbox
		// may send them): the engine's stop, and its own shutdown, would
		// wait 10 s for a SIGTERM to do nothing. A container outliving
		// its engine would go on answering sandboxd on its own channel.
		StopSignal: "SIGKILL",
		// A network namespace of its own with loopback alone, as
		// NetworkMode none makes, without libnetwork's sandbox: dockerd
		// then adds no prestart hook that starts its own binary again
		// for every container (40% of a creation's CPU).
		NetworkDisabled: true,
		AttachStdin:     true,
		AttachStdout:    true,
		AttachStderr:    true,
		OpenStdin:       true,
		StdinOnce:       false,
		Tty:             false,
	}
	pids := spec.Limits.Pids + supervisor.ReservedThreads
	// RLIMIT_NPROC counts per host uid, and the uid is this sandbox's
	// alone: a second bound beside pids.
	nproc := int64(8192)
	if d.ociRuntime(spec) == "runsc" {
		// gVisor runs a sandbox's processes inside host processes and
		// threads of its own (about five per process on its ptrace
		// platform), which the pids cgroup counts: a limit that tight
		// kills gVisor itself. Its kernel enforces RLIMIT_NPROC for the
		// sandbox's uid, which bounds the program's processes instead,
		// and the cgroup keeps a loose bound on the host's.
		nproc = pids
		pids = 8*pids + 512
	}
	init := false
	tmpfs := func(size int64, mode string) string {
		return fmt.Sprintf("rw,exec,nosuid,nodev,size=%d,uid=%d,gid=%d,mode=%s", size, uid, uid, mode)
	}
	hostCfg := &container.HostConfig{
		NetworkMode:    "none",
		ReadonlyRootfs: true,
		CapDrop:        []string{"ALL"},
		SecurityOpt:    []string{"no-new-privileges", "seccomp=" + d.seccomp},
		LogConfig:      container.LogConfig{Type: "none"},
		Runtime:        d.ociRuntime(spec),
		Init:           &init, // the supervisor is PID 1 and reaps
		Tmpfs: map[string]string{
			cmp.Or(spec.WorkspaceAt, runtime.Workspace): tmpfs(spec.Limits.Disk, "0755"),
			"/tmp": tmpfs(spec.Limits.Disk, "1777"),
		},
		Mounts: []mount.Mount{{
			Type: mount.TypeBind, Source: d.opts.Supervisor, Target: runtime.SupervisorPath, ReadOnly: true,
		}},
		ShmSize: 64 << 20,
		Resources: container.Resources{
			Memory:     spec.Limits.Memory,
			MemorySwap: spec.Limits.Memory, // equal: no swap
			NanoCPUs:   int64(spec.Limits.CPUs * 1e9),
			PidsLimit:  &pids,
			Ulimits: []*units.Ulimit{
				{Name: "nofile", Soft: 1024, Hard: 1024},
				{Name: "nproc", Soft: nproc, Hard: nproc},
				{Name: "core", Soft: 0, Hard: 0},
			},
		},
	}
	delete(labels, channelLabel) // sandboxd's alone: an operator's would make Attach wait for a dial
	if token != "" {
		labels[channelLabel] = supervisor.TokenSum(token)
		cfg.Env = append(cfg.Env, supervisor.EnvDial+"="+supervisor.ChannelSocket, supervisor.EnvToken+"="+token)
		cfg.AttachStdin, cfg.AttachStdout, cfg.AttachStderr, cfg.OpenStdin = false, false, false, false
		hostCfg.Mounts = append(hostCfg.Mounts, mount.Mount{
			Type: mount.TypeBind, Source: d.opts.ChannelDir, Target: supervisor.ChannelDir, ReadOnly: true,
		})
	}
	for _, m := range spec.Mounts {
		hostCfg.Mounts = append(hostCfg.Mounts, mount.Mount{
			Type: mount.TypeBind, Source: m.Source, Target: m.Target, ReadOnly: m.ReadOnly,
			BindOptions: &mount.BindOptions{NonRecursive: true},
		})
	}
	return cfg, hostCfg
}

// Update implements runtime.Runtime.
func (d *Docker) Update(ctx context.Context, id string, l runtime.Limits) error {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	pids := l.Pids + supervisor.ReservedThreads
	_, err := d.cli.ContainerUpdate(ctx, id, container.UpdateConfig{Resources: container.Resources{
		Memory: l.Memory, MemorySwap: l.Memory, NanoCPUs: int64(l.CPUs * 1e9), PidsLimit: &pids,
	}})
	if err != nil {
		if info, ierr := d.cli.ContainerInspect(ctx, id); ierr == nil && info.HostConfig != nil && info.HostConfig.Runtime != "runc" {
			return fmt.Errorf("%w: %s: %v", runtime.ErrFixedLimits, info.HostConfig.Runtime, err)
		}
		return d.engineError("updating the limits of container "+runtime.ShortID(id), err)
	}
	return nil
}

// Remove implements runtime.Runtime.
func (d *Docker) Remove(ctx context.Context, id string) error {
	d.detach(id)
	unlock := d.lockPause(id) // a pause under way lands first, and is undone
	defer unlock()
	defer func() {
		// Only now: a freeze asked for meanwhile waited for the lock,
		// and finds the container gone.
		d.mu.Lock()
		delete(d.pauseLocks, id)
		d.mu.Unlock()
	}()
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	if c, was := d.unfreeze(id); was {
		// gVisor cannot kill a paused sandbox: the engine gives up after
		// 10 s, "is zombie and can not be killed"; and a frozen process
		// takes its SIGKILL only once thawed.
		if c.viaEngine() {
			_ = d.cli.ContainerUnpause(ctx, id)
		} else {
			_ = c.set(cgroups.Thawed)
		}
	}
	err := d.cli.ContainerRemove(ctx, id, container.RemoveOptions{Force: true, RemoveVolumes: true})
	if err != nil && !cerrdefs.IsNotFound(err) && !strings.Contains(err.Error(), "is already in progress") {
		return d.engineError("removing container "+runtime.ShortID(id), err)
	}
	d.disown(id) // nothing runs as its uid any more
	return nil
}

// List implements runtime.Runtime.
func (d *Docker) List(ctx context.Context) ([]runtime.Container, error) {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	args := filters.NewArgs(
		filters.Arg("label", runtime.LabelManaged+"=true"),
		filters.Arg("label", runtime.LabelInstance+"="+d.opts.Instance),
	)
	list, err := d.cli.ContainerList(ctx, container.ListOptions{All: true, Filters: args})
	if err != nil {
		return nil, d.engineError("listing containers", err)
	}
	out := make([]runtime.Container, len(list))
	for i, c := range list {
		if uid, err := strconv.ParseUint(c.Labels[runtime.LabelUID], 10, 32); err == nil {
			d.own(c.ID, uint32(uid))
		}
		out[i] = runtime.Container{
			ID: c.ID, Labels: c.Labels, Created: time.Unix(c.Created, 0),
			Running: c.State == "running", Paused: c.State == "paused", Language: c.Labels[runtime.LabelLanguage],
		}
		if out[i].Paused {
			d.setFrozen(c.ID, freezerCgroup{})
		}
	}
	d.findFrozenInCgroups(ctx, out)
	return out, nil
}

// findFrozenInCgroups marks the running containers frozen in their
// cgroups (by this runtime before a restart), which the engine reports
// running.
func (d *Docker) findFrozenInCgroups(ctx context.Context, list []runtime.Container) {
	for i := range list {
		c := &list[i]
		if !c.Running {
			continue
		}
		cg, frozen, found := d.freezers.frozenInCgroup(c.ID)
		if !found { // none known yet, or this one elsewhere: its process says
			if cg, _ = d.freezers.of(ctx, c.ID, d.processOf); cg.viaEngine() {
				continue
			}
			frozen = cg.frozen()
		}
		if frozen {
			c.Running, c.Paused = false, true
			d.setFrozen(c.ID, cg)
		}
	}
}

// processOf is container id's OCI runtime and first process.
func (d *Docker) processOf(ctx context.Context, id string) (string, int, error) {
	info, err := d.cli.ContainerInspect(ctx, id)
	if err != nil {
		if cerrdefs.IsNotFound(err) {
			return "", 0, fmt.Errorf("%w: %s", runtime.ErrGone, runtime.ShortID(id))
		}
		return "", 0, d.engineError("inspecting container "+runtime.ShortID(id), err)
	}
	if info.State == nil || info.State.Pid == 0 || info.HostConfig == nil {
		return "", 0, fmt.Errorf("container %s is not running", runtime.ShortID(id))
	}
	return info.HostConfig.Runtime, info.State.Pid, nil
}

// Close implements runtime.Runtime.
func (d *Docker) Close() error {
	if d.channels != nil {
		_ = d.channels.Close()
	}
	return d.cli.Close()
}

func (d *Docker) engineError(what string, err error) error {
	var dial *net.OpError // a hijacked stream (attach) dials on its own
	// An engine shutting down answers a while after its containerd has
	// gone: "grpc: the client connection is closing".
	shuttingDown := strings.Contains(err.Error(), "client connection is closing")
	if client.IsErrConnectionFailed(err) || errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &dial) && dial.Op == "dial") || shuttingDown {
		return fmt.Errorf("%w: %s: %v", runtime.ErrUnavailable, what, err)
	}
	return fmt.Errorf("%s: %w", what, err)
}

// limitedLog logs the supervisor's stderr lines up to a byte budget.
type limitedLog struct {
	logger hclog.Logger
	left   int
}

func (l *limitedLog) Write(p []byte) (int, error) {
	if l.left > 0 {
		msg := strings.TrimSpace(string(p[:min(len(p), l.left)]))
		l.left -= len(p)
		l.logger.Warn("supervisor says", "message", msg)
	}
	return len(p), nil
}

// hibernation is the name of the checkpoint a hibernated session's
// container keeps.
const hibernation = "sandboxd-hibernation"

// CanCheckpoint implements runtime.Checkpointer: an engine with
// experimental features checkpoints gVisor's sandboxes (runsc checkpoint
// keeps the sandbox's whole kernel state). runc's would need CRIU, which
// fails `criu check` on this kernel.
func (d *Docker) CanCheckpoint(ctx context.Context, ociRuntime string) bool {
	if ociRuntime == "" {
		ociRuntime = d.opts.Runtime
	}
	if ociRuntime != "runsc" {
		return false
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	p, err := d.cli.Ping(ctx)
	return err == nil && p.Experimental
}

// Checkpoint implements runtime.Checkpointer.
func (d *Docker) Checkpoint(ctx context.Context, id string) error {
	d.detach(id) // the stream ends with the sandbox
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	if err := d.cli.CheckpointCreate(ctx, id, checkpoint.CreateOptions{CheckpointID: hibernation, Exit: true}); err != nil {
		return d.engineError("checkpointing container "+runtime.ShortID(id), err)
	}
	d.markCheckpoint(ctx, id)
	// The engine answers before it has seen the container stop; a restore
	// before then would find it running.
	stopped, failed := d.cli.ContainerWait(ctx, id, container.WaitConditionNotRunning)
	select {
	case <-stopped:
		return nil
	case err := <-failed:
		return d.engineError("waiting for checkpointed container "+runtime.ShortID(id)+" to stop", err)
	}
}

// markCheckpoint puts a nonce in container id's checkpoint, where the
// engine is on this host and its directory is ours to write. The engine
// hands a checkpoint to containerd by its content's digest and (Docker
// 20.10) fails a restore whose digest the store holds already, as it
// may from the container's last restore: then the session came back
// without its memory, now and then. With a nonce every checkpoint is its
// own. An engine elsewhere keeps that risk.
func (d *Docker) markCheckpoint(ctx context.Context, id string) {
	info, err := d.cli.Info(ctx)
	if err != nil || info.DockerRootDir == "" {
		return
	}
	nonce := make([]byte, 16)
	_, _ = rand.Read(nonce)
	dir := filepath.Join(info.DockerRootDir, "containers", id, "checkpoints", hibernation)
	if _, err := os.Stat(dir); err == nil {
		if err := os.WriteFile(filepath.Join(dir, "sandboxd-nonce"), nonce, 0o600); err != nil {
			d.logger.Warn("marking a checkpoint failed: its restore may find its content in the engine's store already", "container_id", runtime.ShortID(id), "error", err)
		}
	}
}

// Restore implements runtime.Checkpointer.
func (d *Docker) Restore(ctx context.Context, id string) error {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	err := d.cli.ContainerStart(ctx, id, container.StartOptions{CheckpointID: hibernation})
	if err != nil {
		return d.engineError("restoring container "+runtime.ShortID(id)+" from its checkpoint", err)
	}
	if err := d.cli.CheckpointDelete(ctx, id, checkpoint.DeleteOptions{CheckpointID: hibernation}); err != nil {
		d.logger.Warn("deleting a restored checkpoint failed", "container_id", runtime.ShortID(id), "error", err)
	}
	return nil
}

var _ runtime.Checkpointer = (*Docker)(nil)

var _ runtime.Freezer = (*Docker)(nil)

// Freeze implements runtime.Freezer: through the container's freezer
// cgroup under runc (freezer.go), `docker pause` otherwise.
func (d *Docker) Freeze(ctx context.Context, id string) error {
	unlock := d.lockPause(id)
	defer unlock()
	// Not cut short by the caller: the engine may pause it all the same.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), callTimeout)
	defer cancel()
	cg, err := d.freezers.of(ctx, id, d.processOf)
	if errors.Is(err, errEngineFreezes) {
		d.logger.Warn("freezing through the engine, as this process cannot use containers' cgroups", "error", err)
	} else if err != nil {
		return err
	}
	d.setFrozen(id, cg) // before: a Remove after the pause must thaw
	if !cg.viaEngine() {
		if err := cg.freeze(ctx); err != nil {
			// v1 thaws back a freeze it could not finish; v2 leaves it.
			if terr := cg.set(cgroups.Thawed); terr == nil {
				d.unfreeze(id)
			}
			return fmt.Errorf("freezing container %s: %w", runtime.ShortID(id), err)
		}
		return nil
	}
	if err := d.cli.ContainerPause(ctx, id); err != nil {
		// The engine may have paused it and failed after: make sure it
		// runs, as the caller will take it to.
		if uerr := d.cli.ContainerUnpause(ctx, id); uerr == nil || strings.Contains(uerr.Error(), "is not paused") {
			d.unfreeze(id)
		}
		return d.engineError("freezing container "+runtime.ShortID(id), err)
	}
	return nil
}

// Thaw implements runtime.Freezer: the way it was frozen. Thawing a
// container that is not frozen is not an error: a crash may have come
// between the two records.
func (d *Docker) Thaw(ctx context.Context, id string) error {
	unlock := d.lockPause(id)
	defer unlock()
	if cg, ok := d.frozenAs(id); ok && !cg.viaEngine() {
		if err := cg.set(cgroups.Thawed); err != nil {
			if !d.exists(ctx, id) {
				return fmt.Errorf("%w: %s", runtime.ErrGone, runtime.ShortID(id))
			}
			return fmt.Errorf("thawing container %s: %w", runtime.ShortID(id), err)
		}
		d.unfreeze(id)
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	err := d.cli.ContainerUnpause(ctx, id)
	switch {
	case err != nil && strings.Contains(err.Error(), "is not paused"):
		// Not the engine's pause: frozen in its cgroup with no record of
		// it (a restart that did not find it), or running.
		if cg, _ := d.freezers.of(ctx, id, d.processOf); !cg.viaEngine() && cg.frozen() {
			if err := cg.set(cgroups.Thawed); err != nil {
				return fmt.Errorf("thawing container %s: %w", runtime.ShortID(id), err)
			}
		}
	case cerrdefs.IsNotFound(err):
		return fmt.Errorf("%w: %s", runtime.ErrGone, runtime.ShortID(id))
	case err != nil:
		return d.engineError("thawing container "+runtime.ShortID(id), err)
	}
	d.unfreeze(id)
	return nil
}

// exists says whether the engine still has container id.
func (d *Docker) exists(ctx context.Context, id string) bool {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	_, err := d.cli.ContainerInspect(ctx, id)
	return !cerrdefs.IsNotFound(err)
}

// lockPause orders the pauses, thaws and removal of container id.
func (d *Docker) lockPause(id string) (unlock func()) {
	d.mu.Lock()
	l := d.pauseLocks[id]
	if l == nil {
		l = &sync.Mutex{}
		d.pauseLocks[id] = l
	}
	d.mu.Unlock()
	l.Lock()
	return l.Unlock
}

// setFrozen records container id frozen, and how.
func (d *Docker) setFrozen(id string, cg freezerCgroup) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.frozen == nil {
		d.frozen = map[string]freezerCgroup{}
	}
	d.frozen[id] = cg
}

// frozenAs is how container id was frozen, if it is.
func (d *Docker) frozenAs(id string) (freezerCgroup, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	cg, ok := d.frozen[id]
	return cg, ok
}

// unfreeze forgets container id frozen, and says how it was, if it was.
func (d *Docker) unfreeze(id string) (freezerCgroup, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	cg, ok := d.frozen[id]
	delete(d.frozen, id)
	return cg, ok
}
