// Package principal owns who is behind a request to sandboxd: the process
// at the other end of the socket (its uid, gid and command, as the kernel
// vouches for them), a browser signed in to the dashboard (with the uid
// that made its login link), or an E2B API key. It carries that
// requester in a request's context, describes it for records and people,
// and decides who may approve what another principal asked for.
package principal

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/user"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/sandboxd/sandboxd/internal/state"
)

// The ways a request reaches sandboxd.
const (
	ViaSocket    = "socket"
	ViaDashboard = "dashboard"
	ViaE2B       = "e2b"
)

type key struct{}

// With is ctx carrying r as its request's requester.
func With(ctx context.Context, r state.Requester) context.Context {
	return context.WithValue(ctx, key{}, r)
}

// From is the requester ctx carries; false when none does (a request
// sandboxd made itself).
func From(ctx context.Context) (state.Requester, bool) {
	r, ok := ctx.Value(key{}).(state.Requester)
	return r, ok
}

// Of is the requester ctx carries, or nil: for records.
func Of(ctx context.Context) *state.Requester {
	if r, ok := From(ctx); ok {
		return &r
	}
	return nil
}

// ConnContext is the ConnContext of the socket's server: it notes the
// process at the other end (SO_PEERCRED) as every request's requester on
// that connection.
func ConnContext(ctx context.Context, c net.Conn) context.Context {
	if r, ok := Peer(c); ok {
		return With(ctx, r)
	}
	return ctx
}

// Peer is the process at the other end of a Unix connection, as the
// kernel reports it.
func Peer(c net.Conn) (state.Requester, bool) {
	uc, ok := c.(*net.UnixConn)
	if !ok {
		return state.Requester{}, false
	}
	raw, err := uc.SyscallConn()
	if err != nil {
		return state.Requester{}, false
	}
	var cred *unix.Ucred
	_ = raw.Control(func(fd uintptr) { cred, err = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED) })
	if err != nil || cred == nil {
		return state.Requester{}, false
	}
	uid, gid := cred.Uid, cred.Gid
	r := state.Requester{Via: ViaSocket, UID: &uid, GID: &gid, PID: int(cred.Pid), User: userName(uid)}
	if comm, err := os.ReadFile("/proc/" + strconv.Itoa(int(cred.Pid)) + "/comm"); err == nil {
		r.Process = strings.TrimSpace(string(comm))
	}
	return r, true
}

func userName(uid uint32) string {
	if u, err := user.LookupId(strconv.FormatUint(uint64(uid), 10)); err == nil {
		return u.Username
	}
	return ""
}

// Describe says who r is, for records and people: "alice (uid 1000) via
// python3", "the dashboard, signed in by root (uid 0)", "E2B key 3f2a…".
func Describe(r *state.Requester) string {
	if r == nil {
		return "sandboxd"
	}
	var s string
	switch r.Via {
	case ViaE2B:
		s = "E2B key " + r.Key
	case ViaDashboard:
		s = "the dashboard"
		if r.UID != nil {
			s += ", signed in by " + person(r)
		}
	default:
		s = person(r)
		if r.Process != "" {
			s += " via " + r.Process
		}
	}
	if r.Client != "" {
		s += fmt.Sprintf(" (client %q)", r.Client)
	}
	return s
}

func person(r *state.Requester) string {
	if r.UID == nil {
		return "an unknown user"
	}
	if r.User != "" {
		return fmt.Sprintf("%s (uid %d)", r.User, *r.UID)
	}
	return fmt.Sprintf("uid %d", *r.UID)
}
