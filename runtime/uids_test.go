package runtime

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestParseUIDRange(t *testing.T) {
	if r, err := ParseUIDRange(" 2000000-2000009 "); err != nil || r.Size() != 10 {
		t.Fatalf("%v %v", r, err)
	}
	for _, bad := range []string{"", "5", "0-100", "999-2000", "3000-2000", "x-y", "2000-4294967295", "2000-99999999999"} {
		if _, err := ParseUIDRange(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestCheckHostRefusesUsersGroupsAndSubordinateRanges(t *testing.T) {
	etc := t.TempDir()
	write := func(name, content string) {
		if err := os.WriteFile(filepath.Join(etc, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("passwd", "root:x:0:0::/root:/bin/sh\nalice:x:1000:1000::/home/alice:/bin/sh\nodd:x:5000050:100::/:/bin/false\n")
	write("group", "root:x:0:\nbig:x:6000001:\n")
	write("subuid", "alice:100000:65536\n")
	write("subgid", "alice:100000:65536\n")
	for r, want := range map[UIDRange]string{
		{First: 5000000, Last: 5000100}: "passwd has odd with id 5000050",
		{First: 6000000, Last: 6000100}: "group has big with id 6000001",
		{First: 150000, Last: 160000}:   "subuid gives alice 100000-165535",
		{First: 165535, Last: 165535}:   "subgid gives alice",
		{First: 165536, Last: 200000}:   "",
	} {
		err := r.CheckHost(etc)
		if (want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), want)) {
			t.Errorf("%s: %v, want %q", r, err, want)
		}
	}
	// A host without subordinate ranges is fine.
	if err := (UIDRange{First: 2000000, Last: 2000001}).CheckHost(t.TempDir()); err != nil {
		t.Fatal(err)
	}
}

func TestUIDsAreOneEachAndComeBack(t *testing.T) {
	u := NewUIDs(UIDRange{First: 5000, Last: 5002})
	u.Mark(5001) // a container found at start
	a, _ := u.Take()
	b, _ := u.Take()
	if a == b || a == 5001 || b == 5001 {
		t.Fatalf("handed out %d and %d with 5001 in use", a, b)
	}
	if _, err := u.Take(); !errors.Is(err, ErrNoUID) {
		t.Fatalf("a full range: %v", err)
	}
	u.Release(a)
	if c, err := u.Take(); err != nil || c != a {
		t.Fatalf("after a release: %d %v", c, err)
	}
}
