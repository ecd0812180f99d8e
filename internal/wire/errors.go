package wire

import (
	"errors"
	"syscall"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/images"
	"github.com/sandboxd/sandboxd/internal/errdefs"
	"github.com/sandboxd/sandboxd/internal/pool"
	"github.com/sandboxd/sandboxd/internal/state"
	"github.com/sandboxd/sandboxd/plugins"
	"github.com/sandboxd/sandboxd/plugins/language"
	"github.com/sandboxd/sandboxd/runtime"
)

// ErrorOf is the API error for an error from inside the daemon, in one
// place: a classified error's kind (see errdefs) is its code; the sentinel
// errors of plugins, pools and the runtime keep their meaning on the wire;
// anything else is internal. A policy denial carries its findings. An
// *api.Error (the edges' own) is itself.
func ErrorOf(err error) *api.Error {
	var ae *api.Error
	if errors.As(err, &ae) {
		return ae
	}
	if k := errdefs.KindOf(err); k != errdefs.Internal {
		e := &api.Error{Code: codeOf[k], Message: err.Error()}
		var denial interface{ Findings() []state.Finding }
		if errors.As(err, &denial) {
			e.Findings = All(denial.Findings(), Finding)
		}
		return e
	}
	switch {
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

// codeOf is each kind's code on the wire.
var codeOf = map[errdefs.Kind]string{
	errdefs.Internal:           api.CodeInternal,
	errdefs.Invalid:            api.CodeInvalidRequest,
	errdefs.UnknownLanguage:    api.CodeUnknownLanguage,
	errdefs.NotFound:           api.CodeNotFound,
	errdefs.Conflict:           api.CodeConflict,
	errdefs.PolicyDenied:       api.CodePolicyDenied,
	errdefs.ApprovalDenied:     api.CodeApprovalDenied,
	errdefs.ApprovalTimeout:    api.CodeApprovalTimeout,
	errdefs.PoolExhausted:      api.CodePoolExhausted,
	errdefs.TooManySessions:    api.CodeTooManySessions,
	errdefs.TooManyConnections: api.CodeTooManyConnections,
	errdefs.RuntimeUnavailable: api.CodeRuntimeUnavailable,
	errdefs.ImageMissing:       api.CodeImageMissing,
	errdefs.ImageBuilding:      api.CodeImageBuilding,
	errdefs.PluginUnavailable:  api.CodePluginUnavailable,
	errdefs.ShuttingDown:       api.CodeShuttingDown,
	errdefs.SessionLost:        api.CodeSessionLost,
	errdefs.TooLarge:           api.CodeTooLarge,
	errdefs.NoSpace:            api.CodeNoSpace,
	errdefs.Unauthorized:       api.CodeUnauthorized,
	errdefs.Forbidden:          api.CodeForbidden,
	errdefs.SnapshotDamaged:    api.CodeSnapshotDamaged,
}
