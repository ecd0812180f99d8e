package docker

import (
	"context"
	"errors"
	"os"
	"testing"
)

// A process whose cgroup is not named for the container (sandboxd in
// another cgroup namespace than the engine's, or a pid from another
// host) leaves freezing to the engine, for every container after it too.
func TestFreezerFallsBackToTheEngine(t *testing.T) {
	var f freezers
	self := func(context.Context, string) (string, int, error) { return "runc", os.Getpid(), nil }
	cg, err := f.of(context.Background(), "0123456789abcdef", self)
	if !errors.Is(err, errEngineFreezes) || !cg.viaEngine() {
		t.Fatalf("a cgroup not the container's: %+v %v", cg, err)
	}
	if f.broken == nil {
		t.Fatal("no reason kept after a failure")
	}
	asked := false
	cg, err = f.of(context.Background(), "fedcba9876543210", func(context.Context, string) (string, int, error) { asked = true; return "runc", 0, nil })
	if err != nil || !cg.viaEngine() || asked {
		t.Fatalf("after a failure: %+v %v (asked the engine %v)", cg, err, asked)
	}
	if _, frozen, found := f.frozenInCgroup("fedcba9876543210"); frozen || found {
		t.Fatal("frozen by a pattern never found")
	}
}
