package wire

import (
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/internal/errdefs"
	"github.com/sandboxd/sandboxd/internal/request"
)

func TestDecodeProgram(t *testing.T) {
	p, aerr := DecodeProgram("", []api.File{{Path: "./a/../b.py", Content: "//8=", Encoding: api.EncodingBase64, Mode: 0o755}}, "b.py", Input{Stdin: "in"})
	if aerr != nil || p.Files[0].Path != "b.py" || string(p.Files[0].Content) != "\xff\xff" || p.Files[0].Mode != 0o755 || string(p.Stdin) != "in" || p.Entry != "b.py" {
		t.Fatalf("%+v %v", p, aerr)
	}
	if files := (request.Program{Code: "x", Files: p.Files}).WithCode("main.py"); len(files) != 2 || files[0].Path != "main.py" || string(files[0].Content) != "x" {
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
