package sandbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/sandboxd/sandboxd/internal/egress"
	"github.com/sandboxd/sandboxd/internal/state"
	"github.com/sandboxd/sandboxd/plugins/language"
	"github.com/sandboxd/sandboxd/plugins/program"
	"github.com/sandboxd/sandboxd/runtime"
	"github.com/sandboxd/sandboxd/runtime/supervisor"
)

// OutputFunc receives a program's output as it is produced: stream is
// supervisor.Stdout or supervisor.Stderr.
type OutputFunc func(stream string, data []byte)

// Job is what runs in a sandbox: its files are written, then its steps
// run in order, sharing one deadline; the first to fail ends it.
type Job struct {
	Files []program.File // the program, entry point first; written before the first step
	Steps []language.Step
	Env   []string // KEY=VALUE, the whole environment
	Stdin []byte   // the last step's
	// In, when set, streams the last step's stdin instead (a process
	// whose client writes to it as it runs).
	In  io.Reader
	Dir string // working directory; "" is the workspace
	// Planned: the steps are the language plugin's plan, which its warm
	// runtimes may stand in for.
	Planned bool
	// Cell, when set, is code for a context: the one step's argv starts
	// its kernel when it is not running.
	Cell *Cell
	// Outputs is the directory (relative to the workspace) whose new and
	// changed files the result lists; "" for none.
	Outputs string
	// TTY, when set, puts the last step on a pseudo-terminal wired to it
	// (its keys are the step's stdin).
	TTY *TTY
}

// The supervisor's terms that a job's caller meets: a terminal's input
// and size, a context's cell and what it showed, and the output streams.
type (
	TermInput = supervisor.TermInput
	WinSize   = supervisor.WinSize
	Cell      = supervisor.Cell
	Display   = supervisor.Display
)

// OutputsDir is the workspace's directory for results, made in every
// sandbox: a session's command lists what changed in it (Job.Outputs).
const OutputsDir = supervisor.OutputsDir

// The streams OutputFunc is told of.
const (
	Stdout = supervisor.Stdout
	Stderr = supervisor.Stderr
)

// TTY is the far end of a pseudo-terminal: a person's keys and screen.
type TTY struct {
	Size supervisor.WinSize
	In   <-chan supervisor.TermInput // the keys and new window sizes, in order
	Out  func(data []byte)           // the screen's bytes, as they come
}

// Run runs j in the lease's container under limits, collecting its
// output, usage and connections into a result. out, if not nil, also
// receives the output as it comes. An error means the sandbox failed
// (its supervisor died), not the program. A run's leftovers end with
// its last step; a session's background processes live on.
func (ls *Lease) Run(ctx context.Context, j Job, limits runtime.Limits, out OutputFunc) (*Result, error) {
	k := ls.k
	x := execution{Job: j, killOnExit: ls.oneShot}
	if j.Planned && k.Warm() {
		x.warm = k.warmStands
		if ls.oneShot {
			x.warm = k.learnScript // the pool warms for the script names one-shot runs use
		}
	}
	warmUsed := false
	x.warmed = func(warm bool, missed string) { warmUsed = true; ls.p.warmRun(k, warm, missed) }
	res, last, err := execute(ctx, ls.sb, ls.gate, x, limits, out)
	if err != nil {
		ls.lost = "the sandbox failed: " + err.Error()
		return nil, err
	}
	switch {
	case last.Survivors > 0:
		ls.lost = fmt.Sprintf("%d processes survived the kill at the deadline", last.Survivors)
	case last.Gone != "":
		ls.lost = last.Gone
	case warmUsed && !ls.oneShot:
		// The next program's runtimes, started while the client reads
		// this result.
		go ls.p.rewarm(k, ls.sb, ls.env)
	}
	ls.oom = res.OOMKilled
	return res, nil
}

// execution is a job as it runs: the lease decides whether what it
// leaves behind is ended, and which warm runtimes stand in for it.
type execution struct {
	Job
	// killOnExit ends whatever a step leaves running (one-shot runs);
	// sessions keep background processes.
	killOnExit bool
	// warm says which steps a warm runtime of the sandbox's stands in for
	// (nil: none); warmed hears how each such step started.
	warm   func(argv []string) bool
	warmed func(warm bool, missed string)
}

// execute runs a job in sb under limits, collecting its output, usage
// and connections through gate (nil: sb has no egress) into a result.
// out, if not nil, also receives the output as it comes. An error means
// the sandbox failed (its supervisor died), not the program.
func execute(ctx context.Context, sb *runtime.Sandbox, gate *egress.Gate, j execution, limits runtime.Limits, out OutputFunc) (*Result, *supervisor.ExecResult, error) {
	col := &collector{out: out}
	onTTY := false
	if j.TTY != nil {
		// Steps before the terminal's write to a pipe: their lines get
		// the carriage returns a terminal's own output would.
		col.out = func(_ string, data []byte) {
			if !onTTY {
				data = bytes.ReplaceAll(data, []byte("\n"), []byte("\r\n"))
			}
			j.TTY.Out(data)
		}
	}
	if gate != nil {
		gate.Begin()
	}
	files := make([]supervisor.File, len(j.Files))
	for i, f := range j.Files {
		files[i] = supervisor.File{Path: f.Path, Data: f.Content, Mode: f.Mode}
	}
	deadline := time.Now().Add(limits.Timeout)
	var res supervisor.ExecResult
	stage := ""
	warmSteps, coldSteps := 0, 0
	for i, step := range j.Steps {
		last := i == len(j.Steps)-1
		stage = step.Name
		remaining := time.Until(deadline)
		if remaining <= 0 {
			res = supervisor.ExecResult{TimedOut: true, ExitCode: 124}
			break
		}
		req := supervisor.ExecRequest{
			Argv: step.Argv, Dir: j.Dir, Env: j.Env, TimeoutMS: max(remaining.Milliseconds(), 1),
			// A one-shot run's leftovers end with its last step; a compile
			// step's would end the warm runtime waiting for the program.
			OutputLimit: limits.OutputLimit, KillOnExit: j.killOnExit && last, Cell: j.Cell, Outputs: j.Outputs,
			// A session's command ends alone: its servers live on.
			KeepOthers: !j.killOnExit,
			// Every step is out of the supervisor's reach: a one-shot
			// run's in a namespace of its own, a session's in the one its
			// processes share.
			Isolate: supervisor.IsolateSession,
		}
		if j.killOnExit {
			req.Isolate = supervisor.IsolateProgram
		}
		if i == 0 {
			req.Files = files
		}
		req.Warm = j.warm != nil && j.warm(step.Argv) && !(last && j.TTY != nil)
		var in io.Reader
		switch {
		case last && len(j.Stdin) > 0:
			in = bytes.NewReader(j.Stdin)
		case last:
			in = j.In
		}
		mark := col.bufs[1].Len()
		var err error
		if onTTY = last && j.TTY != nil; onTTY {
			req.TTY = &j.TTY.Size
			res, err = sb.Terminal(ctx, req, j.TTY.In, col.write)
		} else {
			res, err = sb.Exec(ctx, req, in, col.write)
		}
		if err != nil {
			switch {
			case errors.Is(err, supervisor.ErrPastDeadline):
				// The program so loaded its sandbox that the kill at the
				// deadline went unreported; it ends with the container.
				res = supervisor.ExecResult{ExitCode: 137, TimedOut: true, Gone: "the sandbox did not answer the kill at the deadline"}
			case sb.OOMKilled != nil && sb.OOMKilled(ctx):
				// The kernel ended the whole sandbox for memory: that is
				// what the program did, and its result.
				res = supervisor.ExecResult{ExitCode: 137, OOMKilled: true, Gone: "the kernel ended the sandbox for memory"}
			default:
				return nil, nil, err
			}
		}
		col.add(res)
		col.outputs(res)
		if res.Warm || res.WarmMissed != "" {
			warmSteps++
			coldSteps += boolInt(!res.Warm)
			if j.warmed != nil {
				j.warmed(res.Warm, res.WarmMissed)
			}
		}
		if len(j.Steps) > 1 {
			col.steps = append(col.steps, Step{Name: step.Name, ExitCode: res.ExitCode, TimedOut: res.TimedOut,
				Duration: time.Duration(res.DurationUS) * time.Microsecond, Stderr: bytes.Clone(col.bufs[1].Bytes()[mark:])})
		}
		if res.ExitCode != 0 || res.TimedOut || res.StartError != "" {
			break
		}
	}
	r := col.result(res)
	r.Warm = warmSteps > 0 && coldSteps == 0
	if stage != "run" {
		r.Stage = stage
	}
	if gate != nil {
		var conns []egress.Connection
		conns, r.EgressUnrecorded = gate.Records()
		for _, c := range conns {
			r.Egress = append(r.Egress, state.Egress{Host: c.Host, Port: c.Port, Allowed: c.Allowed, BytesSent: c.BytesSent, BytesReceived: c.BytesReceived, Error: c.Error})
		}
		r.Usage.NetworkSentBytes, r.Usage.NetworkReceivedBytes = gate.ExecutionTransferred()
	}
	if j.Cell != nil {
		r.Context = &ContextState{Name: j.Cell.Name}
		if c := res.Context; c != nil {
			r.Context.Started, r.Context.Lost = c.Started, c.Lost
		}
		r.Display = res.Display
	}
	return r, &res, nil
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// collector gathers a job's output and usage across its steps.
type collector struct {
	out        OutputFunc
	bufs       [2]bytes.Buffer
	totals     [2]int64
	truncated  bool
	steps      []Step
	durationUS int64
	userUS     int64
	sysUS      int64
	maxRSS     int64
	// workspaceBytes is the workspace in use after the last step.
	workspaceBytes int64

	files        []OutputFile
	filesOmitted int
}

func (c *collector) write(stream string, data []byte) {
	i := 0
	if stream == supervisor.Stderr {
		i = 1
	}
	c.bufs[i].Write(data)
	if c.out != nil {
		c.out(stream, data)
	}
}

// dataTypes are the types of files programs commonly leave as results:
// the same on every host, whatever its /etc/mime.types holds.
var dataTypes = map[string]string{
	".csv": "text/csv; charset=utf-8", ".tsv": "text/tab-separated-values; charset=utf-8",
	".md": "text/markdown; charset=utf-8", ".txt": "text/plain; charset=utf-8", ".log": "text/plain; charset=utf-8",
	".ipynb": "application/x-ipynb+json", ".parquet": "application/vnd.apache.parquet", ".npy": "application/octet-stream",
}

// outputMIME is a result file's type, by its extension.
func outputMIME(p string) string {
	ext := strings.ToLower(path.Ext(p))
	if t, ok := dataTypes[ext]; ok {
		return t
	}
	if t := mime.TypeByExtension(ext); t != "" {
		return t
	}
	return "application/octet-stream"
}

// outputs gathers the files each step made or changed.
func (c *collector) outputs(r supervisor.ExecResult) {
	for _, o := range r.Outputs {
		if !slices.ContainsFunc(c.files, func(f OutputFile) bool { return f.Path == o.Path }) {
			c.files = append(c.files, OutputFile{Path: o.Path, Size: o.Size, MIME: outputMIME(o.Path)})
		}
	}
	c.filesOmitted += r.OutputsOmitted
}

func (c *collector) add(r supervisor.ExecResult) {
	c.totals[0] += r.StdoutBytes
	c.totals[1] += r.StderrBytes
	c.truncated = c.truncated || r.Truncated
	c.durationUS += r.DurationUS
	c.userUS += r.UserUS
	c.sysUS += r.SysUS
	c.maxRSS = max(c.maxRSS, r.MaxRSSBytes)
	c.workspaceBytes = r.WorkspaceBytes
}

// result is what was collected, ending as last did.
func (c *collector) result(last supervisor.ExecResult) *Result {
	return &Result{
		ExitCode: last.ExitCode, Signal: last.Signal, TimedOut: last.TimedOut, OOMKilled: last.OOMKilled,
		Truncated: c.truncated, StdoutBytes: c.totals[0], StderrBytes: c.totals[1],
		Stdout: c.bufs[0].Bytes(), Stderr: c.bufs[1].Bytes(),
		Duration: time.Duration(c.durationUS) * time.Microsecond, Error: last.StartError, Steps: c.steps,
		Usage: state.Usage{CPUUserMS: float64(c.userUS) / 1000, CPUSysMS: float64(c.sysUS) / 1000, MaxRSSBytes: c.maxRSS,
			WorkspaceBytes: c.workspaceBytes},
		Outputs: c.files, OutputsOmitted: c.filesOmitted,
	}
}
