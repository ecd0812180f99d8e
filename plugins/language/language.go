// Package language is the contract between sandboxd and a language plugin.
//
// A language plugin describes how to run a program in one language: which
// files to write into the sandbox, which steps to run (compile, then run),
// with what environment, and in which image by default. It never touches
// Docker and holds no state; the daemon alone owns containers. Plugin authors
// implement Language (or fill in a Template) and call plugins.Serve.
//
// The Go interface is the contract; proto/ mirrors it, and the unexported
// gRPC shims in client.go and server.go translate between the two.
package language

import (
	"context"

	"github.com/sandboxd/sandboxd/internal/errdefs"
	"github.com/sandboxd/sandboxd/plugins/program"
)

// Language is what a language plugin implements.
type Language interface {
	// Info describes the language: its name, the extensions and aliases it
	// answers to, and its default image.
	Info(ctx context.Context) (Info, error)
	// Plan says how to run a program: where its code goes and which steps
	// run it. It must not run anything.
	Plan(ctx context.Context, req PlanRequest) (Plan, error)
}

// Info describes a language.
type Info struct {
	Name           string   // canonical name, e.g. "python"
	DisplayName    string   // e.g. "Python 3"
	Version        string   // plugin's own version
	Extensions     []string // without the dot, e.g. "py"
	Aliases        []string // other names a request may use, e.g. "py", "python3"
	DefaultImage   string   // image used when the operator's config names none
	VersionCommand []string // argv that prints the runtime's version inside the image
	// InstallCommand is the argv that installs extra packages (a language
	// block's packages) as root while a derived image is built, with
	// network; "{packages}" stands for the package names, one argument
	// each. Empty: Debian packages of those names (InstallDebian).
	InstallCommand []string
	// ContextCommand is the argv of a context kernel: a long-lived
	// interpreter that runs code sent to it in one namespace, exec after
	// exec (see ContextProtocol). Empty: the language has no contexts.
	ContextCommand []string
	// Warm are the language's prestarted runtimes, each standing in for
	// a step (a compiler's, the program's); none: every step starts cold.
	Warm []Warm
}

// Warm is a runtime started in a sandbox before the program it will run
// is known, so that a run pays for its program and not for the runtime's
// start. The warm process stands in for a run step whose argv begins with
// Stands; what the program sees must be what a fresh start shows it.
//
// The protocol: the supervisor writes Files (names under
// supervisor.WarmDir), then starts Command in the workspace, as the run
// step would be started, with Env (the run step's environment, as a plan
// of this plugin sets it) plus HookEnv, its own. Its stdin, stdout and
// stderr are the pipes that become the run's. It loads the runtime, writes
// "ready\n" on fd 4 and closes it, and reads fd 3 to its end: NUL-ended
// fields, the run step's argv count, its elements, the environment's count,
// its KEY=VALUE pairs, and the working directory. It then makes itself the
// run step's process: that argv, exactly that environment (HookEnv gone),
// that directory; and runs the program as the runtime would from a fresh
// start. The supervisor hands a run to it only when the run's argv begins
// with Stands and its directory and environment are those it was started
// with; otherwise the run starts as usual.
//
// A runtime that takes its argv when it starts, and cannot change it
// later (php's), is Exact: Command is then the run step's own argv, and it
// stands in only for a run step whose argv is Stands, no argument more.
//
// A runtime that Forks can also be a zygote: started with
// SANDBOXD_WARM_FORK=1 on top of HookEnv, with a Unix socket on fd 3, it
// loads, writes "ready\n" on fd 4 and closes it, makes itself
// non-dumpable and blocks its signals; then, for each byte the supervisor
// sends on fd 3 with five descriptors (stdin, stdout, stderr, fd 3 and fd
// 4 of a warm process), it forks twice, answers "pid N\n" with the
// grandchild's pid, and the grandchild takes those descriptors as its fds
// 0 to 4, makes itself dumpable, unblocks its signals and goes on as a
// warm process started with them would. The supervisor keeps the zygote
// across runs where it can (see the supervisor's zygote.go).
type Warm struct {
	Command []string
	Stands  []string
	Env     map[string]string
	HookEnv map[string]string
	Files   map[string]string // base name -> content
	Exact   bool
	Forks   bool
}

// File is a file of a program (see plugins/program).
type File = program.File

// PlanRequest is the program as the client sent it: either Code (a single
// source text) or Files with an optional Entry naming the file to run.
type PlanRequest struct {
	Code  string
	Files []File
	Entry string
	Args  []string
}

// Step is one command of a plan, run in the workspace. Name is "compile" or
// "run" for the steps sandboxd reports apart.
type Step struct {
	Name string
	Argv []string
}

// Plan is what the sandbox does with a program: the daemon writes the
// request's files, and its Code at CodeFile, then runs Steps in order,
// stopping at the first that fails. A plan names files; it never carries
// their contents back.
type Plan struct {
	// CodeFile is where the request's Code goes, relative to the working
	// directory (e.g. "main.py"); set whenever the request has Code. That
	// file is the program's entry point.
	CodeFile string
	Steps    []Step
	Env      map[string]string
	// Renames are request files written under another name (old path ->
	// new), where the language needs one: a Java file is named after its
	// public class.
	Renames map[string]string
}

// ErrInvalidProgram wraps errors that are the client's fault (no code, no
// entry point, a file name the language cannot use). The daemon reports them
// as invalid_request; any other plugin error is the plugin's fault.
var ErrInvalidProgram = errdefs.New(errdefs.Invalid, "invalid program")
