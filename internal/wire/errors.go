package wire

import (
	"errors"
	"net/http"
	"syscall"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/internal/errdefs"
	"github.com/sandboxd/sandboxd/internal/state"
)

// ErrorOf is the API error for an error from inside the daemon: a
// classified error's kind (see errdefs; the sentinel errors of plugins,
// pools and the runtime are classified too) is its code, a disk that is
// full is no_space, anything else is internal. A policy denial carries
// its findings. An *api.Error (the edges' own) is itself.
func ErrorOf(err error) *api.Error {
	var ae *api.Error
	if errors.As(err, &ae) {
		return ae
	}
	if k := errdefs.KindOf(err); k != errdefs.Internal {
		e := &api.Error{Code: kinds[k].code, Message: err.Error()}
		var denial interface{ Findings() []state.Finding }
		if errors.As(err, &denial) {
			e.Findings = All(denial.Findings(), Finding)
		}
		return e
	}
	if errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) {
		return api.Errorf(api.CodeNoSpace, "%v: the disk of state_dir is full; free space there (runs go on meanwhile)", err)
	}
	return api.Errorf(api.CodeInternal, "%v", err)
}

// Status is the HTTP status an API error is answered with.
func Status(e *api.Error) int {
	if status, ok := statusOf[e.Code]; ok {
		return status
	}
	return http.StatusInternalServerError
}

// kinds is each kind's code on the wire and the HTTP status it is answered
// with: the one table from which the API (ErrorOf, Status), the E2B
// listener's REST and Connect answers, and MCP's derive theirs.
var kinds = map[errdefs.Kind]struct {
	code   string
	status int
}{
	errdefs.Internal:           {api.CodeInternal, http.StatusInternalServerError},
	errdefs.Invalid:            {api.CodeInvalidRequest, http.StatusBadRequest},
	errdefs.UnknownLanguage:    {api.CodeUnknownLanguage, http.StatusBadRequest},
	errdefs.NotFound:           {api.CodeNotFound, http.StatusNotFound},
	errdefs.Conflict:           {api.CodeConflict, http.StatusConflict},
	errdefs.PolicyDenied:       {api.CodePolicyDenied, http.StatusForbidden},
	errdefs.ApprovalDenied:     {api.CodeApprovalDenied, http.StatusForbidden},
	errdefs.ApprovalTimeout:    {api.CodeApprovalTimeout, http.StatusForbidden},
	errdefs.PoolExhausted:      {api.CodePoolExhausted, http.StatusTooManyRequests},
	errdefs.TooManySessions:    {api.CodeTooManySessions, http.StatusTooManyRequests},
	errdefs.TooManyConnections: {api.CodeTooManyConnections, http.StatusTooManyRequests},
	errdefs.RuntimeUnavailable: {api.CodeRuntimeUnavailable, http.StatusServiceUnavailable},
	errdefs.ImageMissing:       {api.CodeImageMissing, http.StatusServiceUnavailable},
	errdefs.ImageBuilding:      {api.CodeImageBuilding, http.StatusServiceUnavailable},
	errdefs.PluginUnavailable:  {api.CodePluginUnavailable, http.StatusServiceUnavailable},
	errdefs.ShuttingDown:       {api.CodeShuttingDown, http.StatusServiceUnavailable},
	errdefs.SessionLost:        {api.CodeSessionLost, http.StatusGone},
	errdefs.TooLarge:           {api.CodeTooLarge, http.StatusRequestEntityTooLarge},
	errdefs.NoSpace:            {api.CodeNoSpace, http.StatusInsufficientStorage},
	errdefs.Unauthorized:       {api.CodeUnauthorized, http.StatusUnauthorized},
	errdefs.Forbidden:          {api.CodeForbidden, http.StatusForbidden},
	errdefs.SnapshotDamaged:    {api.CodeSnapshotDamaged, http.StatusConflict},
}

// statusOf is kinds by code.
var statusOf = func() map[string]int {
	m := map[string]int{}
	for _, k := range kinds {
		m[k.code] = k.status
	}
	return m
}()
