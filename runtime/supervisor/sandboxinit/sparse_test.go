package sandboxinit

import (
	"archive/tar"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

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
