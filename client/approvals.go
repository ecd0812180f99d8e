package client

import (
	"context"
	"net/http"
	"net/url"

	"github.com/sandboxd/sandboxd/api"
)

// Approvals lists the requests policies in mode "ask" held for a person,
// newest first; state ("pending", ...) picks one state, "" all.
func (c *Client) Approvals(ctx context.Context, state string) ([]api.Approval, error) {
	var l api.ApprovalList
	return l.Approvals, c.call(ctx, http.MethodGet, "/v1/approvals?state="+url.QueryEscape(state), nil, &l)
}

// Approval returns one approval, with the program it would run.
func (c *Client) Approval(ctx context.Context, id string) (*api.Approval, error) {
	var a api.Approval
	return &a, c.call(ctx, http.MethodGet, "/v1/approvals/"+url.PathEscape(id), nil, &a)
}

// Approve lets a pending request run; sandboxd records who (this
// process's user) and why.
func (c *Client) Approve(ctx context.Context, id, reason string) (*api.Approval, error) {
	return c.decide(ctx, id, "approve", reason)
}

// Deny refuses a pending request: its client gets approval_denied.
func (c *Client) Deny(ctx context.Context, id, reason string) (*api.Approval, error) {
	return c.decide(ctx, id, "deny", reason)
}

func (c *Client) decide(ctx context.Context, id, verb, reason string) (*api.Approval, error) {
	var a api.Approval
	return &a, c.call(ctx, http.MethodPost, "/v1/approvals/"+url.PathEscape(id)+"/"+verb, api.ApprovalDecision{Reason: reason}, &a)
}
