package wire

import (
	"fmt"
	"net/http"
	"syscall"
	"testing"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/images"
	"github.com/sandboxd/sandboxd/internal/errdefs"
	"github.com/sandboxd/sandboxd/internal/pool"
	"github.com/sandboxd/sandboxd/plugins"
	"github.com/sandboxd/sandboxd/plugins/language"
	"github.com/sandboxd/sandboxd/runtime"
)

// Every kind has its code and status in the one table, and no two kinds
// share a code.
func TestEveryKindHasACodeAndAStatus(t *testing.T) {
	codes := map[string]errdefs.Kind{}
	for k := errdefs.Internal; k <= errdefs.SnapshotDamaged; k++ {
		row, ok := kinds[k]
		if !ok || row.code == "" || row.status < 400 {
			t.Errorf("kind %d: %+v", k, row)
		}
		if other, dup := codes[row.code]; dup {
			t.Errorf("kinds %d and %d share code %s", other, k, row.code)
		}
		codes[row.code] = k
		if got := Status(&api.Error{Code: row.code}); got != row.status {
			t.Errorf("%s: status %d, want %d", row.code, got, row.status)
		}
	}
	if _, ok := kinds[errdefs.SnapshotDamaged+1]; ok {
		t.Error("a kind past the last the test knows: extend the loop")
	}
	if got := Status(&api.Error{Code: "no_such_code"}); got != http.StatusInternalServerError {
		t.Errorf("an unknown code: %d", got)
	}
}

// The sentinels of the runtime, images, pools and plugins are classified
// where they are made, wrapped or not; a full disk is no_space.
func TestErrorsAreClassifiedWhereTheyArise(t *testing.T) {
	for _, c := range []struct {
		err  error
		code string
	}{
		{runtime.ErrImageMissing, api.CodeImageMissing},
		{images.Missing("sandboxd/x:latest is missing: build it"), api.CodeImageMissing},
		{images.Building("python", "sandboxd/python:latest", "Step 1/9", 0), api.CodeImageBuilding},
		{runtime.ErrUnavailable, api.CodeRuntimeUnavailable},
		{pool.ErrExhausted, api.CodePoolExhausted},
		{pool.ErrClosed, api.CodeShuttingDown},
		{plugins.ErrUnavailable, api.CodePluginUnavailable},
		{fmt.Errorf("%w: no code", language.ErrInvalidProgram), api.CodeInvalidRequest},
		{fmt.Errorf("writing: %w", syscall.ENOSPC), api.CodeNoSpace},
		{errdefs.Errorf(errdefs.SessionLost, "lost: %w", runtime.ErrUnavailable), api.CodeSessionLost},
		{fmt.Errorf("anything else"), api.CodeInternal},
	} {
		wrapped := fmt.Errorf("somewhere: %w", c.err)
		if e := ErrorOf(wrapped); e.Code != c.code || e.Message != wrapped.Error() && c.code != api.CodeNoSpace {
			t.Errorf("%v: %+v, want %s", c.err, e, c.code)
		}
	}
}
