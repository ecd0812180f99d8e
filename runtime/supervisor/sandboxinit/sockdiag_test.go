package sandboxinit

import (
	"net"
	"slices"
	"testing"

	"golang.org/x/sys/unix"
)

func TestListeningTCPNamesListenersAlone(t *testing.T) {
	l, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	c, err := net.Dial("tcp4", l.Addr().String()) // established: not named
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	got, err := listeningTCP(unix.AF_INET)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(got, "tcp listening "+l.Addr().String()) {
		t.Errorf("%s not among %q", l.Addr(), got)
	}
	if slices.Contains(got, "tcp listening "+c.LocalAddr().String()) {
		t.Errorf("the connection %s named as listening", c.LocalAddr())
	}
}
