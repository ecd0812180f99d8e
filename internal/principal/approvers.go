package principal

import (
	"fmt"
	"os/user"
	"slices"
	"strconv"
	"strings"

	"github.com/sandboxd/sandboxd/internal/state"
)

// Approvers is who may decide an approval (the approvals block): users,
// uids and groups, matched against the uid behind the decision (the
// socket peer, or the one that made the dashboard's login link), and
// the dashboard as a principal of its own. Nobody decides what they
// asked for themselves unless AllowSelf.
type Approvers struct {
	entries   []approver
	AllowSelf bool
}

type approver struct {
	text      string
	dashboard bool
	uid       *uint32
	group     string
	user      string
}

// ApproverSyntax is what an entry may be, for error messages.
const ApproverSyntax = `a user ("alice"), a uid ("uid:1000"), a group ("group:ops"), or "dashboard" (a browser signed in to the dashboard)`

// ParseApprovers reads the approvers list; empty lets every principal
// on the socket or the dashboard decide (but for AllowSelf).
func ParseApprovers(entries []string, allowSelf bool) (Approvers, error) {
	a := Approvers{AllowSelf: allowSelf}
	for _, e := range entries {
		p := approver{text: e}
		switch kind, name, _ := strings.Cut(e, ":"); {
		case e == "dashboard":
			p.dashboard = true
		case kind == "uid" && name != "":
			n, err := strconv.ParseUint(name, 10, 32)
			if err != nil {
				return a, fmt.Errorf("%q: %s is not a uid", e, name)
			}
			uid := uint32(n)
			p.uid = &uid
		case kind == "group" && name != "":
			p.group = name
		case !strings.Contains(e, ":") && e != "":
			p.user = e
		default:
			return a, fmt.Errorf("%q is not %s", e, ApproverSyntax)
		}
		a.entries = append(a.entries, p)
	}
	return a, nil
}

// MayDecide says why decider may not decide what requester asked for,
// or "" when it may.
func (a Approvers) MayDecide(decider state.Requester, requester *state.Requester) string {
	if decider.Via == ViaE2B {
		return "the E2B listener never decides approvals"
	}
	if !a.AllowSelf && requester != nil && decider.UID != nil && requester.UID != nil && *decider.UID == *requester.UID {
		return fmt.Sprintf("%s asked for it, and nobody approves their own request (approvals.allow_self is false): another approver decides it", Describe(requester))
	}
	listed := slices.ContainsFunc(a.entries, func(p approver) bool { return p.matches(decider) })
	if !a.AllowSelf && (requester == nil || requester.UID == nil || decider.UID == nil) &&
		!slices.ContainsFunc(a.entries, func(p approver) bool { return !p.dashboard && p.matches(decider) }) {
		// Without a uid on both sides, sandboxd cannot tell that the two
		// are not one (an agent with an E2B key, the socket and a
		// dashboard login of its own): only an approver the block names
		// by user, uid or group decides.
		return fmt.Sprintf("sandboxd cannot tell %s from %s (no uid on one side), so only an approver named by user, uid or group in the approvals block decides it", Describe(&decider), Describe(requester))
	}
	if len(a.entries) == 0 || listed {
		return ""
	}
	list := make([]string, len(a.entries))
	for i, p := range a.entries {
		list[i] = p.text
	}
	return fmt.Sprintf("%s is not among the approvers (%s in sandboxd.hcl's approvals block)", Describe(&decider), strings.Join(list, ", "))
}

func (p approver) matches(d state.Requester) bool {
	switch {
	case p.dashboard:
		return d.Via == ViaDashboard
	case d.UID == nil:
		return false
	case p.uid != nil:
		return *p.uid == *d.UID
	case p.user != "":
		u, err := user.Lookup(p.user)
		return err == nil && u.Uid == strconv.FormatUint(uint64(*d.UID), 10)
	}
	return inGroup(*d.UID, d.GID, p.group)
}

// inGroup says whether the uid (whose process runs as gid) is in group:
// its primary group, the process's, or a supplementary one.
func inGroup(uid uint32, gid *uint32, group string) bool {
	g, err := user.LookupGroup(group)
	if err != nil {
		return false
	}
	if gid != nil && g.Gid == strconv.FormatUint(uint64(*gid), 10) {
		return true
	}
	u, err := user.LookupId(strconv.FormatUint(uint64(uid), 10))
	if err != nil {
		return false
	}
	ids, err := u.GroupIds()
	return err == nil && (slices.Contains(ids, g.Gid) || u.Gid == g.Gid)
}
