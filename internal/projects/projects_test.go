package projects

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sandboxd/sandboxd/internal/config"
	"github.com/sandboxd/sandboxd/internal/errdefs"
	"github.com/sandboxd/sandboxd/internal/state"
)

// What a crash left in the blob store (a half-received upload, a blob no
// project refers to) is gone after the next start; project files stay.
func TestStartCollectsAbandonedUploads(t *testing.T) {
	dir := t.TempDir()
	store, err := state.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	ps := New(dir, store, 1<<20, config.Projects{Max: 2, MaxBytes: 10})
	p, aerr := ps.Create("data")
	if aerr != nil {
		t.Fatal(aerr)
	}
	if _, aerr := ps.AddFile(p.ID, "kept.txt", strings.NewReader("kept"), false); aerr != nil {
		t.Fatal(aerr)
	}
	for _, name := range []string{"upload-123", "0000orphan"} {
		if err := os.WriteFile(filepath.Join(ps.blobDir(), name), []byte("x"), 0o444); err != nil {
			t.Fatal(err)
		}
	}
	New(dir, store, 1<<20, config.Projects{Max: 2, MaxBytes: 10})
	ents, _ := os.ReadDir(ps.blobDir())
	if len(ents) != 1 {
		t.Fatalf("blobs after a start: %v", ents)
	}
	f, _, aerr := ps.OpenFile(p.ID, "kept.txt")
	if aerr != nil {
		t.Fatal(aerr)
	}
	f.Close()
}

// Quotas: projects.max projects, projects.max_bytes of files in all.
func TestQuotas(t *testing.T) {
	dir := t.TempDir()
	store, err := state.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	ps := New(dir, store, 1<<20, config.Projects{Max: 2, MaxBytes: 10})
	a, _ := ps.Create("a")
	if _, aerr := ps.Create("b"); aerr != nil {
		t.Fatal(aerr)
	}
	if _, aerr := ps.Create("c"); aerr == nil || !errdefs.Is(aerr, errdefs.TooLarge) {
		t.Fatalf("a third project: %v", aerr)
	}
	if _, aerr := ps.AddFile(a.ID, "f", strings.NewReader("12345678"), false); aerr != nil {
		t.Fatal(aerr)
	}
	if _, aerr := ps.AddFile(a.ID, "g", strings.NewReader("123"), false); aerr == nil || !errdefs.Is(aerr, errdefs.TooLarge) {
		t.Fatalf("past max_bytes: %v", aerr)
	}
	if _, aerr := ps.AddFile(a.ID, "f", strings.NewReader("1234567890"), true); aerr != nil {
		t.Fatalf("replacing a file within max_bytes: %v", aerr)
	}
}
