package snapshots

import (
	"io"
	"os"
	"strings"
	"testing"

	"github.com/sandboxd/sandboxd/internal/config"
	"github.com/sandboxd/sandboxd/internal/errdefs"
	"github.com/sandboxd/sandboxd/internal/state"
)

// A snapshot opens as it was saved; one whose archive was edited on disk
// (same size or not) is snapshot_damaged, naming the file and what to
// do, before anything reads it.
func TestOpenChecksTheArchive(t *testing.T) {
	dir := t.TempDir()
	store, err := state.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	s := New(dir, store, config.Snapshots{Max: 10, MaxBytes: 1 << 20})
	const content = "an archive's bytes, as saved"
	sn, aerr := s.Save(state.Snapshot{Name: "kept", Language: "bash"}, func(w io.Writer) (int, error) {
		_, err := io.WriteString(w, content)
		return 0, err
	})
	if aerr != nil {
		t.Fatal(aerr)
	}
	f, _, aerr := s.Open("kept")
	if aerr != nil {
		t.Fatal(aerr)
	}
	got, _ := io.ReadAll(f)
	f.Close()
	if string(got) != content {
		t.Fatalf("opened %q", got)
	}
	for _, edit := range []string{strings.Replace(content, "saved", "SAVED", 1), content + " and more"} {
		if err := os.WriteFile(s.path(sn.SHA256), []byte(edit), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, _, aerr := s.Open("kept"); !errdefs.Is(aerr, errdefs.SnapshotDamaged) || !strings.Contains(aerr.Error(), s.path(sn.SHA256)) || !strings.Contains(aerr.Error(), "snapshot rm kept") {
			t.Errorf("an edited archive (%d bytes): %v", len(edit), aerr)
		}
	}
}
