package workspace

import (
	"archive/tar"
	"crypto/sha256"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/sandboxd/sandboxd/runtime/supervisor"
)

// What sandboxd keeps of a workspace is what the workspace holds: a 64
// MiB file of holes but for three writes archives to a few KiB and comes
// back as sparse as it was, with its bytes where they were; a file's two
// names come back as one file. A download (not a snapshot) stays plain.
func TestArchivesKeepHolesAndLinks(t *testing.T) {
	from := newPeer(t)
	ws := from.dirs.workspace
	const size = 64 << 20
	f, err := os.Create(filepath.Join(ws, "sparse.bin"))
	if err != nil {
		t.Fatal(err)
	}
	for off, s := range map[int64]string{0: "head", 32 << 20: "middle", size - 4: "tail"} {
		if _, err := f.WriteAt([]byte(s), off); err != nil {
			t.Fatal(err)
		}
	}
	f.Close()
	if err := os.WriteFile(filepath.Join(ws, "a.txt"), []byte("shared\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(filepath.Join(ws, "a.txt"), filepath.Join(ws, "b.txt")); err != nil {
		t.Fatal(err)
	}
	archive, res := from.fileOp(1, supervisor.OpTar, supervisor.FileRequest{Path: ".", Max: 1 << 30, Snapshot: true})
	if res.Error != "" || len(archive) > 64<<10 {
		t.Fatalf("the archive: %d bytes, %+v", len(archive), res)
	}
	// The file as its data runs, the link as a link.
	tr := tar.NewReader(strings.NewReader(archive))
	kinds := map[string]byte{}
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		kinds[hdr.Name] = hdr.Typeflag
		if hdr.Name == "workspace/sparse.bin" && (hdr.Size > 64<<10 || hdr.PAXRecords[sparseRecord] == "") {
			t.Errorf("sparse.bin is archived as %d bytes (%q)", hdr.Size, hdr.PAXRecords[sparseRecord])
		}
	}
	if kinds["workspace/sparse.bin"] != tar.TypeReg || kinds["workspace/b.txt"] != tar.TypeLink {
		t.Errorf("entries: %v", kinds)
	}

	to := newPeer(t)
	var chunks []string
	for s := archive; len(s) > 0; s = s[min(len(s), 7000):] {
		chunks = append(chunks, s[:min(len(s), 7000)])
	}
	if _, res := to.fileOp(2, supervisor.OpUntar, supervisor.FileRequest{Path: "."}, chunks...); res != nil && res.Error != "" {
		t.Fatalf("untar: %+v", res)
	}
	got := filepath.Join(to.dirs.workspace, "sparse.bin")
	st, err := os.Stat(got)
	if err != nil || st.Size() != size || st.Sys().(*syscall.Stat_t).Blocks*512 > 1<<20 {
		t.Fatalf("sparse.bin came back as %v (%v)", st, err)
	}
	b, _ := os.ReadFile(got)
	if string(b[:4]) != "head" || string(b[32<<20:32<<20+6]) != "middle" || string(b[size-4:]) != "tail" {
		t.Error("sparse.bin's bytes moved")
	}
	a, _ := os.Stat(filepath.Join(to.dirs.workspace, "a.txt"))
	bt, _ := os.Stat(filepath.Join(to.dirs.workspace, "b.txt"))
	if a == nil || bt == nil || !os.SameFile(a, bt) {
		t.Errorf("a.txt and b.txt came back as two files: %v %v", a, bt)
	}

	// A download is plain: every byte, no link.
	plain, res := from.fileOp(3, supervisor.OpTar, supervisor.FileRequest{Path: ".", Max: 1 << 30})
	if res.Error != "" || len(plain) < size {
		t.Errorf("a download: %d bytes, %+v", len(plain), res)
	}
}

// FuzzExtractWorkspace: whatever archive sandboxd is handed to restore
// (a hibernation or snapshot archive edited on disk, one made by a
// hostile workspace), nothing is made outside the workspace, and what is
// made takes no more disk than the archive brought (holes stay holes).
func FuzzExtractWorkspace(f *testing.F) {
	seed := func(write func(tw *tar.Writer, w io.Writer)) {
		var b strings.Builder
		tw := tar.NewWriter(&b)
		write(tw, &b)
		tw.Close()
		f.Add([]byte(b.String()))
	}
	reg := func(tw *tar.Writer, name, body string) {
		_ = tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: 0o644, Size: int64(len(body))})
		_, _ = io.WriteString(tw, body)
	}
	seed(func(tw *tar.Writer, _ io.Writer) {
		reg(tw, "workspace/a", "a")
		_ = tw.WriteHeader(&tar.Header{Typeflag: tar.TypeLink, Name: "workspace/b", Linkname: "workspace/a"})
		_ = tw.WriteHeader(&tar.Header{Typeflag: tar.TypeLink, Name: "workspace/c", Linkname: "workspace/../outside"})
		_ = tw.WriteHeader(&tar.Header{Typeflag: tar.TypeSymlink, Name: "workspace/l", Linkname: "/etc"})
		reg(tw, "workspace/l/passwd", "through a link")
		reg(tw, "workspace/../escape", "x")
	})
	seed(func(tw *tar.Writer, _ io.Writer) {
		hdr := &tar.Header{Typeflag: tar.TypeReg, Name: "workspace/huge", Mode: 0o644, Size: 1 << 40}
		_ = writeSparse(tw, hdr, []segment{{off: 1 << 30, n: 4}}, func(segment) io.Reader { return strings.NewReader("data") })
	})
	f.Fuzz(func(t *testing.T, archive []byte) {
		base := t.TempDir()
		ws := filepath.Join(base, "workspace")
		if err := os.Mkdir(ws, 0o755); err != nil {
			t.Fatal(err)
		}
		root, err := os.OpenRoot(ws)
		if err != nil {
			t.Fatal(err)
		}
		_ = extract(root, tar.NewReader(strings.NewReader(string(archive))))
		root.Close()
		if ents, _ := os.ReadDir(base); len(ents) != 1 {
			t.Fatalf("made outside the workspace: %v", ents)
		}
		var used int64
		_ = filepath.Walk(ws, func(_ string, fi os.FileInfo, err error) error {
			if err == nil && fi.Mode().IsRegular() {
				used += fi.Sys().(*syscall.Stat_t).Blocks * 512
			}
			return nil
		})
		if used > int64(len(archive))+1<<20 {
			t.Fatalf("a %d-byte archive took %d bytes of disk", len(archive), used)
		}
	})
}

// A file that grows (or is cut, or has its holes filled) while it is
// archived goes in as long as it was when the archive was sized: the
// archive stays within what was counted, reads back whole, and restores.
func TestArchiveOfAFileThatChanges(t *testing.T) {
	from := newPeer(t)
	ws := from.dirs.workspace
	grow, err := os.Create(filepath.Join(ws, "growing"))
	if err != nil {
		t.Fatal(err)
	}
	holes, err := os.Create(filepath.Join(ws, "holes"))
	if err != nil {
		t.Fatal(err)
	}
	_ = holes.Truncate(8 << 20)
	_, _ = holes.WriteAt([]byte("x"), 4<<20)
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		chunk := make([]byte, 64<<10)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			_, _ = grow.Write(chunk)
			_, _ = holes.WriteAt([]byte("y"), int64(i%128)<<16) // fills holes as it goes
		}
	}()
	archive, res := from.fileOp(1, supervisor.OpTar, supervisor.FileRequest{Path: ".", Max: 1 << 30, Snapshot: true})
	close(stop)
	<-done
	grow.Close()
	holes.Close()
	if res.Error != "" {
		t.Fatalf("archiving: %+v", res)
	}
	tr := tar.NewReader(strings.NewReader(archive))
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("the archive does not read back: %v", err)
		}
		if n, err := io.Copy(io.Discard, tr); err != nil || n != hdr.Size {
			t.Fatalf("%s: %d of %d bytes (%v)", hdr.Name, n, hdr.Size, err)
		}
	}
	to := newPeer(t)
	if _, res := to.fileOp(2, supervisor.OpUntar, supervisor.FileRequest{Path: "."}, archive); res != nil && res.Error != "" {
		t.Fatalf("untar: %+v", res)
	}
	if st, err := os.Stat(filepath.Join(to.dirs.workspace, "holes")); err != nil || st.Size() != 8<<20 {
		t.Errorf("holes came back as %v (%v)", st, err)
	}
}

// FuzzArchiveWorkspace: whatever a hostile workspace holds (sparse files,
// many names of one file, links out of it, FIFOs, device nodes, long
// names and deep trees), its snapshot archive is no larger than what the
// workspace holds, and restores to the same tree: names, kinds, modes,
// sizes, bytes and which names are one file. Nothing that is not a file,
// a directory or a link comes back, and it is counted as skipped.
func FuzzArchiveWorkspace(f *testing.F) {
	f.Add([]byte{0, 1, 64, 3, 9, 1, 1, 2, 2, 0, 3, 4, 4, 5, 2, 0, 2, 3, 6, 1})
	f.Add([]byte{4, 0, 0, 9, 250, 4, 1, 1, 255, 255, 2, 1, 5, 6, 0})
	f.Add([]byte{0, 0, 255, 255, 255, 1, 0, 1, 1, 0, 2, 1, 1, 0, 3, 6, 0, 7, 1})
	f.Fuzz(func(t *testing.T, script []byte) {
		from := newPeer(t)
		ws := from.dirs.workspace
		odd := buildWorkspace(t, ws, script)
		archive, res := from.fileOp(1, supervisor.OpTar, supervisor.FileRequest{Path: ".", Max: 1 << 30, Snapshot: true})
		if res.Error != "" {
			t.Fatalf("archiving: %+v", res)
		}
		held, entries := holdings(t, ws)
		if bound := held + int64(entries)*4096 + 64<<10; int64(len(archive)) > bound {
			t.Fatalf("a workspace holding %d bytes in %d entries archives to %d bytes", held, entries, len(archive))
		}
		if res.Skipped != odd {
			t.Errorf("%d FIFOs and devices, %d skipped", odd, res.Skipped)
		}
		to := newPeer(t)
		if _, res := to.fileOp(2, supervisor.OpUntar, supervisor.FileRequest{Path: "."}, archive); res != nil && res.Error != "" {
			t.Fatalf("untar: %+v", res)
		}
		if want, got := describeTree(t, ws), describeTree(t, to.dirs.workspace); !slices.Equal(want, got) {
			t.Fatalf("the tree changed:\nwas  %q\nnow  %q", want, got)
		}
	})
}

// buildWorkspace makes, in ws, what script describes, a few bytes per
// step: sparse files written here and there, further names of a file,
// symbolic links in and out, FIFOs, device nodes (where the test may make
// them), directories with long names. It returns how many FIFOs and
// devices it made.
func buildWorkspace(t *testing.T, ws string, script []byte) (odd int) {
	t.Helper()
	var files, dirs []string
	dirs = append(dirs, ".")
	arg := func(i int) int {
		if i < len(script) {
			return int(script[i])
		}
		return 0
	}
	for i, step := 0, 0; i < len(script) && step < 64; i, step = i+5, step+1 {
		dir := dirs[arg(i+1)%len(dirs)]
		name := filepath.Join(dir, fmt.Sprintf("n%d", step))
		if arg(i+2) > 200 { // a long name, near NAME_MAX
			name = filepath.Join(dir, strings.Repeat("L", 200+arg(i+2)%55)+fmt.Sprint(step))
		}
		at := filepath.Join(ws, name)
		switch arg(i) % 7 {
		case 0, 6: // a file of arg(i+3) × 64 KiB with arg(i+4) bytes written at three places
			f, err := os.OpenFile(at, os.O_CREATE|os.O_WRONLY, os.FileMode(0o600|arg(i+4)&0o155))
			if err != nil {
				continue
			}
			size := int64(arg(i+3)) << 16
			_ = f.Truncate(size)
			data := []byte(strings.Repeat(string(rune('a'+step%26)), arg(i+4)*37))
			for _, off := range []int64{0, size / 3, max(0, size-int64(len(data)))} {
				_, _ = f.WriteAt(data, off)
			}
			f.Close()
			files = append(files, name)
		case 1: // another name of a file
			if len(files) > 0 && os.Link(filepath.Join(ws, files[arg(i+3)%len(files)]), at) == nil {
				files = append(files, name)
			}
		case 2: // a link: out of the workspace, up, or to a file in it
			targets := []string{"/etc/passwd", "../../../outside", "."}
			if len(files) > 0 {
				targets = append(targets, files[arg(i+3)%len(files)])
			}
			_ = os.Symlink(targets[arg(i+4)%len(targets)], at)
		case 3: // a FIFO
			if unix.Mkfifo(at, 0o644) == nil {
				odd++
			}
		case 4:
			if os.Mkdir(at, 0o755) == nil {
				dirs = append(dirs, name)
			}
		case 5: // a device node, where the test may make one
			if unix.Mknod(at, unix.S_IFCHR|0o666, int(unix.Mkdev(1, 3))) == nil {
				odd++
			}
		}
	}
	return odd
}

// holdings is the disk ws's files take (each file once, however many its
// names) and how many entries it has.
func holdings(t *testing.T, ws string) (held int64, entries int) {
	t.Helper()
	seen := map[uint64]bool{}
	_ = filepath.Walk(ws, func(_ string, fi os.FileInfo, err error) error {
		if err != nil {
			return nil
		}
		entries++
		st := fi.Sys().(*syscall.Stat_t)
		if fi.Mode().IsRegular() && !seen[st.Ino] {
			seen[st.Ino] = true
			held += st.Blocks * 512
		}
		return nil
	})
	return held, entries
}

// describeTree is a line per file, directory and link in ws, sorted: its
// name, kind and mode, its bytes' digest or its target, and the first
// name met of the file it is one with. FIFOs and devices are left out, as
// archives leave them.
func describeTree(t *testing.T, ws string) []string {
	t.Helper()
	first := map[uint64]string{}
	var lines []string
	_ = filepath.Walk(ws, func(p string, fi os.FileInfo, err error) error {
		if err != nil || p == ws || fi.Mode()&(os.ModeNamedPipe|os.ModeDevice) != 0 { // skipped
			return nil
		}
		name, _ := filepath.Rel(ws, p)
		line := fmt.Sprintf("%s %v", name, fi.Mode())
		switch {
		case fi.Mode().IsRegular():
			ino := fi.Sys().(*syscall.Stat_t).Ino
			if first[ino] == "" {
				first[ino] = name
			}
			b, _ := os.ReadFile(p)
			line += fmt.Sprintf(" %d %x one-with=%s", fi.Size(), sha256.Sum256(b), first[ino])
		case fi.Mode()&os.ModeSymlink != 0:
			target, _ := os.Readlink(p)
			line += " -> " + target
		}
		lines = append(lines, line)
		return nil
	})
	return lines
}
