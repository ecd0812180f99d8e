// Package ports finds the sockets a sandbox's programs listen on or bound
// in its network namespace: from sock_diag where the kernel has it, or
// from /proc/net.
package ports

import (
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"net/netip"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/sandboxd/sandboxd/runtime/supervisor/sandboxinit/procs"
)

// Listening are the addresses of the TCP sockets listening in the
// sandbox's network namespace: from sock_diag, or where the runtime has
// none (gVisor, whose /proc/net/tcp is its own netstack's), from
// /proc/net/tcp and tcp6.
func Listening() ([]netip.AddrPort, error) {
	out, err := listeningTCP(unix.AF_INET)
	if err == nil {
		var six []netip.AddrPort
		six, err = listeningTCP(unix.AF_INET6)
		out = append(out, six...)
	}
	if err == nil {
		return out, nil
	}
	out = nil
	for _, file := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		data, err := procs.ReadFile(file)
		if errors.Is(err, fs.ErrNotExist) {
			continue // a kernel without IPv6
		}
		if err != nil {
			return nil, err
		}
		for _, line := range strings.Split(string(data), "\n")[1:] {
			// sl local_address rem_address st ...: 0A is LISTEN.
			if f := strings.Fields(line); len(f) > 3 && f[3] == "0A" {
				if ap, ok := procAddr(f[1]); ok {
					out = append(out, ap)
				}
			}
		}
	}
	return out, nil
}

// procAddr reads a /proc/net/tcp address: the address's 32-bit words in
// hex as the host stores them (little-endian here), a colon, the port.
func procAddr(s string) (netip.AddrPort, bool) {
	addr, port, ok := strings.Cut(s, ":")
	p, err := strconv.ParseUint(port, 16, 16)
	if !ok || err != nil || (len(addr) != 8 && len(addr) != 32) {
		return netip.AddrPort{}, false
	}
	raw, err := hex.DecodeString(addr)
	if err != nil {
		return netip.AddrPort{}, false
	}
	for i := 0; i < len(raw); i += 4 {
		binary.BigEndian.PutUint32(raw[i:], binary.NativeEndian.Uint32(raw[i:]))
	}
	a, _ := netip.AddrFromSlice(raw)
	return netip.AddrPortFrom(a, uint16(p)), true
}

// listeningTCP lists the TCP sockets of one family listening in the
// sandbox's network namespace, asked of the kernel through sock_diag for
// the listening state alone. /proc/net/tcp walks every established
// connection of the host, every namespace's, to find the few of this
// one: on a busy host that walk cost more CPU than the program it checked
// up on.
func listeningTCP(family uint8) ([]netip.AddrPort, error) {
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, unix.NETLINK_SOCK_DIAG)
	if err != nil {
		return nil, err
	}
	defer unix.Close(fd)
	// struct nlmsghdr, then struct inet_diag_req_v2 (its socket id left
	// zero: every socket in the states asked for).
	const hdrLen, reqLen = unix.SizeofNlMsghdr, 56
	msg := make([]byte, hdrLen+reqLen)
	binary.NativeEndian.PutUint32(msg[0:], uint32(len(msg)))
	binary.NativeEndian.PutUint16(msg[4:], unix.SOCK_DIAG_BY_FAMILY)
	binary.NativeEndian.PutUint16(msg[6:], unix.NLM_F_REQUEST|unix.NLM_F_DUMP)
	msg[hdrLen] = family
	msg[hdrLen+1] = unix.IPPROTO_TCP
	binary.NativeEndian.PutUint32(msg[hdrLen+4:], 1<<unix.BPF_TCP_LISTEN)
	if err := unix.Sendto(fd, msg, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return nil, err
	}
	var out []netip.AddrPort
	buf := make([]byte, 32<<10)
	for {
		n, _, err := unix.Recvfrom(fd, buf, 0)
		if err != nil {
			return nil, err
		}
		replies, err := syscall.ParseNetlinkMessage(buf[:n])
		if err != nil {
			return nil, err
		}
		for _, r := range replies {
			switch r.Header.Type {
			case unix.NLMSG_DONE:
				return out, nil
			case unix.NLMSG_ERROR:
				if len(r.Data) >= 4 {
					if errno := int32(binary.NativeEndian.Uint32(r.Data)); errno != 0 {
						return nil, syscall.Errno(-errno)
					}
				}
				return nil, fmt.Errorf("sock_diag: an error without its number")
			}
			ap, ok := diagSocketAddr(r.Data)
			if !ok {
				return nil, fmt.Errorf("sock_diag: a reply of %d bytes", len(r.Data))
			}
			out = append(out, ap)
		}
	}
}

// diagSocketAddr reads the local address of a struct inet_diag_msg:
// family, state, timer, retrans, then the socket id (source port and
// address in network order).
func diagSocketAddr(m []byte) (netip.AddrPort, bool) {
	if len(m) < 72 {
		return netip.AddrPort{}, false
	}
	port := binary.BigEndian.Uint16(m[4:])
	var addr netip.Addr
	switch m[0] {
	case unix.AF_INET:
		addr = netip.AddrFrom4([4]byte(m[8:12]))
	case unix.AF_INET6:
		addr = netip.AddrFrom16([16]byte(m[8:24]))
	default:
		return netip.AddrPort{}, false
	}
	return netip.AddrPortFrom(addr, port), true
}

// Bound lists the TCP sockets listening and the UDP and Unix
// sockets bound in the sandbox's network namespace.
func Bound() []string {
	var out []string
	ports, _ := Listening()
	for _, p := range ports {
		out = append(out, "tcp listening "+p.String())
	}
	for _, file := range []string{"udp", "udp6"} {
		out = append(out, tableRows("/proc/net/"+file, file, func(f []string) (string, bool) {
			return f[1], len(f) > 1
		})...)
	}
	// Num RefCount Protocol Flags Type St Inode Path: a bound one has a
	// path ("@..." for an abstract name). A connected one (St 03) shows
	// its listener's path: a listener outside the sandbox may accept
	// here (sandboxd's supervisor channel and egress proxy, whose ends
	// are made in the connecting socket's namespace). What a program
	// could leave for the next is a listener, or a bound datagram socket.
	out = append(out, tableRows("/proc/net/unix", "unix", func(f []string) (string, bool) {
		return strings.Join(f[7:], " "), len(f) > 7 && f[5] != "03"
	})...)
	return out
}

// tableRows reads a /proc table (a header line, then a row per object)
// and names each row that keep picks.
func tableRows(file, kind string, keep func(fields []string) (string, bool)) []string {
	data, err := procs.ReadFile(file)
	if err != nil {
		return nil
	}
	lines := strings.Split(string(data), "\n")
	var out []string
	for _, line := range lines[min(1, len(lines)):] {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		if name, ok := keep(f); ok {
			out = append(out, kind+" "+name)
		}
	}
	return out
}
