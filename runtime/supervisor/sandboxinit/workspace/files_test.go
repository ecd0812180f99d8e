package workspace

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sandboxd/sandboxd/runtime/supervisor"
)

// peer drives a Server on a test's own directories as the protocol loop
// does, with what it sends the host read as they come and round-tripped
// through JSON, as they travel.
type peer struct {
	t    *testing.T
	s    *Server
	out  chan supervisor.Message
	dirs struct{ workspace, tmp string }
}

func newPeer(t *testing.T) *peer {
	t.Helper()
	p := &peer{t: t, out: make(chan supervisor.Message, 4096)}
	p.dirs.workspace, p.dirs.tmp = t.TempDir(), t.TempDir()
	_ = os.Chmod(p.dirs.tmp, 0o777|os.ModeSticky) // as a container's /tmp is
	p.s = New(p.dirs.workspace, p.dirs.tmp, func(m supervisor.Message) {
		line, _ := json.Marshal(m)
		var got supervisor.Message
		if err := json.Unmarshal(line, &got); err != nil {
			got.Op = "malformed: " + err.Error()
		}
		select {
		case p.out <- got:
		default: // a failed test left messages unread
		}
	})
	p.s.MakeOutputs()
	return p
}

// send hands the server a message from the host.
func (p *peer) send(m supervisor.Message) {
	p.t.Helper()
	line, _ := json.Marshal(m)
	var got supervisor.Message
	if err := json.Unmarshal(line, &got); err != nil {
		p.t.Fatal(err)
	}
	switch got.Op {
	case supervisor.OpIn, supervisor.OpInClose, supervisor.OpKill:
		p.s.Feed(got)
	default:
		p.s.Serve(got)
	}
}

// next reads the server's next message, bounded in time.
func (p *peer) next() supervisor.Message {
	p.t.Helper()
	select {
	case m := <-p.out:
		return m
	case <-time.After(20 * time.Second):
		p.t.Fatal("no message from the server in 20s")
		return supervisor.Message{}
	}
}

// fileOp runs one workspace operation and returns its data and result.
func (p *peer) fileOp(id uint64, op string, req supervisor.FileRequest, chunks ...string) (string, *supervisor.FileResult) {
	p.t.Helper()
	p.send(supervisor.Message{Op: op, ID: id, File: &req})
	// A put's chunks go one per in_ack, as the host sends them.
	pending, closing := chunks, op == supervisor.OpPut || op == supervisor.OpUntar
	sendNext := func() {
		if len(pending) > 0 {
			p.send(supervisor.Message{Op: supervisor.OpIn, ID: id, Data: []byte(pending[0])})
			pending = pending[1:]
		} else if closing {
			p.send(supervisor.Message{Op: supervisor.OpInClose, ID: id})
			closing = false
		}
	}
	sendNext()
	var data strings.Builder
	for {
		m := p.next()
		switch {
		case m.ID != id:
		case m.Op == supervisor.OpInAck:
			sendNext()
		case m.Op == supervisor.OpOut:
			data.Write(m.Data)
		case m.Op == supervisor.OpDone:
			return data.String(), m.Done
		}
	}
}

func TestWorkspaceOperations(t *testing.T) {
	p := newPeer(t)
	if _, res := p.fileOp(1, supervisor.OpPut, supervisor.FileRequest{Path: "d/a.txt", Max: 100}, "hel", "lo"); res.Error != "" || res.Size != 5 {
		t.Fatalf("put: %+v", res)
	}
	if data, res := p.fileOp(2, supervisor.OpGet, supervisor.FileRequest{Path: "d/a.txt", Max: 100}); data != "hello" || res.Size != 5 {
		t.Fatalf("get: %q %+v", data, res)
	}
	if _, res := p.fileOp(3, supervisor.OpPut, supervisor.FileRequest{Path: "big", Max: 3}, "four"); res.ErrorKind != supervisor.ErrTooLarge {
		t.Fatalf("put over max: %+v", res)
	}
	if _, res := p.fileOp(4, supervisor.OpList, supervisor.FileRequest{Path: ".", Recursive: true}); len(res.Entries) != 4 {
		t.Fatalf("list (., d, d/a.txt, outputs): %+v", res)
	}
	// Planted links and FIFOs: refused, never followed, never blocking.
	if err := os.Symlink("/etc/passwd", filepath.Join(p.dirs.workspace, "link")); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mkfifo(filepath.Join(p.dirs.workspace, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, res := p.fileOp(5, supervisor.OpGet, supervisor.FileRequest{Path: "link", Max: 1 << 20}); res.Error == "" {
		t.Fatalf("get through a link: %+v", res)
	}
	if _, res := p.fileOp(6, supervisor.OpGet, supervisor.FileRequest{Path: "fifo", Max: 1 << 20}); res.ErrorKind != supervisor.ErrNotRegular {
		t.Fatalf("get of a FIFO: %+v", res)
	}
	if _, res := p.fileOp(7, supervisor.OpPut, supervisor.FileRequest{Path: "project_files/x", Max: 10}, "x"); res.ErrorKind != supervisor.ErrReadOnly {
		t.Fatalf("put into project_files: %+v", res)
	}
	if _, res := p.fileOp(8, supervisor.OpRemove, supervisor.FileRequest{Path: "d"}); res.Error != "" {
		t.Fatalf("remove: %+v", res)
	}
	if _, res := p.fileOp(9, supervisor.OpGet, supervisor.FileRequest{Path: "d/a.txt", Max: 100}); res.ErrorKind != supervisor.ErrNotFound {
		t.Fatalf("get after remove: %+v", res)
	}
}

func TestMkdirAndMoveStayInTheWorkspace(t *testing.T) {
	p := newPeer(t)
	if _, res := p.fileOp(1, supervisor.OpMkdir, supervisor.FileRequest{Path: "a/b"}); res.Error != "" || len(res.Entries) != 1 || res.Entries[0].Type != "dir" {
		t.Fatalf("mkdir: %+v", res)
	}
	if _, res := p.fileOp(2, supervisor.OpMkdir, supervisor.FileRequest{Path: "a/b"}); res.ErrorKind != supervisor.ErrExists {
		t.Fatalf("mkdir again: %+v", res)
	}
	if _, res := p.fileOp(3, supervisor.OpPut, supervisor.FileRequest{Path: "a/b/f", Max: 10}, "data"); res.Error != "" {
		t.Fatalf("put: %+v", res)
	}
	if _, res := p.fileOp(4, supervisor.OpMove, supervisor.FileRequest{Path: "a/b/f", To: "c/g"}); res.Error != "" || res.Entries[0].Path != "c/g" || res.Entries[0].Size != 4 {
		t.Fatalf("move: %+v", res)
	}
	// A link planted to lead out: neither a move's target nor a mkdir
	// goes through it.
	outside := t.TempDir()
	if err := os.Symlink(outside, filepath.Join(p.dirs.workspace, "out")); err != nil {
		t.Fatal(err)
	}
	if _, res := p.fileOp(5, supervisor.OpMove, supervisor.FileRequest{Path: "c/g", To: "out/g"}); res.Error == "" {
		t.Fatalf("move through a link: %+v", res)
	}
	if _, res := p.fileOp(6, supervisor.OpMkdir, supervisor.FileRequest{Path: "out/d"}); res.Error == "" {
		t.Fatalf("mkdir through a link: %+v", res)
	}
	if ents, _ := os.ReadDir(outside); len(ents) != 0 {
		t.Fatalf("written outside the workspace: %v", ents)
	}
	for i, req := range []supervisor.FileRequest{{Path: "c/g", To: "project_files/g"}, {Path: "c/g", To: "."}, {Path: "../x", To: "y"}} {
		if _, res := p.fileOp(uint64(7+i), supervisor.OpMove, req); res.Error == "" {
			t.Fatalf("move %+v: %+v", req, res)
		}
	}
}

// Names under /tmp reach the sandbox's /tmp, as the workspace's are
// reached: put, get, list, mkdir, move and remove there, answered by the
// names asked; /tmp itself is not written, a move does not cross from
// one to the other, and a link planted there leads nowhere.
func TestFilesInTmp(t *testing.T) {
	p := newPeer(t)
	if _, res := p.fileOp(1, supervisor.OpPut, supervisor.FileRequest{Path: "/tmp/repo/README.md", Max: 10}, "hello"); res.Error != "" {
		t.Fatalf("put: %+v", res)
	}
	if b, err := os.ReadFile(filepath.Join(p.dirs.tmp, "repo/README.md")); err != nil || string(b) != "hello" {
		t.Fatalf("the file in /tmp: %q %v", b, err)
	}
	if data, res := p.fileOp(2, supervisor.OpGet, supervisor.FileRequest{Path: "/tmp/repo/README.md", Max: 100}); res.Error != "" || data != "hello" {
		t.Fatalf("get: %q %+v", data, res)
	}
	if _, res := p.fileOp(3, supervisor.OpList, supervisor.FileRequest{Path: "/tmp/repo"}); res.Error != "" || len(res.Entries) != 2 ||
		res.Entries[0].Path != "/tmp/repo" || res.Entries[1].Path != "/tmp/repo/README.md" {
		t.Fatalf("list: %+v", res)
	}
	if _, res := p.fileOp(4, supervisor.OpMkdir, supervisor.FileRequest{Path: "/tmp/repo/.git"}); res.Error != "" || res.Entries[0].Path != "/tmp/repo/.git" {
		t.Fatalf("mkdir: %+v", res)
	}
	if _, res := p.fileOp(5, supervisor.OpMove, supervisor.FileRequest{Path: "/tmp/repo/README.md", To: "/tmp/repo/a.md"}); res.Error != "" || res.Entries[0].Path != "/tmp/repo/a.md" {
		t.Fatalf("move: %+v", res)
	}
	if _, res := p.fileOp(6, supervisor.OpMove, supervisor.FileRequest{Path: "/tmp/repo/a.md", To: "a.md"}); res.Error == "" {
		t.Fatalf("a move from /tmp into the workspace: %+v", res)
	}
	for i, path := range []string{"/tmp", "/tmp/"} {
		if _, res := p.fileOp(uint64(7+i), supervisor.OpRemove, supervisor.FileRequest{Path: path}); res.ErrorKind != supervisor.ErrReadOnly {
			t.Fatalf("remove %s: %+v", path, res)
		}
	}
	outside := t.TempDir()
	if err := os.Symlink(outside, filepath.Join(p.dirs.tmp, "out")); err != nil {
		t.Fatal(err)
	}
	if _, res := p.fileOp(9, supervisor.OpPut, supervisor.FileRequest{Path: "/tmp/out/x", Max: 10}, "x"); res.Error == "" {
		t.Fatalf("put through a link in /tmp: %+v", res)
	}
	if _, res := p.fileOp(10, supervisor.OpGet, supervisor.FileRequest{Path: "/tmp/../etc/passwd", Max: 1 << 20}); res.Error == "" {
		t.Fatalf("get out of /tmp: %+v", res)
	}
	if ents, _ := os.ReadDir(outside); len(ents) != 0 {
		t.Fatalf("written outside /tmp: %v", ents)
	}
	if _, res := p.fileOp(11, supervisor.OpRemove, supervisor.FileRequest{Path: "/tmp/repo"}); res.Error != "" {
		t.Fatalf("remove: %+v", res)
	}
}

func TestWatchReportsChangesBelowAndEnds(t *testing.T) {
	p := newPeer(t)
	ws := p.dirs.workspace
	if err := os.MkdirAll(filepath.Join(ws, "w/sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	// A link planted to lead out is watched as the link it is, never
	// through.
	outside := t.TempDir()
	if err := os.Symlink(outside, filepath.Join(ws, "w/out")); err != nil {
		t.Fatal(err)
	}
	p.send(supervisor.Message{Op: supervisor.OpWatch, ID: 3, File: &supervisor.FileRequest{Path: "w", Recursive: true}})
	events := func() []supervisor.FileEvent {
		t.Helper()
		m := p.next()
		if m.Op != supervisor.OpOut || m.Stream != supervisor.Events {
			t.Fatalf("want events, got %+v", m)
		}
		var evs []supervisor.FileEvent
		if err := json.Unmarshal(m.Data, &evs); err != nil {
			t.Fatal(err)
		}
		return evs
	}
	if evs := events(); len(evs) != 0 {
		t.Fatalf("the first batch says the watch is set, and is empty: %v", evs)
	}
	seen := map[string]bool{}
	want := func(path, kind string) {
		t.Helper()
		for deadline := time.Now().Add(5 * time.Second); !seen[kind+" "+path]; {
			if time.Now().After(deadline) {
				t.Fatalf("no %s of %s in %v", kind, path, seen)
			}
			for _, ev := range events() {
				seen[ev.Type+" "+ev.Path] = true
			}
		}
	}
	if err := os.WriteFile(filepath.Join(ws, "w/sub/a.txt"), []byte("a"), 0o644); err != nil {
		t.Fatal(err)
	}
	want("w/sub/a.txt", supervisor.EventCreate)
	want("w/sub/a.txt", supervisor.EventWrite)
	if err := os.MkdirAll(filepath.Join(ws, "w/new/deeper"), 0o755); err != nil {
		t.Fatal(err)
	}
	want("w/new", supervisor.EventCreate)
	time.Sleep(100 * time.Millisecond) // the new directory's watch is set as its event is read
	if err := os.WriteFile(filepath.Join(ws, "w/new/b.txt"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	want("w/new/b.txt", supervisor.EventCreate)
	if err := os.Rename(filepath.Join(ws, "w/sub/a.txt"), filepath.Join(ws, "w/a.txt")); err != nil {
		t.Fatal(err)
	}
	want("w/a.txt", supervisor.EventRename)
	if err := os.WriteFile(filepath.Join(outside, "x"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(ws, "w/a.txt")); err != nil {
		t.Fatal(err)
	}
	want("w/a.txt", supervisor.EventRemove)
	for k := range seen {
		if strings.Contains(k, "out/") {
			t.Fatalf("an event through the planted link: %s", k)
		}
	}
	// Killed, it ends with a done.
	p.send(supervisor.Message{Op: supervisor.OpKill, ID: 3})
	for {
		if m := p.next(); m.Op == supervisor.OpDone {
			if m.ID != 3 || m.Done.Error != "" {
				t.Fatalf("%+v", m)
			}
			break
		}
	}
	// A watch of what is not a directory, or climbs out, fails at once.
	for i, dir := range []string{"w/sub/missing", "w/out", "../.."} {
		p.send(supervisor.Message{Op: supervisor.OpWatch, ID: uint64(10 + i), File: &supervisor.FileRequest{Path: dir}})
		if m := p.next(); m.Op != supervisor.OpDone || m.Done.Error == "" {
			t.Fatalf("watch %s: %+v", dir, m)
		}
	}
}

// A file's metadata is its user.e2b.* extended attributes: a put replaces
// it, a listing shows it (what a tool set too), a move keeps it, and
// reading it neither blocks on a FIFO nor follows a link.
func TestFileMetadata(t *testing.T) {
	p := newPeer(t)
	put := func(id uint64, name string, m map[string]string) *supervisor.FileResult {
		_, res := p.fileOp(id, supervisor.OpPut, supervisor.FileRequest{Path: name, Max: 10, Metadata: m}, "x")
		return res
	}
	meta := func(id uint64, name string) map[string]string {
		_, res := p.fileOp(id, supervisor.OpList, supervisor.FileRequest{Path: name})
		if res.Error != "" || len(res.Entries) != 1 {
			t.Fatalf("stat %s: %+v", name, res)
		}
		return res.Entries[0].Metadata
	}
	if res := put(1, "a.txt", map[string]string{"author": "me", "stage": "one"}); res.Error != "" {
		if strings.Contains(res.Error, "not supported") {
			t.Skipf("the test's directory keeps no extended attributes: %s", res.Error)
		}
		t.Fatalf("put: %+v", res)
	}
	if m := meta(2, "a.txt"); fmt.Sprint(m) != "map[author:me stage:one]" {
		t.Errorf("after the put: %v", m)
	}
	if res := put(3, "a.txt", map[string]string{"author": "you"}); res.Error != "" || fmt.Sprint(meta(4, "a.txt")) != "map[author:you]" {
		t.Errorf("a put replaces it: %+v %v", res, meta(4, "a.txt"))
	}
	file := filepath.Join(p.dirs.workspace, "a.txt")
	if err := unix.Setxattr(file, "user.e2b.tool", []byte("set inside"), 0); err != nil {
		t.Fatal(err)
	}
	if err := unix.Setxattr(file, "user.other", []byte("not ours"), 0); err != nil {
		t.Fatal(err)
	}
	if m := meta(5, "a.txt"); fmt.Sprint(m) != "map[author:you tool:set inside]" {
		t.Errorf("what a tool set: %v", m)
	}
	// More than the bound, set by a tool (where the filesystem takes it:
	// tmpfs, a sandbox's, does): a listing shows what fits.
	big := filepath.Join(p.dirs.workspace, "big.txt")
	if err := os.WriteFile(big, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	set := 0
	for i := range 12 {
		if unix.Setxattr(big, fmt.Sprintf("user.e2b.k%02d", i), []byte(strings.Repeat("v", 500)), 0) != nil {
			break
		}
		set++
	}
	shown := 0
	for k, v := range meta(20, "big.txt") {
		shown += len(supervisor.MetadataXattr) + len(k) + len(v)
	}
	if shown > supervisor.MaxMetadataBytes || shown == 0 {
		t.Errorf("%d of %d keys set, %d bytes shown: the bound is %d", set, 12, shown, supervisor.MaxMetadataBytes)
	}
	if _, res := p.fileOp(6, supervisor.OpMove, supervisor.FileRequest{Path: "a.txt", To: "b.txt"}); res.Error != "" || len(res.Entries[0].Metadata) != 2 {
		t.Errorf("a move keeps it: %+v", res)
	}
	if res := put(7, "b.txt", nil); res.Error != "" || meta(8, "b.txt") != nil {
		t.Errorf("a put without it clears it: %+v %v", res, meta(8, "b.txt"))
	}
	if v, err := unix.Getxattr(filepath.Join(p.dirs.workspace, "b.txt"), "user.other", make([]byte, 64)); err != nil || v != len("not ours") {
		t.Errorf("other attributes are left alone: %d %v", v, err)
	}
	for _, bad := range []map[string]string{{"": "v"}, {"k": "a\nb"}, {"k\x7f": "v"}, {strings.Repeat("k", 247): "v"}, {"k": strings.Repeat("v", 4096)}} {
		if res := put(9, "c.txt", bad); res.ErrorKind != supervisor.ErrInvalid {
			t.Errorf("%.30v: %+v", bad, res)
		}
	}
	if err := unix.Mkfifo(filepath.Join(p.dirs.workspace, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("b.txt", filepath.Join(p.dirs.workspace, "link")); err != nil {
		t.Fatal(err)
	}
	_, res := p.fileOp(10, supervisor.OpList, supervisor.FileRequest{Path: "."})
	for _, e := range res.Entries {
		if (e.Path == "fifo" || e.Path == "link") && e.Metadata != nil {
			t.Errorf("%s: %v", e.Path, e.Metadata)
		}
	}
}
