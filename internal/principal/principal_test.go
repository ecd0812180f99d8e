package principal

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sandboxd/sandboxd/internal/state"
)

func socketUser(uid, gid uint32) state.Requester {
	return state.Requester{Via: ViaSocket, UID: &uid, GID: &gid}
}

// Who may decide: the listed users, uids and groups (by the uid behind
// the decision, socket or dashboard alike), the dashboard when listed;
// never the requester itself unless allowed; never the E2B listener.
func TestMayDecide(t *testing.T) {
	if _, err := ParseApprovers([]string{"uid:x"}, false); err == nil {
		t.Error("uid:x parsed")
	}
	if _, err := ParseApprovers([]string{"weird:thing"}, false); err == nil || !strings.Contains(err.Error(), "group:ops") {
		t.Errorf("weird:thing: %v", err)
	}
	a, err := ParseApprovers([]string{"root", "uid:1001", "group:daemon", "dashboard"}, false)
	if err != nil {
		t.Fatal(err)
	}
	asker := socketUser(1000, 1000)
	inBrowserOf := func(uid uint32) state.Requester { return state.Requester{Via: ViaDashboard, UID: &uid} }
	for _, tc := range []struct {
		name string
		by   state.Requester
		want string // "" allowed
	}{
		{"root by name", socketUser(0, 0), ""},
		{"a listed uid", socketUser(1001, 5000), ""},
		{"the daemon group's process", socketUser(4242, 1), ""}, // gid 1 is daemon on Debian
		{"the dashboard", inBrowserOf(4242), ""},
		{"the asker itself", asker, "nobody approves their own request"},
		{"the asker's own dashboard login", inBrowserOf(1000), "nobody approves their own request"},
		{"someone else", socketUser(4242, 4242), "is not among the approvers (root, uid:1001, group:daemon, dashboard"},
		{"the E2B listener", state.Requester{Via: ViaE2B, Key: "k"}, "never decides"},
	} {
		got := a.MayDecide(tc.by, &asker)
		if tc.want == "" && got != "" || tc.want != "" && !strings.Contains(got, tc.want) {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
	if got := (Approvers{AllowSelf: true}).MayDecide(asker, &asker); got != "" {
		t.Errorf("allow_self: %q", got)
	}
	// Without a uid on one side, only an approver named by uid, user or
	// group decides: not the dashboard, not anyone by default.
	e2bKey := state.Requester{Via: ViaE2B, Key: "k1"}
	for _, tc := range []struct {
		a    Approvers
		by   state.Requester
		req  *state.Requester
		want string
	}{
		{Approvers{}, socketUser(4242, 4242), nil, "cannot tell"},
		{Approvers{}, socketUser(4242, 4242), &e2bKey, "cannot tell"},
		{a, inBrowserOf(1000), &e2bKey, "cannot tell"},
		{a, state.Requester{Via: ViaDashboard}, &asker, "cannot tell"},
		{a, socketUser(1001, 1001), &e2bKey, ""},
	} {
		if got := tc.a.MayDecide(tc.by, tc.req); tc.want == "" && got != "" || tc.want != "" && !strings.Contains(got, tc.want) {
			t.Errorf("%s deciding for %s: %q, want %q", Describe(&tc.by), Describe(tc.req), got, tc.want)
		}
	}
}

// The socket's peer is the process at its other end, as the kernel
// says: this test's own uid, gid, pid and command.
func TestPeer(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "s")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		c, err := net.Dial("unix", sock)
		if err == nil {
			defer c.Close()
			var b [1]byte
			_, _ = c.Read(b[:])
		}
	}()
	c, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r, ok := From(ConnContext(context.Background(), c))
	if !ok || r.Via != ViaSocket || *r.UID != uint32(os.Getuid()) || *r.GID != uint32(os.Getgid()) || r.PID != os.Getpid() || r.Process == "" {
		t.Fatalf("the peer: %+v", r)
	}
	if d := Describe(&r); !strings.Contains(d, "(uid ") || !strings.Contains(d, " via "+r.Process) {
		t.Errorf("Describe: %q", d)
	}
}
