// Package config reads sandboxd.hcl. It decodes strictly (an unknown
// attribute or block is an error), fills defaults from one place
// (Builtin), validates, and reports every problem with the file, line and
// field, and what is accepted. It owns nothing at run time.
package config

import (
	"fmt"
	"net"
	"os"
	"os/user"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/gohcl"
	"github.com/hashicorp/hcl/v2/hclparse"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/function"

	"github.com/sandboxd/sandboxd/internal/egress"
	"github.com/sandboxd/sandboxd/internal/principal"
	"github.com/sandboxd/sandboxd/internal/units"
	"github.com/sandboxd/sandboxd/runtime"
)

// Config is a validated configuration with every default filled in.
type Config struct {
	Path   string // the file it came from
	Socket string
	// SocketGroup owns the socket (mode 0660), so that its members may
	// use sandboxd; empty leaves it to the daemon's group.
	SocketGroup string
	StateDir    string
	PluginDir   string
	ImagesDir   string // Dockerfiles per image: images/<name>/Dockerfile builds sandboxd/<name>
	// BuildCAFile is the CA bundle image builds trust for HTTPS while
	// they install packages: by default the host's own, so that builds
	// behind a TLS-inspecting proxy reach the registries the host does.
	BuildCAFile string
	// BuildMissingImages has sandboxd build, in the background as it
	// starts, every language image that is missing and that it has a
	// Dockerfile for; each language serves once its image lands.
	BuildMissingImages bool
	Supervisor         string // host path of sandbox-init
	// Network is the egress every language has unless its block says
	// otherwise.
	Network Network
	// EgressCAFile is the CA bundle sandboxes with egress trust, mounted
	// into them: by default the host's own, so that a TLS-inspecting
	// proxy the host trusts is trusted inside too.
	EgressCAFile string
	// UIDs are the host uids sandboxes run as, one of its own each.
	UIDs   runtime.UIDRange
	Docker Docker
	// Kubernetes is the `runtime "kubernetes"` block; nil when there is
	// none. Languages whose runtime is KubernetesRuntime run in its pods.
	Kubernetes *Kubernetes
	Defaults   Limits
	Sessions   Sessions
	Projects   Projects
	Snapshots  Snapshots
	// HTTPListen is the TCP address of the dashboard (and the API behind
	// its token); "" for none.
	HTTPListen string
	Languages  []Language
	Policies   []Policy // in file order: the order of evaluation
	// E2B is the e2b block; nil when there is none (no E2B listener).
	E2B *E2B
	// Secrets are the secret blocks, by name.
	Secrets map[string]Secret
	// ShutdownTimeout bounds a drain: how long running executions may
	// go on after SIGTERM before they are killed with their containers.
	ShutdownTimeout time.Duration
	// ApprovalTimeout is how long a request a policy in mode "ask" holds
	// waits for a person's decision; it is denied at the end of it.
	ApprovalTimeout time.Duration
	// Approvers is who may decide those requests (the approvals block).
	Approvers principal.Approvers
}

// Policy is one policy block.
type Policy struct {
	Name    string
	Plugin  string // a built-in policy, or the binary sandbox-policy-<plugin>; default: the block's name
	Mode    string // enforce, ask, warn or off; empty: the plugin's default
	Timeout time.Duration
	Options map[string]string // handed to the plugin with every request
}

// Sessions bounds sessions and their file transfers.
type Sessions struct {
	TTL         time.Duration // default lifetime
	MaxTTL      time.Duration // the longest a request may ask for
	IdleTimeout time.Duration // default time without use before expiry
	// FreezeAfter is how long a session is unused before it is frozen
	// (0: never), where the runtime can freeze.
	FreezeAfter time.Duration
	// MaxFrozen bounds the frozen sessions; past it, the longest frozen
	// hibernates.
	MaxFrozen int
	// MemoryLow is the host's available memory under which frozen
	// sessions hibernate, the longest frozen first (0: never).
	MemoryLow   int64
	Max         int   // running sessions at once: neither frozen nor hibernated
	MaxTransfer int64 // bytes per upload or download
	// OnIdle is what idle_timeout does to a session: OnIdleHibernate or
	// OnIdleEnd.
	OnIdle string
	// MaxHibernated and MaxHibernatedBytes bound the hibernated sessions
	// and their archives (state_dir/sessions) together.
	MaxHibernated      int
	MaxHibernatedBytes int64
	// KeepMemory checkpoints a hibernating session's sandbox where the
	// runtime can (gVisor), so that its processes come back: slower to
	// pause and resume than its files alone.
	KeepMemory bool
}

// What idle_timeout does to a session.
const (
	OnIdleHibernate = "hibernate" // its workspace goes to disk, its container away
	OnIdleEnd       = "end"       // it ends, with its files
)

// Snapshots bounds the snapshot store (state_dir/snapshots).
type Snapshots struct {
	Max      int   // snapshots at once
	MaxBytes int64 // their archives' bytes together
}

// Projects bounds the project store (state_dir/blobs).
type Projects struct {
	Max      int   // projects at once
	MaxBytes int64 // their files' bytes together
}

// Network is a language's egress through sandboxd's proxy.
type Network struct {
	Allow          []string // entries as egress.ParseRule reads them; empty: no egress
	MaxConnections int      // per sandbox at once
	MaxBytes       int64    // per execution, both directions
	ConnectTimeout time.Duration
}

// Docker is the engine section.
type Docker struct {
	Host    string // empty: DOCKER_HOST, DOCKER_TLS_VERIFY and DOCKER_CERT_PATH decide
	TLS     *DockerTLS
	Runtime string
	Labels  map[string]string
}

// DockerTLS are the files of a TCP engine's TLS: the CA its certificate
// must be signed by, and the client's own certificate and key if the
// engine verifies clients (dockerd --tlsverify).
type DockerTLS struct {
	CAFile, CertFile, KeyFile string
}

// KubernetesRuntime is the runtime name a language gives to run in pods.
const KubernetesRuntime = "kubernetes"

// Kubernetes is the `runtime "kubernetes"` block.
type Kubernetes struct {
	Kubeconfig    string
	Namespace     string
	RuntimeClass  string
	NodeSelector  map[string]string
	ImageRegistry string // where the cluster pulls the language images from
}

// Limits are resource ceilings: a request may lower them, never raise them.
// They are the daemon's one limits type (runtime.Limits).
type Limits = runtime.Limits

// Pool sizes a language's warm pool.
type Pool struct {
	MinIdle      int
	Max          int
	QueueTimeout time.Duration
	// MaxRuns is how many one-shot runs a container serves, each in a
	// sandbox made fresh after the one before, before it is retired; 1:
	// a new container for every run.
	MaxRuns int
}

// Language is one language block.
type Language struct {
	Name   string
	Plugin string
	Image  string // empty: the plugin's default image
	// Packages are baked into an image derived from Image at build time
	// (sandboxes have no network at run time).
	Packages []string
	Pool     Pool
	Limits   Limits
	// Runtime is the OCI runtime its containers run under: docker's
	// runtime unless the block names one ("runsc" for gVisor), or
	// KubernetesRuntime for pods of the `runtime "kubernetes"` block.
	Runtime string
	Network Network
	// Warm starts the plugin's warm runtime (if it has one) in every
	// container ahead of its run; false runs every program cold.
	Warm    bool
	Generic *Generic // set when Plugin is "generic"
	// Instructions tell an AI agent what the language's sandboxes are for
	// and how to use them (the MCP server's prompts and resources); empty:
	// the plugin's shipped ones.
	Instructions string
	// Contexts are the other languages whose contexts its sessions may
	// run beside their own (its image has their interpreters), by name.
	Contexts []string
	// Desktop, when set, gives each session a screen that starts with it
	// (the image's desktop-start), driven through the desktop API.
	Desktop *Desktop
}

// Desktop is a language's screen: its size in pixels.
type Desktop struct {
	Width, Height int
}

// DefaultScreen is a desktop's size when its block names none: E2B
// Desktop's.
var DefaultScreen = Desktop{Width: 1024, Height: 768}

// GenericPlugin is the plugin that runs languages defined in HCL alone.
const GenericPlugin = "generic"

// Generic describes a language in HCL alone, for the generic plugin. The
// command templates take the placeholders of language.Template.
type Generic struct {
	DisplayName    string
	Extensions     []string
	Aliases        []string
	MainFile       string
	Sources        []string
	Compile        []string
	Run            []string
	VersionCommand []string
	InstallCommand []string // installs packages; empty: Debian packages
	Env            map[string]string
}

// Builtin returns the defaults of every setting the file may leave out.
func Builtin() Config {
	return Config{
		Socket:    "/run/sandboxd/sandboxd.sock",
		StateDir:  "/var/lib/sandboxd",
		PluginDir: "bin/plugins",
		ImagesDir: "images",
		UIDs:      runtime.DefaultUIDRange,
		Docker:    Docker{Runtime: "runc"},
		Defaults: Limits{
			Timeout:     30 * time.Second,
			Memory:      512 << 20, // room for 256 MiB of workspace files besides the program
			CPUs:        1,
			Pids:        128,
			Disk:        256 << 20,
			Network:     "none",
			OutputLimit: 1 << 20,
		},
		Sessions: Sessions{
			TTL: 24 * time.Hour, MaxTTL: 7 * 24 * time.Hour, IdleTimeout: 10 * time.Minute, FreezeAfter: 30 * time.Second, MaxFrozen: 1000, MemoryLow: 1 << 30,
			Max: 32, MaxTransfer: 256 << 20,
			OnIdle: OnIdleHibernate, MaxHibernated: 1000, MaxHibernatedBytes: 20 << 30, KeepMemory: true,
		},
		Projects:  Projects{Max: 100, MaxBytes: 10 << 30},
		Snapshots: Snapshots{Max: 100, MaxBytes: 10 << 30},
		Network:   Network{MaxConnections: 16, MaxBytes: 1 << 30, ConnectTimeout: 10 * time.Second},

		ApprovalTimeout: 5 * time.Minute,
		ShutdownTimeout: time.Minute,
	}
}

// hostEtc holds the host's passwd, group, subuid and subgid.
var hostEtc = "/etc"

// hostCABundle is Debian's bundle of the CAs the host trusts.
const hostCABundle = "/etc/ssl/certs/ca-certificates.crt"

func defaultPool() Pool {
	return Pool{MinIdle: 2, Max: 16, QueueTimeout: 5 * time.Second, MaxRuns: 500}
}

// The file's shape, as gohcl decodes it. Every field is optional so that
// Builtin supplies what is missing; Body fields keep ranges for errors.
type fileSchema struct {
	Socket     *string          `hcl:"socket,optional"`
	SocketGrp  *string          `hcl:"socket_group,optional"`
	StateDir   *string          `hcl:"state_dir,optional"`
	PluginDir  *string          `hcl:"plugin_dir,optional"`
	ImagesDir  *string          `hcl:"images_dir,optional"`
	BuildCA    *string          `hcl:"build_ca_file,optional"`
	BuildMiss  *bool            `hcl:"build_missing_images,optional"`
	Supervisor *string          `hcl:"supervisor,optional"`
	UIDs       *string          `hcl:"sandbox_uids,optional"`
	Docker     *dockerSchema    `hcl:"docker,block"`
	Runtimes   []runtimeSchema  `hcl:"runtime,block"`
	Defaults   *limitsSchema    `hcl:"defaults,block"`
	Sessions   *sessionsSchema  `hcl:"sessions,block"`
	Projects   *projectsSchema  `hcl:"projects,block"`
	Snapshots  *snapshotsSchema `hcl:"snapshots,block"`
	Network    *networkSchema   `hcl:"network,block"`
	HTTP       *httpSchema      `hcl:"http,block"`
	E2B        *e2bSchema       `hcl:"e2b,block"`
	Secrets    []secretSchema   `hcl:"secret,block"`
	Languages  []languageSchema `hcl:"language,block"`
	Policies   []policySchema   `hcl:"policy,block"`
	Approval   *string          `hcl:"approval_timeout,optional"`
	Shutdown   *string          `hcl:"shutdown_timeout,optional"`
	Approvals  *approvalsSchema `hcl:"approvals,block"`
	Body       hcl.Body         `hcl:",body"`
}

type approvalsSchema struct {
	Approvers []string `hcl:"approvers,optional"`
	AllowSelf *bool    `hcl:"allow_self,optional"`
	Body      hcl.Body `hcl:",body"`
}

type dockerSchema struct {
	Host    *string           `hcl:"host,optional"`
	TLS     *dockerTLSSchema  `hcl:"tls,block"`
	Runtime *string           `hcl:"runtime,optional"`
	Labels  map[string]string `hcl:"labels,optional"`
	Body    hcl.Body          `hcl:",body"`
}

type dockerTLSSchema struct {
	CAFile   string   `hcl:"ca_file"`
	CertFile *string  `hcl:"cert_file,optional"`
	KeyFile  *string  `hcl:"key_file,optional"`
	Body     hcl.Body `hcl:",body"`
}

type runtimeSchema struct {
	Name          string            `hcl:"name,label"`
	Kubeconfig    *string           `hcl:"kubeconfig,optional"`
	Namespace     *string           `hcl:"namespace,optional"`
	RuntimeClass  *string           `hcl:"runtime_class,optional"`
	NodeSelector  map[string]string `hcl:"node_selector,optional"`
	ImageRegistry *string           `hcl:"image_registry,optional"`
	Body          hcl.Body          `hcl:",body"`
}

type limitsSchema struct {
	Timeout     *string  `hcl:"timeout,optional"`
	Memory      *string  `hcl:"memory,optional"`
	CPUs        *float64 `hcl:"cpus,optional"`
	Pids        *int64   `hcl:"pids,optional"`
	Disk        *string  `hcl:"disk,optional"`
	Network     *string  `hcl:"network,optional"`
	OutputLimit *string  `hcl:"output_limit,optional"`
	Body        hcl.Body `hcl:",body"`
}

type networkSchema struct {
	Allow          []string `hcl:"allow,optional"`
	MaxConnections *int     `hcl:"max_connections,optional"`
	MaxBytes       *string  `hcl:"max_bytes,optional"`
	ConnectTimeout *string  `hcl:"connect_timeout,optional"`
	CAFile         *string  `hcl:"ca_file,optional"` // top level only
	Body           hcl.Body `hcl:",body"`
}

type sessionsSchema struct {
	TTL         *string  `hcl:"ttl,optional"`
	MaxTTL      *string  `hcl:"max_ttl,optional"`
	IdleTimeout *string  `hcl:"idle_timeout,optional"`
	FreezeAfter *string  `hcl:"freeze_after,optional"`
	MaxFrozen   *int     `hcl:"max_frozen,optional"`
	MemoryLow   *string  `hcl:"memory_low,optional"`
	Max         *int     `hcl:"max,optional"`
	MaxTransfer *string  `hcl:"max_transfer,optional"`
	OnIdle      *string  `hcl:"on_idle,optional"`
	MaxHib      *int     `hcl:"max_hibernated,optional"`
	MaxHibBytes *string  `hcl:"max_hibernated_bytes,optional"`
	KeepMemory  *bool    `hcl:"keep_memory,optional"`
	Body        hcl.Body `hcl:",body"`
}

type projectsSchema struct {
	Max      *int     `hcl:"max,optional"`
	MaxBytes *string  `hcl:"max_bytes,optional"`
	Body     hcl.Body `hcl:",body"`
}

type httpSchema struct {
	Listen *string  `hcl:"listen,optional"`
	Body   hcl.Body `hcl:",body"`
}

// snapshotsSchema bounds the snapshot store as projectsSchema does projects.
type snapshotsSchema projectsSchema

type poolSchema struct {
	MinIdle      *int     `hcl:"min_idle,optional"`
	Max          *int     `hcl:"max,optional"`
	QueueTimeout *string  `hcl:"queue_timeout,optional"`
	MaxRuns      *int     `hcl:"max_runs,optional"`
	Body         hcl.Body `hcl:",body"`
}

type policySchema struct {
	Name    string            `hcl:"name,label"`
	Plugin  *string           `hcl:"plugin,optional"`
	Mode    *string           `hcl:"mode,optional"`
	Timeout *string           `hcl:"timeout,optional"`
	Options map[string]string `hcl:"options,optional"`
	Body    hcl.Body          `hcl:",body"`
}

type languageSchema struct {
	Name     string         `hcl:"name,label"`
	Plugin   *string        `hcl:"plugin,optional"`
	Image    *string        `hcl:"image,optional"`
	Packages []string       `hcl:"packages,optional"`
	Runtime  *string        `hcl:"runtime,optional"`
	Warm     *bool          `hcl:"warm,optional"`
	Pool     *poolSchema    `hcl:"pool,block"`
	Limits   *limitsSchema  `hcl:"limits,block"`
	Network  *networkSchema `hcl:"network,block"`
	// Text, or file("instructions/python.md") relative to the file.
	Instructions *string        `hcl:"instructions,optional"`
	Contexts     []string       `hcl:"contexts,optional"`
	Desktop      *desktopSchema `hcl:"desktop,block"`
	// For plugin = "generic" only.
	DisplayName    *string           `hcl:"display_name,optional"`
	Extensions     []string          `hcl:"extensions,optional"`
	Aliases        []string          `hcl:"aliases,optional"`
	MainFile       *string           `hcl:"main_file,optional"`
	Sources        []string          `hcl:"sources,optional"`
	Compile        []string          `hcl:"compile,optional"`
	Run            []string          `hcl:"run,optional"`
	VersionCommand []string          `hcl:"version_command,optional"`
	InstallCommand []string          `hcl:"install_command,optional"`
	Env            map[string]string `hcl:"env,optional"`
	Body           hcl.Body          `hcl:",body"`
}

type desktopSchema struct {
	Screen *string  `hcl:"screen,optional"`
	Body   hcl.Body `hcl:",body"`
}

// Load reads, decodes and validates a configuration file. Relative paths in
// it are taken relative to the file's directory.
func Load(path string) (*Config, error) {
	src, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading config: %w", err)
	}
	return Parse(path, src)
}

// Parse is Load for bytes already read; path names them in errors.
func Parse(path string, src []byte) (*Config, error) {
	parser := hclparse.NewParser()
	file, diags := parser.ParseHCL(src, path)
	if diags.HasErrors() {
		return nil, &Error{diags}
	}
	var fs fileSchema
	funcs := &hcl.EvalContext{Functions: map[string]function.Function{"file": fileFunc(filepath.Dir(path))}}
	if diags := gohcl.DecodeBody(file.Body, funcs, &fs); diags.HasErrors() {
		return nil, &Error{diags}
	}
	v := &validator{}
	cfg := v.build(path, &fs)
	if v.diags.HasErrors() {
		return nil, &Error{v.diags}
	}
	return cfg, nil
}

// maxInstructions bounds a language's instructions.
const maxInstructions = 64 << 10

// fileFunc is HCL's file(PATH): the text of a file, PATH relative to dir
// (the configuration file's).
func fileFunc(dir string) function.Function {
	return function.New(&function.Spec{
		Params: []function.Parameter{{Name: "path", Type: cty.String}},
		Type:   function.StaticReturnType(cty.String),
		Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
			p := args[0].AsString()
			if !filepath.IsAbs(p) {
				p = filepath.Join(dir, p)
			}
			b, err := os.ReadFile(p)
			if err != nil {
				return cty.NilVal, err
			}
			if !utf8.Valid(b) {
				return cty.NilVal, fmt.Errorf("%s is not UTF-8 text", p)
			}
			return cty.StringVal(string(b)), nil
		},
	})
}

// Error is a set of configuration problems, one per line as
// "file:line,col: field: problem; what is accepted".
type Error struct{ Diags hcl.Diagnostics }

func (e *Error) Error() string {
	var lines []string
	for _, d := range e.Diags {
		where := ""
		if d.Subject != nil {
			where = fmt.Sprintf("%s:%d,%d: ", d.Subject.Filename, d.Subject.Start.Line, d.Subject.Start.Column)
		}
		msg := d.Summary
		if d.Detail != "" {
			msg += "; " + d.Detail
		}
		lines = append(lines, where+msg)
	}
	return strings.Join(lines, "\n")
}

type validator struct{ diags hcl.Diagnostics }

// fail records a problem with the attribute name of body.
func (v *validator) fail(body hcl.Body, name, problem, accepted string) {
	rng := body.MissingItemRange()
	if sb, ok := body.(*hclsyntax.Body); ok {
		if a, ok := sb.Attributes[name]; ok {
			rng = a.SrcRange
		} else if len(sb.Blocks) > 0 {
			for _, b := range sb.Blocks {
				if b.Type == name {
					rng = b.DefRange()
					break
				}
			}
		}
	}
	v.diags = append(v.diags, &hcl.Diagnostic{
		Severity: hcl.DiagError,
		Summary:  fmt.Sprintf("%q %s", name, problem),
		Detail:   accepted,
		Subject:  &rng,
	})
}

func (v *validator) build(path string, fs *fileSchema) *Config {
	cfg := Builtin()
	cfg.Path = path
	base := filepath.Dir(path)
	abs := func(p string) string {
		if p == "" || filepath.IsAbs(p) {
			return p
		}
		if a, err := filepath.Abs(filepath.Join(base, p)); err == nil {
			return a
		}
		return p
	}
	setString(&cfg.Socket, fs.Socket)
	setString(&cfg.SocketGroup, fs.SocketGrp)
	if cfg.SocketGroup != "" {
		if _, err := user.LookupGroup(cfg.SocketGroup); err != nil {
			v.fail(fs.Body, "socket_group", fmt.Sprintf("is %q, which is no group on this machine", cfg.SocketGroup),
				"an existing group: create it (groupadd --system "+cfg.SocketGroup+"), or leave socket_group out")
		}
	}
	setString(&cfg.StateDir, fs.StateDir)
	setString(&cfg.PluginDir, fs.PluginDir)
	setString(&cfg.ImagesDir, fs.ImagesDir)
	setString(&cfg.Supervisor, fs.Supervisor)
	if fs.UIDs != nil {
		r, err := runtime.ParseUIDRange(*fs.UIDs)
		if err != nil {
			v.fail(fs.Body, "sandbox_uids", err.Error(), `a range of host uids no user, group or /etc/subuid entry holds, such as "`+runtime.DefaultUIDRange.String()+`"`)
		} else {
			cfg.UIDs = r
		}
	}
	if err := cfg.UIDs.CheckHost(hostEtc); err != nil {
		v.fail(fs.Body, "sandbox_uids", err.Error(), "a range none of them holds: every sandbox must be a uid of its own")
	}
	cfg.Socket, cfg.StateDir, cfg.PluginDir = abs(cfg.Socket), abs(cfg.StateDir), abs(cfg.PluginDir)
	cfg.ImagesDir = abs(cfg.ImagesDir)
	if fs.BuildCA != nil {
		cfg.BuildCAFile = abs(*fs.BuildCA)
		if _, err := os.Stat(cfg.BuildCAFile); cfg.BuildCAFile != "" && err != nil {
			v.fail(fs.Body, "build_ca_file", fmt.Sprintf("cannot be read: %v", err), `a PEM bundle such as "/etc/ssl/certs/ca-certificates.crt", or "" for none`)
		}
	} else if _, err := os.Stat(hostCABundle); err == nil {
		cfg.BuildCAFile = hostCABundle
	}
	if fs.BuildMiss != nil {
		cfg.BuildMissingImages = *fs.BuildMiss
	}
	if fs.Shutdown != nil {
		cfg.ShutdownTimeout = v.duration(fs.Body, "shutdown_timeout", *fs.Shutdown, time.Second, time.Hour)
	}
	if fs.Approval != nil {
		cfg.ApprovalTimeout = v.duration(fs.Body, "approval_timeout", *fs.Approval, time.Second, 24*time.Hour)
	}
	if a := fs.Approvals; a != nil {
		approvers, err := principal.ParseApprovers(a.Approvers, a.AllowSelf != nil && *a.AllowSelf)
		if err != nil {
			v.fail(a.Body, "approvers", err.Error(), "each entry is "+principal.ApproverSyntax)
		}
		cfg.Approvers = approvers
	}
	cfg.Supervisor = abs(cfg.Supervisor)
	if cfg.Supervisor == "" {
		// sandbox-init is built next to sandboxd.
		if exe, err := os.Executable(); err == nil {
			cfg.Supervisor = filepath.Join(filepath.Dir(exe), "sandbox-init")
		}
	}
	if d := fs.Docker; d != nil {
		setString(&cfg.Docker.Host, d.Host)
		setString(&cfg.Docker.Runtime, d.Runtime)
		v.ociRuntime(d.Body, cfg.Docker.Runtime)
		cfg.Docker.Labels = d.Labels
		cfg.Docker.TLS = v.dockerTLS(d, abs)
	}
	if fs.Defaults != nil {
		cfg.Defaults = v.limits(fs.Defaults, cfg.Defaults)
	}
	for _, rs := range fs.Runtimes {
		cfg.Kubernetes = v.kubernetes(rs, cfg.Kubernetes, abs)
	}

	if ns := fs.Network; ns != nil {
		cfg.Network = v.network(ns, cfg.Network)
		if ns.CAFile != nil {
			cfg.EgressCAFile = abs(*ns.CAFile)
			if _, err := os.Stat(cfg.EgressCAFile); cfg.EgressCAFile != "" && err != nil {
				v.fail(ns.Body, "ca_file", fmt.Sprintf("cannot be read: %v", err), `a PEM bundle such as "/etc/ssl/certs/ca-certificates.crt", or "" for the image's own trust store`)
			}
		}
	}
	if fs.Network == nil || fs.Network.CAFile == nil {
		if _, err := os.Stat(hostCABundle); err == nil {
			cfg.EgressCAFile = hostCABundle
		}
	}
	if fs.Sessions != nil {
		cfg.Sessions = v.sessions(fs.Sessions, cfg.Sessions)
	}
	v.store(fs.Projects, &cfg.Projects.Max, &cfg.Projects.MaxBytes, "projects")
	v.store((*projectsSchema)(fs.Snapshots), &cfg.Snapshots.Max, &cfg.Snapshots.MaxBytes, "snapshots")
	if hs := fs.HTTP; hs != nil && hs.Listen != nil {
		cfg.HTTPListen = v.listen(hs.Body, *hs.Listen)
	}

	languages := map[string]bool{}
	for _, ls := range fs.Languages {
		if v.defined(languages, "language", ls.Name, ls.Body) {
			continue
		}
		lang := Language{Name: ls.Name, Plugin: ls.Name, Pool: defaultPool(), Limits: cfg.Defaults, Runtime: cfg.Docker.Runtime, Network: cfg.Network, Warm: true}
		if ns := ls.Network; ns != nil {
			lang.Network = v.network(ns, cfg.Network)
			if ns.CAFile != nil {
				v.fail(ns.Body, "ca_file", "is set in a language block", "the CA file is one for every sandbox: set it in the top-level network block")
			}
		}
		setString(&lang.Plugin, ls.Plugin)
		setString(&lang.Image, ls.Image)
		if ls.Runtime != nil {
			lang.Runtime = *ls.Runtime
			v.ociRuntime(ls.Body, lang.Runtime)
			if lang.Runtime == KubernetesRuntime && cfg.Kubernetes == nil {
				v.fail(ls.Body, "runtime", `is "kubernetes" with no runtime "kubernetes" block`, `add runtime "kubernetes" { kubeconfig = "..." } (examples/kubernetes.hcl), or name a Docker OCI runtime such as "runc"`)
			}
		}
		lang.Packages = v.packages(ls.Body, ls.Packages)
		setString(&lang.Instructions, ls.Instructions)
		if len(lang.Instructions) > maxInstructions {
			v.fail(ls.Body, "instructions", fmt.Sprintf("are %d bytes", len(lang.Instructions)), fmt.Sprintf("at most %d: what an agent reads before every use", maxInstructions))
		}
		lang.Contexts = ls.Contexts
		if ls.Desktop != nil {
			lang.Desktop = v.desktop(ls.Desktop)
		}
		if ls.Warm != nil {
			lang.Warm = *ls.Warm
		}
		if ls.Pool != nil {
			lang.Pool = v.pool(ls.Pool, lang.Pool)
		}
		if ls.Limits != nil {
			lang.Limits = v.limits(ls.Limits, cfg.Defaults)
		}
		lang.Generic = v.generic(&ls, lang.Plugin)
		if lang.Runtime == KubernetesRuntime && len(lang.Network.Allow) > 0 {
			v.fail(ls.Body, "runtime", "is kubernetes for a language with egress", "pods have no network: egress is for the Docker runtime; remove the network allow list of this language")
		}
		cfg.Languages = append(cfg.Languages, lang)
	}
	policies := map[string]bool{}
	for _, ps := range fs.Policies {
		if v.defined(policies, "policy", ps.Name, ps.Body) {
			continue
		}
		cfg.Policies = append(cfg.Policies, v.policy(ps))
	}
	if fs.E2B != nil {
		cfg.E2B = v.e2b(fs.E2B, cfg.Languages)
	}
	cfg.Secrets = v.secrets(fs.Secrets, abs, cfg.EgressCAFile)
	if len(cfg.Languages) == 0 {
		v.diags = append(v.diags, &hcl.Diagnostic{
			Severity: hcl.DiagError, Summary: "no language blocks",
			Detail:  `add at least one, e.g. language "python" { image = "sandboxd/python:latest" }`,
			Subject: ptr(fs.Body.MissingItemRange()),
		})
	}
	return &cfg
}

// desktop reads a language's desktop block: screen = "WIDTHxHEIGHT".
func (v *validator) desktop(ds *desktopSchema) *Desktop {
	d := DefaultScreen
	if ds.Screen != nil {
		w, h, ok := strings.Cut(*ds.Screen, "x")
		width, err1 := strconv.Atoi(w)
		height, err2 := strconv.Atoi(h)
		if !ok || err1 != nil || err2 != nil || width < 320 || height < 200 || width > 7680 || height > 4320 {
			v.fail(ds.Body, "screen", fmt.Sprintf("is %q", *ds.Screen), `WIDTHxHEIGHT in pixels, from 320x200 to 7680x4320, such as "1024x768"`)
		} else {
			d = Desktop{Width: width, Height: height}
		}
	}
	return &d
}

// dockerTLS checks the docker block's host and reads its tls block.
func (v *validator) dockerTLS(d *dockerSchema, abs func(string) string) *DockerTLS {
	host := ""
	setString(&host, d.Host)
	scheme, _, _ := strings.Cut(host, "://")
	if host != "" && scheme != "unix" && scheme != "tcp" {
		v.fail(d.Body, "host", fmt.Sprintf("%q is not an engine address", host), `"unix:///var/run/docker.sock", or "tcp://HOST:2376" with a tls block`)
	}
	if d.TLS == nil {
		return nil
	}
	if scheme != "tcp" {
		v.fail(d.TLS.Body, "tls", fmt.Sprintf("is for an engine over TCP, and host is %q", host), `host = "tcp://HOST:2376", or no tls block for a Unix socket`)
	}
	t := &DockerTLS{CAFile: abs(d.TLS.CAFile)}
	setString(&t.CertFile, d.TLS.CertFile)
	setString(&t.KeyFile, d.TLS.KeyFile)
	t.CertFile, t.KeyFile = abs(t.CertFile), abs(t.KeyFile)
	if (t.CertFile == "") != (t.KeyFile == "") {
		v.fail(d.TLS.Body, "cert_file", "and key_file come together", "both, for an engine that verifies its clients (dockerd --tlsverify), or neither")
	}
	for _, f := range []struct{ name, path string }{{"ca_file", t.CAFile}, {"cert_file", t.CertFile}, {"key_file", t.KeyFile}} {
		if _, err := os.Stat(f.path); f.path != "" && err != nil {
			v.fail(d.TLS.Body, f.name, fmt.Sprintf("cannot be read: %v", err), "a PEM file, such as those in DOCKER_CERT_PATH (ca.pem, cert.pem, key.pem)")
		}
	}
	if t.CAFile == "" {
		v.fail(d.TLS.Body, "ca_file", "is empty", "the PEM file of the CA that signed the engine's certificate (ca.pem)")
	}
	return t
}

// ociRuntimeName is what the engine accepts as a runtime's name.
var ociRuntimeName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)

func (v *validator) ociRuntime(body hcl.Body, name string) {
	if !ociRuntimeName.MatchString(name) {
		v.fail(body, "runtime", fmt.Sprintf("%q is not a runtime name", name), `an OCI runtime the engine has registered: "runc", or "runsc" for gVisor`)
	}
}

// defined tells whether a block of this kind and name came before (an
// error), and notes it in seen.
// kubernetes reads a runtime block; only "kubernetes" is one.
func (v *validator) kubernetes(rs runtimeSchema, seen *Kubernetes, abs func(string) string) *Kubernetes {
	if rs.Name != KubernetesRuntime {
		v.diags = append(v.diags, &hcl.Diagnostic{
			Severity: hcl.DiagError, Summary: fmt.Sprintf("runtime %q is not one sandboxd has", rs.Name),
			Detail: `the runtime blocks are runtime "kubernetes" { ... }; Docker's settings are in the docker block`, Subject: ptr(rs.Body.MissingItemRange()),
		})
		return seen
	}
	if seen != nil {
		v.defined(map[string]bool{rs.Name: true}, "runtime", rs.Name, rs.Body)
		return seen
	}
	k := &Kubernetes{Namespace: "sandboxd", NodeSelector: rs.NodeSelector}
	setString(&k.Kubeconfig, rs.Kubeconfig)
	setString(&k.Namespace, rs.Namespace)
	setString(&k.RuntimeClass, rs.RuntimeClass)
	setString(&k.ImageRegistry, rs.ImageRegistry)
	k.Kubeconfig = abs(k.Kubeconfig)
	if k.Kubeconfig == "" {
		v.fail(rs.Body, "kubeconfig", "is missing", `the path of a kubeconfig for the cluster, such as the one make cluster prints`)
	} else if _, err := os.Stat(k.Kubeconfig); err != nil {
		v.fail(rs.Body, "kubeconfig", fmt.Sprintf("cannot be read: %v", err), "the path of a kubeconfig for the cluster (make cluster prints one)")
	}
	if !dnsLabel.MatchString(k.Namespace) {
		v.fail(rs.Body, "namespace", fmt.Sprintf("%q is not a namespace name", k.Namespace), `lower-case letters, digits and "-", such as "sandboxd"`)
	}
	if k.RuntimeClass != "" && !dnsSubdomain.MatchString(k.RuntimeClass) {
		v.fail(rs.Body, "runtime_class", fmt.Sprintf("%q is not a RuntimeClass name", k.RuntimeClass), `a RuntimeClass the cluster has, such as "gvisor", or "" for its default`)
	}
	k.ImageRegistry = strings.TrimSuffix(k.ImageRegistry, "/")
	return k
}

var (
	dnsLabel     = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$`)
	dnsSubdomain = regexp.MustCompile(`^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$`)
)

func (v *validator) defined(seen map[string]bool, kind, name string, body hcl.Body) bool {
	if seen[name] {
		v.diags = append(v.diags, &hcl.Diagnostic{
			Severity: hcl.DiagError, Summary: fmt.Sprintf("%s %q is defined twice", kind, name),
			Detail: fmt.Sprintf("each %s block needs a name of its own", kind), Subject: ptr(body.MissingItemRange()),
		})
		return true
	}
	seen[name] = true
	return false
}

func (v *validator) sessions(ss *sessionsSchema, s Sessions) Sessions {
	if ss.MaxTTL != nil {
		s.MaxTTL = v.duration(ss.Body, "max_ttl", *ss.MaxTTL, time.Second, 30*24*time.Hour)
	}
	if ss.TTL != nil {
		s.TTL = v.duration(ss.Body, "ttl", *ss.TTL, time.Second, s.MaxTTL)
	}
	if ss.IdleTimeout != nil {
		s.IdleTimeout = v.duration(ss.Body, "idle_timeout", *ss.IdleTimeout, time.Second, s.MaxTTL)
	}
	if ss.FreezeAfter != nil {
		s.FreezeAfter = v.duration(ss.Body, "freeze_after", *ss.FreezeAfter, 0, s.MaxTTL)
	}
	if ss.MaxFrozen != nil {
		s.MaxFrozen = *ss.MaxFrozen
		if s.MaxFrozen < 0 || s.MaxFrozen > 100000 {
			v.fail(ss.Body, "max_frozen", fmt.Sprintf("is %d", s.MaxFrozen), "a number of frozen sessions from 0 (none are frozen) to 100000")
		}
	}
	if ss.MemoryLow != nil {
		s.MemoryLow = v.size(ss.Body, "memory_low", *ss.MemoryLow, 0)
	}
	if ss.Max != nil {
		s.Max = *ss.Max
		if s.Max < 0 || s.Max > 4096 {
			v.fail(ss.Body, "max", fmt.Sprintf("is %d", s.Max), "a number of sessions from 0 (no sessions) to 4096")
		}
	}
	if ss.MaxTransfer != nil {
		s.MaxTransfer = v.size(ss.Body, "max_transfer", *ss.MaxTransfer, 1<<10)
	}
	if ss.OnIdle != nil {
		s.OnIdle = *ss.OnIdle
		if s.OnIdle != OnIdleHibernate && s.OnIdle != OnIdleEnd {
			v.fail(ss.Body, "on_idle", fmt.Sprintf("is %q", s.OnIdle), `"hibernate" (the workspace sleeps on disk) or "end" (the session ends with its files)`)
		}
	}
	if ss.MaxHib != nil {
		s.MaxHibernated = *ss.MaxHib
		if s.MaxHibernated < 0 || s.MaxHibernated > 100000 {
			v.fail(ss.Body, "max_hibernated", fmt.Sprintf("is %d", s.MaxHibernated), "a number of hibernated sessions from 0 (none: idle sessions end) to 100000")
		}
	}
	if ss.MaxHibBytes != nil {
		s.MaxHibernatedBytes = v.size(ss.Body, "max_hibernated_bytes", *ss.MaxHibBytes, 1<<20)
	}
	if ss.KeepMemory != nil {
		s.KeepMemory = *ss.KeepMemory
	}
	if s.TTL > s.MaxTTL {
		v.fail(ss.Body, "ttl", fmt.Sprintf("(%s) is above max_ttl (%s)", s.TTL, s.MaxTTL), "ttl must not exceed max_ttl")
	}
	return s
}

// generic checks the attributes of a language defined in HCL alone; they
// belong to the generic plugin and are errors with any other.
func (v *validator) generic(ls *languageSchema, plugin string) *Generic {
	set := map[string]bool{
		"display_name": ls.DisplayName != nil, "extensions": ls.Extensions != nil, "aliases": ls.Aliases != nil,
		"main_file": ls.MainFile != nil, "sources": ls.Sources != nil, "compile": ls.Compile != nil,
		"run": ls.Run != nil, "version_command": ls.VersionCommand != nil, "install_command": ls.InstallCommand != nil,
		"env": ls.Env != nil,
	}
	if plugin != GenericPlugin {
		for _, name := range []string{"display_name", "extensions", "aliases", "main_file", "sources", "compile", "run", "version_command", "install_command", "env"} {
			if set[name] {
				v.fail(ls.Body, name, "is set for plugin "+strconv.Quote(plugin), `it describes a language for plugin = "generic" only`)
			}
		}
		return nil
	}
	g := &Generic{Extensions: ls.Extensions, Aliases: ls.Aliases, Sources: ls.Sources, Compile: ls.Compile,
		Run: ls.Run, VersionCommand: ls.VersionCommand, InstallCommand: ls.InstallCommand, Env: ls.Env}
	setString(&g.DisplayName, ls.DisplayName)
	setString(&g.MainFile, ls.MainFile)
	if g.MainFile == "" || strings.ContainsAny(g.MainFile, "/\\") {
		v.fail(ls.Body, "main_file", "is missing or not a plain file name", `the file a request's code is written to, e.g. "main.lua"`)
	}
	if len(g.Run) == 0 {
		v.fail(ls.Body, "run", "is missing", `the command that runs the program, e.g. ["lua5.4", "{entry}"]`)
	}
	if ls.Image == nil {
		v.fail(ls.Body, "image", "is missing", "a language defined in HCL names its image")
	}
	return g
}

// packageName is what a package list may hold: names with versions or
// scopes (numpy==1.26, @types/node, libgmp-dev), nothing a shell reads.
var packageName = regexp.MustCompile(`^[A-Za-z0-9@][A-Za-z0-9._+@/:=<>~^!-]{0,213}$`)

func (v *validator) packages(body hcl.Body, list []string) []string {
	for _, p := range list {
		if !packageName.MatchString(p) {
			v.fail(body, "packages", fmt.Sprintf("holds %q", p), `package names such as "scipy", "lodash@4" or "numpy==1.26": letters, digits and . _ + @ / : = < > ~ ^ ! -`)
		}
	}
	return list
}

func (v *validator) policy(ps policySchema) Policy {
	p := Policy{Name: ps.Name, Plugin: ps.Name, Timeout: 2 * time.Second, Options: ps.Options}
	setString(&p.Plugin, ps.Plugin)
	setString(&p.Mode, ps.Mode)
	switch p.Mode {
	case "", "enforce", "warn", "ask", "off":
	default:
		v.fail(ps.Body, "mode", fmt.Sprintf("is %q", p.Mode), `"enforce" (a deny blocks the request), "ask" (a deny waits for a person's approval), "warn" (findings only) or "off"`)
	}
	if ps.Timeout != nil {
		p.Timeout = v.duration(ps.Body, "timeout", *ps.Timeout, 10*time.Millisecond, time.Minute)
	}
	return p
}

// listen checks a TCP address to listen on: an IP address (or localhost)
// and a port, so that where the dashboard is reachable is plain.
func (v *validator) listen(body hcl.Body, addr string) string {
	const accepted = `"127.0.0.1:7070" (loopback: this machine only), or another address of this machine's and a port`
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		v.fail(body, "listen", fmt.Sprintf("is %q: %v", addr, err), accepted)
		return ""
	}
	if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		v.fail(body, "listen", fmt.Sprintf("has port %q", port), accepted)
		return ""
	}
	if host != "localhost" && host != "" && net.ParseIP(host) == nil {
		v.fail(body, "listen", fmt.Sprintf("names the host %q", host), accepted+": an IP address, not a name")
		return ""
	}
	return addr
}

// store reads the bounds of a store of files (projects, snapshots).
func (v *validator) store(ss *projectsSchema, max *int, maxBytes *int64, what string) {
	if ss == nil {
		return
	}
	if ss.Max != nil {
		if *max = *ss.Max; *max < 0 || *max > 100000 {
			v.fail(ss.Body, "max", fmt.Sprintf("is %d", *max), "a number of "+what+" from 0 (none) to 100000")
		}
	}
	if ss.MaxBytes != nil {
		*maxBytes = v.size(ss.Body, "max_bytes", *ss.MaxBytes, 1<<10)
	}
}

// network reads a network block over n: a language's allow replaces the
// default's, it does not add to it.
func (v *validator) network(ns *networkSchema, n Network) Network {
	if ns.Allow != nil {
		n.Allow = ns.Allow
		for _, e := range ns.Allow {
			if _, err := egress.ParseRule(e); err != nil {
				v.fail(ns.Body, "allow", err.Error(), egress.RuleSyntax)
			}
		}
	}
	if ns.MaxConnections != nil {
		if n.MaxConnections = *ns.MaxConnections; n.MaxConnections < 1 || n.MaxConnections > 4096 {
			v.fail(ns.Body, "max_connections", fmt.Sprintf("is %d", n.MaxConnections), "a number of connections from 1 to 4096")
		}
	}
	if ns.MaxBytes != nil {
		n.MaxBytes = v.size(ns.Body, "max_bytes", *ns.MaxBytes, 1<<10)
	}
	if ns.ConnectTimeout != nil {
		n.ConnectTimeout = v.duration(ns.Body, "connect_timeout", *ns.ConnectTimeout, 10*time.Millisecond, 5*time.Minute)
	}
	return n
}

func (v *validator) pool(ps *poolSchema, p Pool) Pool {
	if ps.MinIdle != nil {
		p.MinIdle = *ps.MinIdle
		if p.MinIdle < 0 || p.MinIdle > 256 {
			v.fail(ps.Body, "min_idle", fmt.Sprintf("is %d", p.MinIdle), "a number of warm containers from 0 to 256")
		}
	}
	if ps.Max != nil {
		p.Max = *ps.Max
		if p.Max < 1 || p.Max > 1024 {
			v.fail(ps.Body, "max", fmt.Sprintf("is %d", p.Max), "a number of containers from 1 to 1024")
		}
	}
	if p.MinIdle > p.Max {
		v.fail(ps.Body, "min_idle", fmt.Sprintf("(%d) is above max (%d)", p.MinIdle, p.Max), "min_idle must not exceed max")
	}
	if ps.QueueTimeout != nil {
		p.QueueTimeout = v.duration(ps.Body, "queue_timeout", *ps.QueueTimeout, 0, 10*time.Minute)
	}
	if ps.MaxRuns != nil {
		p.MaxRuns = *ps.MaxRuns
		if p.MaxRuns < 1 || p.MaxRuns > 100000 {
			v.fail(ps.Body, "max_runs", fmt.Sprintf("is %d", p.MaxRuns), "a number of runs from 1 (a new container for every run) to 100000")
		}
	}
	return p
}

func (v *validator) limits(ls *limitsSchema, l Limits) Limits {
	if ls.Timeout != nil {
		l.Timeout = v.duration(ls.Body, "timeout", *ls.Timeout, time.Millisecond, 24*time.Hour)
	}
	if ls.Memory != nil {
		l.Memory = v.size(ls.Body, "memory", *ls.Memory, 16<<20)
	}
	if ls.CPUs != nil {
		l.CPUs = *ls.CPUs
		if l.CPUs < 0.01 || l.CPUs > 1024 {
			v.fail(ls.Body, "cpus", fmt.Sprintf("is %g", l.CPUs), "a number of cores such as 0.5 or 2")
		}
	}
	if ls.Pids != nil {
		l.Pids = *ls.Pids
		if l.Pids < 8 || l.Pids > 1<<20 {
			v.fail(ls.Body, "pids", fmt.Sprintf("is %d", l.Pids), "a process count of at least 8")
		}
	}
	if ls.Disk != nil {
		l.Disk = v.size(ls.Body, "disk", *ls.Disk, 1<<20)
	}
	if ls.OutputLimit != nil {
		l.OutputLimit = v.size(ls.Body, "output_limit", *ls.OutputLimit, 1)
	}
	if ls.Network != nil {
		l.Network = *ls.Network
		if l.Network != "none" {
			v.fail(ls.Body, "network", fmt.Sprintf("is %q", l.Network), `only "none" is supported: sandboxes have no network`)
		}
	}
	return l
}

func (v *validator) duration(body hcl.Body, name, s string, lo, hi time.Duration) time.Duration {
	d, err := time.ParseDuration(s)
	if err != nil || d < lo || d > hi {
		v.fail(body, name, fmt.Sprintf("is %q", s), fmt.Sprintf("a duration such as \"30s\" or \"2m\", from %s to %s", lo, hi))
	}
	return d
}

func (v *validator) size(body hcl.Body, name, s string, lo int64) int64 {
	n, err := units.ParseByteSize(s)
	if err != nil || n < lo {
		v.fail(body, name, fmt.Sprintf("is %q", s), fmt.Sprintf("a size such as \"256MiB\" or \"1g\", at least %s", units.ByteSize(lo)))
	}
	return n
}

func setString(dst *string, src *string) {
	if src != nil {
		*dst = *src
	}
}

func ptr[T any](v T) *T { return &v }
