package state

import (
	"crypto/rand"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// KeySize is the size of a key Key keeps.
const KeySize = 32

// Key reads the secret key state_dir/name, making it (mode 0600) the
// first time: what sandboxd signs with, kept across restarts. what says
// what it is for, in errors.
func Key(dir, name, what string) ([]byte, error) {
	path := filepath.Join(dir, name)
	key, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		key = make([]byte, KeySize)
		_, _ = rand.Read(key)
		if err = os.WriteFile(path, key, 0o600); err != nil {
			return nil, fmt.Errorf("writing %s: %w", what, err)
		}
	} else if err != nil {
		return nil, fmt.Errorf("reading %s: %w", what, err)
	}
	if len(key) != KeySize {
		return nil, fmt.Errorf("%s %s is %d bytes, not %d: remove it and sandboxd makes a new one", what, path, len(key), KeySize)
	}
	return key, nil
}
