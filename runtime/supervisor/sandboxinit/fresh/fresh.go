// Package fresh is how the supervisor tells that a one-shot sandbox is as
// fresh as a new container's between runs: a view of what a program could
// find that another left (the writable places' entries, their extended
// attributes, SysV IPC objects, bound sockets), compared with the view
// taken when the sandbox was new; and the SysV IPC objects a reset
// removes.
package fresh

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"syscall"

	"github.com/sandboxd/sandboxd/runtime/supervisor/sandboxinit/ports"
	"github.com/sandboxd/sandboxd/runtime/supervisor/sandboxinit/workspace"
)

// maxObserved bounds a view: a sandbox whose reset left more than this
// is not fresh, whatever the rest says.
const maxObserved = 4096

// Differences says what now has more of than fresh had, and the other way.
func Differences(fresh, now []string) []string {
	count := map[string]int{}
	for _, e := range now {
		count[e]++
	}
	for _, e := range fresh {
		count[e]--
	}
	var out []string
	for e, n := range count {
		switch {
		case n > 0:
			out = append(out, "left: "+e)
		case n < 0:
			out = append(out, "gone: "+e)
		}
	}
	slices.Sort(out)
	return out
}

// Observe lists what a program could find that another left: every entry
// of the writable places with its type, mode, owner and size, extended
// attributes, SysV IPC objects, and sockets bound in the sandbox's network
// namespace. Times and inode numbers are left out: a fresh sandbox's
// differ from another's too.
func Observe(places []string, kernelObjects func() []string) []string {
	var out []string
	for _, place := range places {
		_ = filepath.WalkDir(place, func(p string, d fs.DirEntry, err error) error {
			if len(out) >= maxObserved {
				return fs.SkipAll
			}
			if err != nil {
				if !errors.Is(err, fs.ErrNotExist) || p != place {
					out = append(out, fmt.Sprintf("unreadable %s: %v", p, err))
				}
				return nil
			}
			out = append(out, describe(p, d))
			return nil
		})
		if names := workspace.Xattrs(place); names != "" {
			out = append(out, "xattr "+place+" "+names)
		}
	}
	if kernelObjects != nil {
		out = append(out, kernelObjects()...)
	}
	return out
}

// describe is one entry of a view.
func describe(p string, d fs.DirEntry) string {
	info, err := d.Info()
	if err != nil {
		return fmt.Sprintf("unreadable %s: %v", p, err)
	}
	size := info.Size()
	if d.IsDir() {
		size = 0 // a directory's size tells what it held once
	}
	owner := ""
	if st, ok := info.Sys().(*syscall.Stat_t); ok {
		owner = fmt.Sprintf(" %d:%d", st.Uid, st.Gid)
	}
	return fmt.Sprintf("%s %v%s %d", p, info.Mode(), owner, size)
}

// KernelObjects lists what a sandbox's namespaces hold that a program may
// leave behind: SysV IPC objects and bound sockets.
func KernelObjects() []string { return append(sysvIPC.list(), ports.Bound()...) }
