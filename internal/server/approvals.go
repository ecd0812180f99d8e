package server

import (
	"context"
	"net"
	"net/http"
	"os/user"
	"strconv"

	"golang.org/x/sys/unix"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/internal/wire"
)

// listApprovals lists the approvals, newest first; ?state= picks one
// state (pending, approved, denied, expired).
func (h *handler) listApprovals(w http.ResponseWriter, r *http.Request) {
	st := r.URL.Query().Get("state")
	switch st {
	case "", api.ApprovalPending, api.ApprovalApproved, api.ApprovalDenied, api.ApprovalExpired:
	default:
		writeError(w, api.Errorf(api.CodeInvalidRequest, "state %q: one of pending, approved, denied, expired (or none for all)", st))
		return
	}
	writeJSON(w, http.StatusOK, api.ApprovalList{Approvals: wire.All(h.d.Approvals.List(st), wire.Approval)})
}

func (h *handler) getApproval(w http.ResponseWriter, r *http.Request) {
	a, aerr := h.d.Approvals.Get(r.PathValue("id"))
	if aerr != nil {
		writeError(w, aerr)
		return
	}
	writeJSON(w, http.StatusOK, wire.Approval(a))
}

func (h *handler) approve(w http.ResponseWriter, r *http.Request) { h.decide(w, r, true) }

func (h *handler) deny(w http.ResponseWriter, r *http.Request) { h.decide(w, r, false) }

// decide approves or denies, as the person behind the request.
func (h *handler) decide(w http.ResponseWriter, r *http.Request, approve bool) {
	var req api.ApprovalDecision
	if r.ContentLength != 0 {
		if err := decode(w, r, &req); err != nil {
			writeError(w, err)
			return
		}
	}
	if len(req.Reason) > 1000 {
		writeError(w, api.Errorf(api.CodeInvalidRequest, "reason: at most 1000 bytes"))
		return
	}
	a, aerr := h.d.Approvals.Decide(r.PathValue("id"), approve, who(r), req.Reason)
	if aerr != nil {
		writeError(w, aerr)
		return
	}
	writeJSON(w, http.StatusOK, wire.Approval(a))
}

type peerKey struct{}

// PeerContext is the ConnContext of the socket's server: it notes the uid
// of the process at the other end (SO_PEERCRED), which the kernel vouches
// for, as who decides an approval.
func PeerContext(ctx context.Context, c net.Conn) context.Context {
	uc, ok := c.(*net.UnixConn)
	if !ok {
		return ctx
	}
	raw, err := uc.SyscallConn()
	if err != nil {
		return ctx
	}
	var cred *unix.Ucred
	_ = raw.Control(func(fd uintptr) { cred, err = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED) })
	if err != nil || cred == nil {
		return ctx
	}
	return context.WithValue(ctx, peerKey{}, cred.Uid)
}

// who names the person behind a request: the socket peer's user (and
// uid), or "dashboard" for one through the dashboard's listener, whose
// login link only the host's users can make.
func who(r *http.Request) string {
	uid, ok := r.Context().Value(peerKey{}).(uint32)
	if !ok {
		return "dashboard"
	}
	id := strconv.FormatUint(uint64(uid), 10)
	if u, err := user.LookupId(id); err == nil {
		return u.Username + " (uid " + id + ")"
	}
	return "uid " + id
}
