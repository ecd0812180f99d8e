package principal

import (
	"testing"

	"github.com/sandboxd/sandboxd/internal/state"
)

// From an outside review (each case failed before its fix, and stays as a regression test): "nobody decides their own request" compares uids
// only, and only when both sides have one. A request with no uid behind
// it (an E2B key's, or none recorded at all, as for E2B processes) is
// decided by any principal, its author's own socket uid included; and a
// decider without a uid (a dashboard login made with "-") decides
// anyone's.
func TestReviewSelfCheckNeedsBothUIDs(t *testing.T) {
	agent := uint32(1000)
	self := state.Requester{Via: ViaSocket, UID: &agent, User: "agent"}
	open, _ := ParseApprovers(nil, false)
	dashOnly, _ := ParseApprovers([]string{"dashboard"}, false)
	for _, tc := range []struct {
		name      string
		a         Approvers
		decider   state.Requester
		requester *state.Requester
	}{
		{"e2b key request, its holder's socket uid decides", open, self, &state.Requester{Via: ViaE2B, Key: "3f2a"}},
		{"no requester recorded, anyone decides", open, self, nil},
		{"e2b key request, the holder's own dashboard login decides", dashOnly, state.Requester{Via: ViaDashboard, UID: &agent}, &state.Requester{Via: ViaE2B, Key: "3f2a"}},
		{"a dashboard decider without a uid decides the agent's socket request", dashOnly, state.Requester{Via: ViaDashboard}, &self},
	} {
		if why := tc.a.MayDecide(tc.decider, tc.requester); why == "" {
			t.Errorf("%s: allowed", tc.name)
		}
	}
}
