package wire

import (
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/internal/errdefs"
	"github.com/sandboxd/sandboxd/runtime"
)

var ceil = runtime.Limits{Timeout: 10 * time.Second, Memory: 512 << 20, CPUs: 1, Pids: 128, Disk: 256 << 20, OutputLimit: 1 << 20}

// The deadline is decided once: the top-level timeout wins over
// limits.timeout, and what is decided is what the policies see and what
// runs.
func TestLimitsDecideTheDeadlineOnce(t *testing.T) {
	for _, c := range []struct {
		top, inLimits api.Duration
		want          time.Duration
	}{
		{0, 0, 10 * time.Second},
		{api.Duration(2 * time.Second), 0, 2 * time.Second},
		{0, api.Duration(3 * time.Second), 3 * time.Second},
		{api.Duration(2 * time.Second), api.Duration(3 * time.Second), 2 * time.Second},
	} {
		eff, aerr := Limits(ceil, c.top, &api.Limits{Timeout: c.inLimits})
		if aerr != nil || eff.Timeout != c.want {
			t.Errorf("timeout %v, limits.timeout %v: got %v, %v; want %v", c.top, c.inLimits, eff.Timeout, aerr, c.want)
		}
	}
}

func TestLimitsKeepWhatWasAskedAndWithinRefusesOverCeilings(t *testing.T) {
	eff, aerr := Limits(ceil, 0, &api.Limits{Memory: 128 << 20, CPUs: 0.001, Pids: 16})
	if aerr != nil || eff.Memory != 128<<20 || eff.CPUs != 0.01 || eff.Pids != 16 || eff.OutputLimit != ceil.OutputLimit || eff.Disk != ceil.Disk {
		t.Fatalf("lowered: %+v %v", eff, aerr)
	}
	if aerr := Within(eff, ceil, "python"); aerr != nil {
		t.Fatalf("within: %v", aerr)
	}
	if !eff.Resized(ceil) || ceil.Resized(ceil) {
		t.Error("Resized")
	}
	// Over a ceiling: kept for the policies to judge, refused by Within.
	eff, aerr = Limits(ceil, api.Duration(time.Minute), nil)
	if aerr != nil || eff.Timeout != time.Minute {
		t.Fatalf("over: %+v %v", eff, aerr)
	}
	if aerr := Within(eff, ceil, "python"); aerr == nil || !errdefs.Is(aerr, errdefs.Invalid) || !strings.Contains(aerr.Error(), "above the ceiling 10s for python") {
		t.Fatalf("within over: %v", aerr)
	}
	for _, asked := range []api.Limits{{Memory: -1}, {Memory: 1 << 20}, {Pids: 2}, {CPUs: -1}, {Timeout: api.Duration(time.Microsecond)}} {
		if _, aerr := Limits(ceil, 0, &asked); aerr == nil || !errdefs.Is(aerr, errdefs.Invalid) {
			t.Errorf("%+v: want invalid_request, got %v", asked, aerr)
		}
	}
	for _, over := range []api.Limits{{Memory: 1 << 30}, {Pids: 1000}, {CPUs: 2}, {OutputLimit: 1 << 30}} {
		eff, aerr := Limits(ceil, 0, &over)
		if aerr != nil || Within(eff, ceil, "x") == nil {
			t.Errorf("%+v: want refused by Within, got %v", over, aerr)
		}
	}
}

func TestDecodeProgram(t *testing.T) {
	p, aerr := DecodeProgram("", []api.File{{Path: "./a/../b.py", Content: "//8=", Encoding: api.EncodingBase64, Mode: 0o755}}, "b.py", Input{Stdin: "in"})
	if aerr != nil || p.Files[0].Path != "b.py" || string(p.Files[0].Content) != "\xff\xff" || p.Files[0].Mode != 0o755 || string(p.Stdin) != "in" || p.Entry != "b.py" {
		t.Fatalf("%+v %v", p, aerr)
	}
	if files := (Program{Code: "x", Files: p.Files}).WithCode("main.py"); len(files) != 2 || files[0].Path != "main.py" || string(files[0].Content) != "x" {
		t.Fatalf("with code: %+v", files)
	}
	for name, c := range map[string]struct {
		code  string
		files []api.File
		in    Input
	}{
		"nothing":        {},
		"absolute path":  {files: []api.File{{Path: "/etc/passwd"}}},
		"leaves":         {files: []api.File{{Path: "a/../../x"}}},
		"bad base64":     {files: []api.File{{Path: "a", Content: "!!", Encoding: api.EncodingBase64}}},
		"mode":           {files: []api.File{{Path: "a", Mode: 0o4755}}},
		"env name":       {code: "x", in: Input{Env: map[string]string{"A=B": "1"}}},
		"NUL arg":        {code: "x", in: Input{Args: []string{"a\x00"}}},
		"stdin encoding": {code: "x", in: Input{Stdin: "x", StdinEncoding: "rot13"}},
	} {
		if _, aerr := DecodeProgram(c.code, c.files, "", c.in); aerr == nil || !errdefs.Is(aerr, errdefs.Invalid) {
			t.Errorf("%s: want invalid_request, got %v", name, aerr)
		}
	}
}

// Sizes that would not fit the way to the sandbox are refused as too_large
// before anything is sent.
func TestSizesAreRefusedAsTooLarge(t *testing.T) {
	big := strings.Repeat("x", maxProgramBytes/2+1)
	for name, call := range map[string]func() error{
		"code": func() error {
			_, aerr := DecodeProgram(big+big, nil, "", Input{})
			return aerr
		},
		"code and files": func() error {
			_, aerr := DecodeProgram(big, []api.File{{Path: "a", Content: big}}, "", Input{})
			return aerr
		},
		"one env entry": func() error {
			return CheckEnv(map[string]string{"K": strings.Repeat("v", maxEnvValue)})
		},
		"env in all": func() error {
			env := map[string]string{}
			for i := 0; i < 10; i++ {
				env[fmt.Sprint("K", i)] = strings.Repeat("v", maxEnvValue-10)
			}
			return CheckEnv(env)
		},
		"args": func() error {
			_, aerr := DecodeInput(Input{Args: []string{strings.Repeat("a", maxArgBytes+1)}})
			return aerr
		},
	} {
		if aerr := call(); aerr == nil || !errdefs.Is(aerr, errdefs.TooLarge) {
			t.Errorf("%s: %v, want too_large", name, aerr)
		}
	}
	if _, aerr := DecodeProgram(big, nil, "", Input{Env: map[string]string{"K": "v"}}); aerr != nil {
		t.Fatalf("a program within the bounds: %v", aerr)
	}
}

// A full disk is no_space, saying where and what to do.
func TestFullDiskIsNoSpace(t *testing.T) {
	aerr := ErrorOf(fmt.Errorf("storing the session: %w", &os.PathError{Op: "write", Path: "/state/sandboxd.db", Err: syscall.ENOSPC}))
	if aerr.Code != api.CodeNoSpace || !strings.Contains(aerr.Message, "state_dir is full") {
		t.Fatalf("%+v", aerr)
	}
}
