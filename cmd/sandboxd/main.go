// Command sandboxd is the sandbox daemon: it reads sandboxd.hcl, opens its
// state, serves the v1 API on a Unix socket and runs programs in warm Docker
// containers. SIGTERM or SIGINT drain it: running executions finish or hit
// their deadlines, its containers are removed, the socket file goes.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/sandboxd/sandboxd/internal/config"
	"github.com/sandboxd/sandboxd/internal/daemon"
	"github.com/sandboxd/sandboxd/internal/dashboard"
	"github.com/sandboxd/sandboxd/internal/e2b"
	"github.com/sandboxd/sandboxd/internal/principal"
	"github.com/sandboxd/sandboxd/internal/redact"
	"github.com/sandboxd/sandboxd/internal/server"
	"github.com/sandboxd/sandboxd/internal/state"
	"github.com/sandboxd/sandboxd/runtime"
	"github.com/sandboxd/sandboxd/runtime/docker"
	"github.com/sandboxd/sandboxd/runtime/kubernetes"
)

func main() {
	configPath := flag.String("config", "sandboxd.hcl", "configuration file")
	socket := flag.String("socket", "", "Unix socket to serve on (overrides the file)")
	stateDir := flag.String("state-dir", "", "state directory (overrides the file)")
	logLevel := flag.String("log-level", "info", "trace, debug, info, warn or error")
	logJSON := flag.Bool("log-json", false, "log JSON lines")
	validate := flag.Bool("validate", false, "check the configuration and exit")
	version := flag.Bool("version", false, "print the version and exit")
	seccompProfile := flag.Bool("seccomp-profile", false, "print the sandboxes' seccomp profile (a kubelet's Localhost profile sandboxd.json) and exit")
	flag.Parse()
	if *version {
		fmt.Println("sandboxd", daemon.Version)
		return
	}
	if *seccompProfile {
		profile, err := runtime.SeccompProfile()
		if err != nil {
			fmt.Fprintln(os.Stderr, "sandboxd:", err)
			os.Exit(1)
		}
		fmt.Println(profile)
		return
	}
	cfg, err := config.Load(*configPath)
	if err != nil {
		fmt.Fprintf(os.Stderr, "sandboxd: configuration is invalid:\n%v\n", err)
		os.Exit(2)
	}
	redactor := secretRedactor(cfg)
	log := hclog.New(&hclog.LoggerOptions{
		Name: "sandboxd", Level: hclog.LevelFromString(*logLevel), JSONFormat: *logJSON, Output: redactor.Writer(os.Stderr),
	})
	if *socket != "" {
		cfg.Socket = *socket
	}
	if *stateDir != "" {
		cfg.StateDir = *stateDir
	}
	if *validate {
		fmt.Printf("%s is valid: %d languages\n", cfg.Path, len(cfg.Languages))
		return
	}
	if err := run(cfg, redactor, log); err != nil {
		log.Error("sandboxd stopped", "error", err)
		fmt.Fprintf(os.Stderr, "sandboxd: %v\n", err)
		os.Exit(1)
	}
}

// secretRedactor replaces the secrets' values, in every form, wherever
// sandboxd writes: its log, its records, its answers. The egress proxy
// keeps them out of sandboxes; this catches what a path nobody thought
// of would still carry.
func secretRedactor(cfg *config.Config) *redact.Replacer {
	var secrets []redact.Secret
	for name, s := range cfg.Secrets {
		secrets = append(secrets, redact.Secret{Value: s.Value, Replacement: "[secret " + name + "]"})
	}
	return redact.New(secrets...)
}

func run(cfg *config.Config, redactor *redact.Replacer, log hclog.Logger) error {
	if _, err := os.Stat(cfg.Supervisor); err != nil {
		return fmt.Errorf("sandbox supervisor %s: %w (build it with `make`, or set supervisor in %s)", cfg.Supervisor, err, cfg.Path)
	}
	if err := state.Private(cfg.StateDir); err != nil {
		return err
	}
	store, err := state.Open(cfg.StateDir)
	if err != nil {
		return err
	}
	defer store.Close()
	store.Redact(redactor)
	ln, err := server.Listen(cfg.Socket, cfg.SocketGroup)
	if err != nil {
		return err
	}
	defer ln.Close()

	rt, err := runtimes(cfg, store.Instance(), log)
	if err != nil {
		return err
	}
	defer rt.Close()

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	d, err := daemon.New(ctx, cfg, rt, store, log)
	if err != nil {
		return err
	}
	dash, err := dashboard.New(cfg.StateDir)
	if err != nil {
		return err
	}
	apiHandler := server.New(d, dash, log)
	srv := &http.Server{Handler: redactor.Handler(apiHandler), ReadHeaderTimeout: 10 * time.Second, ConnContext: principal.ConnContext}
	serveErr := make(chan error, 3)
	if cfg.HTTPListen != "" {
		tln, err := net.Listen("tcp", cfg.HTTPListen)
		if err != nil {
			d.Close(context.Background())
			return fmt.Errorf("the dashboard's listener (http.listen in %s): %w", cfg.Path, err)
		}
		dash.Listening(tln.Addr(), cfg.HTTPListen)
		if where, loopback := dashboard.Describe(tln.Addr()); loopback {
			log.Info(where)
		} else {
			log.Warn(where)
		}
		web := &http.Server{Handler: redactor.Handler(dash.Guard(apiHandler, server.PreviewProxy(d, log))), ReadHeaderTimeout: 10 * time.Second}
		go func() { serveErr <- web.Serve(tln) }()
		defer web.Close()
	}
	if cfg.E2B != nil {
		stopE2B, err := serveE2B(cfg, d, redactor, log, serveErr)
		if err != nil {
			d.Close(context.Background())
			return err
		}
		defer stopE2B()
	}
	// The socket last: a client that finds it healthy finds the other
	// listeners up, and their addresses logged.
	go func() { serveErr <- srv.Serve(ln) }()
	log.Info("sandboxd ready", "socket", cfg.Socket, "state_dir", cfg.StateDir, "instance", store.Instance(), "languages", len(cfg.Languages))

	select {
	case <-ctx.Done():
		log.Info("draining: finishing running executions")
	case err := <-serveErr:
		if !errors.Is(err, http.ErrServerClosed) {
			log.Error("serving failed", "error", err)
		}
	}
	stop() // a second signal kills at once
	drainCtx, cancel := context.WithTimeout(context.Background(), cfg.ShutdownTimeout)
	defer cancel()
	// The daemon first (refuses new runs, waits for running ones, removes
	// containers), then the server, whose handlers are done by then.
	d.Close(drainCtx)
	_ = srv.Shutdown(drainCtx)
	log.Info("sandboxd stopped cleanly")
	return nil
}

// serveE2B starts the E2B-compatible listener (the e2b block); stop ends
// it and what its clients started.
func serveE2B(cfg *config.Config, d *daemon.Daemon, redactor *redact.Replacer, log hclog.Logger, serveErr chan<- error) (stop func(), err error) {
	h, err := e2b.New(d, *cfg.E2B, log)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", cfg.E2B.Listen)
	if err != nil {
		h.Close()
		return nil, fmt.Errorf("the E2B listener (e2b.listen in %s): %w", cfg.Path, err)
	}
	msg := "E2B-compatible API on http://" + ln.Addr().String() + " (set E2B_API_URL and E2B_SANDBOX_URL to it)"
	if ip := ln.Addr().(*net.TCPAddr).IP; ip.IsLoopback() {
		log.Info(msg)
	} else {
		log.Warn(msg + ", BEYOND LOOPBACK as e2b.listen says: its API keys are all that guard it")
	}
	srv := &http.Server{Handler: redactor.Handler(h), ReadHeaderTimeout: 10 * time.Second}
	go func() { serveErr <- srv.Serve(ln) }()
	return func() { h.Close(); _ = srv.Close() }, nil
}

// sweepEvery is how often removals that failed (the engine or the API
// server was away) are tried again.
const sweepEvery = 20 * time.Second

// runtimes is the local Docker engine, and beside it the Kubernetes
// cluster when the configuration has one, with their failed removals
// tried again.
func runtimes(cfg *config.Config, instance string, log hclog.Logger) (runtime.Runtime, error) {
	rt, err := engines(cfg, instance, log)
	if err != nil {
		return nil, err
	}
	return runtime.Sweep(rt, sweepEvery, log), nil
}

// engines are the runtimes cfg names. They share one uid allocator: pods
// of a cluster on this host run on its kernel too, where RLIMIT_NPROC
// counts a uid's processes across both.
func engines(cfg *config.Config, instance string, log hclog.Logger) (runtime.Runtime, error) {
	uids := runtime.NewUIDs(cfg.UIDs)
	var tls *docker.TLS
	if t := cfg.Docker.TLS; t != nil {
		tls = &docker.TLS{CAFile: t.CAFile, CertFile: t.CertFile, KeyFile: t.KeyFile}
	} else if strings.HasPrefix(cfg.Docker.Host, "tcp://") {
		log.Warn("the engine is reached over TCP without TLS: whoever reaches its port is root on its host; add a tls block to the docker block", "host", cfg.Docker.Host)
	}
	local, err := docker.New(docker.Options{
		Host: cfg.Docker.Host, TLS: tls, Runtime: cfg.Docker.Runtime, Supervisor: cfg.Supervisor,
		ChannelDir: filepath.Join(cfg.StateDir, "channel"),
		Instance:   instance, Labels: cfg.Docker.Labels, UIDs: uids, Logger: log,
	})
	if err != nil || cfg.Kubernetes == nil {
		return local, err
	}
	k := cfg.Kubernetes
	key, err := state.Key(cfg.StateDir, "kubernetes-channel.key", "the key of pods' channel tokens")
	if err != nil {
		local.Close()
		return nil, err
	}
	cluster, err := kubernetes.New(kubernetes.Options{
		Kubeconfig: k.Kubeconfig, Namespace: k.Namespace, RuntimeClass: k.RuntimeClass, NodeSelector: k.NodeSelector,
		ImageRegistry: k.ImageRegistry, Instance: instance, Labels: cfg.Docker.Labels, UIDs: uids, Logger: log,
		ChannelKey: key,
	})
	if err != nil {
		local.Close()
		return nil, err
	}
	return &runtime.Router{Default: local, Named: map[string]runtime.Runtime{config.KubernetesRuntime: cluster}}, nil
}
