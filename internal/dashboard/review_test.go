package dashboard

import (
	"net"
	"net/url"
	"strings"
	"testing"

	"github.com/sandboxd/sandboxd/internal/state"
)

// From an outside review (each case failed before its fix, and stays as a regression test): the uid a login link and its session carry
// is under the token's HMAC: another uid, a uid with leading zeros or
// spaces, none, or "-" is not taken; a login token is no session.
func TestReviewHeldTokenUID(t *testing.T) {
	d, err := New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	d.Listening(&net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 7070}, "127.0.0.1:7070")
	agent := uint32(1000)
	login, err := d.Login(&state.Requester{Via: "socket", UID: &agent})
	if err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse(login.URL)
	tok := u.Query().Get("token")
	raw, uid, _ := strings.Cut(tok, ".")
	if uid != "1000" {
		t.Fatalf("uid part %q", uid)
	}
	if by, err := d.signedIn(tok, kindLogin); err != nil || by.UID == nil || *by.UID != 1000 {
		t.Fatalf("the genuine token: %+v %v", by, err)
	}
	for _, forged := range []string{raw + ".1001", raw + ".01000", raw + ". 1000", raw + ".-", raw, raw + ".1000.1001", raw + "..1000"} {
		if by, err := d.signedIn(forged, kindLogin); err == nil {
			t.Errorf("forged %q taken: %+v", forged, by)
		}
	}
	if _, err := d.signedIn(tok, kindSession); err == nil {
		t.Errorf("a login token taken as a session")
	}
}
