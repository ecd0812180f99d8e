package fake

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sandboxd/sandboxd/runtime"
	"github.com/sandboxd/sandboxd/runtime/supervisor"
)

func run(t *testing.T, sb *runtime.Sandbox, script string) (string, supervisor.ExecResult) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var out strings.Builder
	res, err := sb.Exec(ctx, supervisor.ExecRequest{Argv: []string{"sh", "-c", script}, TimeoutMS: 5000, OutputLimit: 1 << 20},
		nil, func(stream string, data []byte) { out.Write(data) })
	if err != nil {
		t.Fatal(err)
	}
	return out.String(), res
}

// The real supervisor, in process: a program runs in the sandbox's
// workspace, a recycle empties what it left and ends what it started, and
// Remove ends the supervisor.
func TestSandboxServesAndIsMadeFresh(t *testing.T) {
	r := New(t.TempDir(), "img")
	defer r.Close()
	ctx := context.Background()
	sb, err := r.Create(ctx, runtime.Spec{Language: "sh", Image: "img"})
	if err != nil {
		t.Fatal(err)
	}
	out, res := run(t, sb, `echo left > left.txt; (sleep 60 &); pwd; exit 3`)
	if res.ExitCode != 3 || !strings.HasSuffix(strings.TrimSpace(out), "/workspace") {
		t.Fatalf("exit %d, output %q", res.ExitCode, out)
	}
	workspace := strings.TrimSpace(out)
	if got, err := sb.File(ctx, supervisor.OpRecycle, supervisor.FileRequest{Path: "."}, nil, nil); err != nil || got.Error != "" {
		t.Fatalf("recycle: %+v %v", got, err)
	}
	if _, err := os.Stat(filepath.Join(workspace, "left.txt")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a file the run left survived the recycle: %v", err)
	}
	if n := endUnder(workspace); n != 0 {
		t.Errorf("%d processes the run left survived the recycle", n)
	}
	if list, _ := r.List(ctx); len(list) != 1 {
		t.Fatalf("listed %v", list)
	}
	if err := r.Remove(ctx, sb.ID); err != nil {
		t.Fatal(err)
	}
	select {
	case <-sb.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("the supervisor outlived its sandbox")
	}
}

// A missing image and a stopped engine fail as the real runtime's do.
func TestFaults(t *testing.T) {
	r := New(t.TempDir())
	defer r.Close()
	ctx := context.Background()
	if _, err := r.Create(ctx, runtime.Spec{Image: "none"}); !errors.Is(err, runtime.ErrImageMissing) {
		t.Errorf("a missing image: %v", err)
	}
	r.AddImage("none")
	r.Stop()
	if _, err := r.Ping(ctx); !errors.Is(err, runtime.ErrUnavailable) {
		t.Errorf("a stopped engine: %v", err)
	}
	r.Start()
	if _, err := r.Create(ctx, runtime.Spec{Image: "none"}); err != nil {
		t.Errorf("the engine back: %v", err)
	}
}
