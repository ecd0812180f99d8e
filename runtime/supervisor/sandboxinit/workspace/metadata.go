package workspace

import (
	"errors"
	"fmt"
	"os"
	"path"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/sandboxd/sandboxd/runtime/supervisor"
)

// A file's user-defined metadata is its extended attributes under
// supervisor.MetadataXattr: set on an upload, which replaces what the file
// had, and read with its entry.

// setMetadata replaces f's metadata with m. A filesystem that keeps no
// extended attributes has none to clear, and refuses any to set.
func setMetadata(f *os.File, m map[string]string) error {
	if err := supervisor.CheckMetadata(m); err != nil {
		return err
	}
	fd := int(f.Fd())
	names, err := xattrNames(func(buf []byte) (int, error) { return unix.Flistxattr(fd, buf) })
	if err != nil && !(errors.Is(err, unix.ENOTSUP) && len(m) == 0) {
		return fmt.Errorf("reading its metadata: %w", err)
	}
	for _, n := range names {
		if _, kept := m[strings.TrimPrefix(n, supervisor.MetadataXattr)]; !kept {
			if err := unix.Fremovexattr(fd, n); err != nil && !errors.Is(err, unix.ENODATA) {
				return fmt.Errorf("clearing its metadata: %w", err)
			}
		}
	}
	for k, v := range m {
		if err := unix.Fsetxattr(fd, supervisor.MetadataXattr+k, []byte(v), 0); err != nil {
			return fmt.Errorf("setting its metadata: %w", err)
		}
	}
	return nil
}

// metadata is the metadata of root's file name, nil when it has none. It
// is read through the file's directory, not the file, which is neither
// opened nor followed: a FIFO does not block it, a link is not read. What a
// program set past supervisor.MaxMetadataBytes is left out.
func metadata(root *os.Root, name string) map[string]string {
	dir, err := root.Open(path.Dir(name))
	if err != nil {
		return nil
	}
	defer dir.Close()
	at := fmt.Sprintf("/proc/self/fd/%d/%s", dir.Fd(), path.Base(name))
	names, _ := xattrNames(func(buf []byte) (int, error) { return unix.Llistxattr(at, buf) })
	var m map[string]string
	total := 0
	for _, n := range names {
		size, err := unix.Lgetxattr(at, n, nil)
		if err != nil || total+len(n)+size > supervisor.MaxMetadataBytes {
			continue
		}
		total += len(n) + size
		v := make([]byte, size)
		if size, err = unix.Lgetxattr(at, n, v); err != nil {
			continue
		}
		if m == nil {
			m = map[string]string{}
		}
		m[strings.TrimPrefix(n, supervisor.MetadataXattr)] = string(v[:size])
	}
	return m
}

// xattrNames lists the names list gives that are in the metadata's
// namespace; list is a listxattr(2) on some file.
func xattrNames(list func([]byte) (int, error)) ([]string, error) {
	size, err := list(nil)
	if err != nil || size == 0 {
		return nil, err
	}
	buf := make([]byte, size)
	if size, err = list(buf); err != nil {
		return nil, err
	}
	var out []string
	for _, n := range strings.Split(string(buf[:size]), "\x00") {
		if strings.HasPrefix(n, supervisor.MetadataXattr) && len(n) > len(supervisor.MetadataXattr) {
			out = append(out, n)
		}
	}
	return out, nil
}
