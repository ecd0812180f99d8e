package server

import (
	"net/http"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/internal/principal"
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

// decide approves or denies, as the principal behind the request (the
// socket's peer, or the dashboard's login), if the approvers let it.
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
	by, ok := principal.From(r.Context())
	if !ok {
		writeError(w, api.Errorf(api.CodeForbidden, "sandboxd cannot tell who is deciding: decide over the socket or through the dashboard"))
		return
	}
	a, aerr := h.d.Approvals.Decide(r.PathValue("id"), approve, by, req.Reason)
	if aerr != nil {
		writeError(w, aerr)
		return
	}
	writeJSON(w, http.StatusOK, wire.Approval(a))
}
