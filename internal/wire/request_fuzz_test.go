package wire

import (
	"testing"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/internal/errdefs"
	"github.com/sandboxd/sandboxd/internal/request"
)

// Whatever a client sends, decoding gives a program or an error with an
// API code; never a panic, never a path outside the workspace.
func FuzzDecodeProgram(f *testing.F) {
	f.Add("print(1)", "data/a.csv", "YSxi", "base64", "main.py", "aGk=", "base64", "K", "v")
	f.Add("", "../../etc/passwd", "x", "", "", "", "", "", "")
	f.Add("", "/abs", "\xff", "base64", "a/../b", "", "utf8", "K=V", "\x00")
	f.Fuzz(func(t *testing.T, code, path, content, enc, entry, stdin, stdinEnc, envK, envV string) {
		p, aerr := DecodeProgram(code, []api.File{{Path: path, Content: content, Encoding: enc}}, entry,
			Input{Stdin: stdin, StdinEncoding: stdinEnc, Env: map[string]string{envK: envV}})
		if aerr != nil {
			if k := errdefs.KindOf(aerr); k != errdefs.Invalid && k != errdefs.TooLarge || aerr.Error() == "" {
				t.Fatalf("an error that is not a bad request's, or without a message: %+v", aerr)
			}
			return
		}
		for _, f := range p.Files {
			if _, err := request.CleanPath(f.Path); err != nil || f.Path != mustClean(t, f.Path) {
				t.Fatalf("a decoded path %q is not clean: %v", f.Path, err)
			}
		}
	})
}

func mustClean(t *testing.T, p string) string {
	c, err := request.CleanPath(p)
	if err != nil {
		t.Fatal(err)
	}
	return c
}
