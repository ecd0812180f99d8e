package request

import (
	"errors"
	"syscall"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/images"
	"github.com/sandboxd/sandboxd/internal/pool"
	"github.com/sandboxd/sandboxd/plugins"
	"github.com/sandboxd/sandboxd/plugins/language"
	"github.com/sandboxd/sandboxd/runtime"
)

// ErrorOf is the API error for an error from inside the daemon: the
// sentinel errors of plugins, pools and the runtime keep their meaning on
// the wire; anything else is internal.
func ErrorOf(err error) *api.Error {
	var ae *api.Error
	switch {
	case errors.As(err, &ae):
		return ae
	case errors.Is(err, language.ErrInvalidProgram):
		return api.Errorf(api.CodeInvalidRequest, "%v", err)
	case errors.Is(err, plugins.ErrUnavailable):
		return api.Errorf(api.CodePluginUnavailable, "%v", err)
	case errors.Is(err, pool.ErrExhausted):
		return api.Errorf(api.CodePoolExhausted, "%v", err)
	case errors.Is(err, pool.ErrClosed):
		return api.Errorf(api.CodeShuttingDown, "sandboxd is shutting down; retry against the next instance")
	case errors.Is(err, images.ErrBuilding):
		return api.Errorf(api.CodeImageBuilding, "%v", err)
	case errors.Is(err, runtime.ErrImageMissing):
		return api.Errorf(api.CodeImageMissing, "%v", err)
	case errors.Is(err, runtime.ErrUnavailable):
		return api.Errorf(api.CodeRuntimeUnavailable, "%v", err)
	case errors.Is(err, syscall.ENOSPC), errors.Is(err, syscall.EDQUOT):
		return api.Errorf(api.CodeNoSpace, "%v: the disk of state_dir is full; free space there (runs go on meanwhile)", err)
	}
	return api.Errorf(api.CodeInternal, "%v", err)
}
