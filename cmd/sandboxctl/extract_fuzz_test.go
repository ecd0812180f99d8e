package main

import (
	"archive/tar"
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// An archive from a sandbox is untrusted: whatever its entries and links
// say, extracting it writes nothing outside the destination.
func FuzzExtract(f *testing.F) {
	for _, entries := range [][]tar.Header{
		{{Name: "top/", Typeflag: tar.TypeDir}, {Name: "top/a.txt", Typeflag: tar.TypeReg, Size: 1}},
		{{Name: "top/link", Typeflag: tar.TypeSymlink, Linkname: "../../outside"}, {Name: "top/link/x", Typeflag: tar.TypeReg, Size: 1}},
		{{Name: "top/../../escape", Typeflag: tar.TypeReg, Size: 1}},
		{{Name: "/abs/path", Typeflag: tar.TypeReg, Size: 1}},
	} {
		var buf bytes.Buffer
		tw := tar.NewWriter(&buf)
		for _, h := range entries {
			h.Mode = 0o644
			_ = tw.WriteHeader(&h)
			if h.Size > 0 {
				_, _ = tw.Write([]byte("x"))
			}
		}
		_ = tw.Close()
		f.Add(buf.Bytes(), false)
	}
	f.Fuzz(func(t *testing.T, archive []byte, into bool) {
		base := t.TempDir()
		dst := filepath.Join(base, "in", "dst")
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			t.Fatal(err)
		}
		if into {
			_ = os.Mkdir(dst, 0o755)
		}
		_ = extract(bytes.NewReader(archive), dst)
		// No more bytes on the host than the archive carried (sparse files
		// are not expanded).
		var written int64
		_ = filepath.WalkDir(dst, func(_ string, d os.DirEntry, err error) error {
			if err == nil && d.Type().IsRegular() {
				if info, err := d.Info(); err == nil {
					written += info.Size()
				}
			}
			return nil
		})
		if written > int64(len(archive)) {
			t.Fatalf("%d bytes written from a %d-byte archive", written, len(archive))
		}
		// Only dst may have appeared: nothing beside it, nothing above.
		for _, dir := range []string{base, filepath.Join(base, "in")} {
			ents, _ := os.ReadDir(dir)
			if len(ents) != 1 {
				t.Fatalf("%s holds %d entries after extraction", dir, len(ents))
			}
		}
	})
}
