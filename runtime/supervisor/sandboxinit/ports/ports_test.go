package ports

import (
	"net"
	"net/netip"
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
	want := netip.MustParseAddrPort(l.Addr().String())
	if !slices.Contains(got, want) {
		t.Errorf("%s not among %v", want, got)
	}
	if slices.Contains(got, netip.MustParseAddrPort(c.LocalAddr().String())) {
		t.Errorf("the connection %s named as listening", c.LocalAddr())
	}
}

// /proc/net/tcp's addresses, as gVisor and kernels without sock_diag give
// them, read as sock_diag's.
func TestProcAddr(t *testing.T) {
	for in, want := range map[string]string{
		"0100007F:1F90":                         "127.0.0.1:8080",
		"00000000:0050":                         "0.0.0.0:80",
		"00000000000000000000000001000000:0BB8": "[::1]:3000",
		"0000000000000000FFFF00000100007F:01BB": "[::ffff:127.0.0.1]:443",
	} {
		got, ok := procAddr(in)
		if !ok || got.String() != want {
			t.Errorf("procAddr(%q) = %v %v, want %s", in, got, ok, want)
		}
	}
	for _, bad := range []string{"", "0100007F", "0100007F:zz", "01007F:1F90"} {
		if _, ok := procAddr(bad); ok {
			t.Errorf("procAddr(%q) took it", bad)
		}
	}
}
