package egresstest

import (
	"encoding/binary"
	"io"
	"net"
	"net/netip"
	"strconv"
	"sync"
	"testing"
)

// Socks5 is a SOCKS5 server on loopback (RFC 1928 CONNECT; RFC 1929's
// user and password when User is set) that records where it connected.
type Socks5 struct {
	Addr       string // host:port it listens on
	User, Pass string

	mu      sync.Mutex
	targets []string
	refused int // authentications refused
}

// NewSocks5 starts a SOCKS5 server asking for user and pass (none when
// user is ""), stopped with the test.
func NewSocks5(t *testing.T, user, pass string) *Socks5 {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &Socks5{Addr: ln.Addr().String(), User: user, Pass: pass}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go s.serve(c)
		}
	}()
	return s
}

// Targets are where it connected, host:port, in order.
func (s *Socks5) Targets() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string{}, s.targets...)
}

// Refused counts the authentications it refused.
func (s *Socks5) Refused() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.refused
}

func (s *Socks5) serve(c net.Conn) {
	defer c.Close()
	var head [2]byte
	if _, err := io.ReadFull(c, head[:]); err != nil || head[0] != 5 {
		return
	}
	methods := make([]byte, head[1])
	if _, err := io.ReadFull(c, methods); err != nil {
		return
	}
	if s.User == "" {
		c.Write([]byte{5, 0})
	} else {
		c.Write([]byte{5, 2})
		user, pass, ok := readAuth(c)
		if !ok || user != s.User || pass != s.Pass {
			s.mu.Lock()
			s.refused++
			s.mu.Unlock()
			c.Write([]byte{1, 1})
			return
		}
		c.Write([]byte{1, 0})
	}
	var req [4]byte
	if _, err := io.ReadFull(c, req[:]); err != nil || req[1] != 1 {
		return
	}
	var host string
	switch req[3] {
	case 1, 4: // IPv4, IPv6
		b := make([]byte, map[byte]int{1: 4, 4: 16}[req[3]])
		if _, err := io.ReadFull(c, b); err != nil {
			return
		}
		a, _ := netip.AddrFromSlice(b)
		host = a.String()
	case 3: // a name
		var n [1]byte
		if _, err := io.ReadFull(c, n[:]); err != nil {
			return
		}
		b := make([]byte, n[0])
		if _, err := io.ReadFull(c, b); err != nil {
			return
		}
		host = string(b)
	default:
		return
	}
	var port [2]byte
	if _, err := io.ReadFull(c, port[:]); err != nil {
		return
	}
	target := net.JoinHostPort(host, strconv.Itoa(int(binary.BigEndian.Uint16(port[:]))))
	s.mu.Lock()
	s.targets = append(s.targets, target)
	s.mu.Unlock()
	up, err := net.Dial("tcp", target)
	if err != nil {
		c.Write([]byte{5, 5, 0, 1, 0, 0, 0, 0, 0, 0})
		return
	}
	defer up.Close()
	c.Write([]byte{5, 0, 0, 1, 0, 0, 0, 0, 0, 0})
	// Each way until its end, which goes on as a half-close.
	done := make(chan struct{})
	go func() {
		io.Copy(up, c)
		up.(*net.TCPConn).CloseWrite()
		close(done)
	}()
	io.Copy(c, up)
	c.(*net.TCPConn).CloseWrite()
	<-done
}

func readAuth(c net.Conn) (user, pass string, ok bool) {
	var ver [2]byte
	if _, err := io.ReadFull(c, ver[:]); err != nil || ver[0] != 1 {
		return "", "", false
	}
	u := make([]byte, ver[1])
	if _, err := io.ReadFull(c, u); err != nil {
		return "", "", false
	}
	var n [1]byte
	if _, err := io.ReadFull(c, n[:]); err != nil {
		return "", "", false
	}
	p := make([]byte, n[0])
	if _, err := io.ReadFull(c, p); err != nil {
		return "", "", false
	}
	return string(u), string(p), true
}
