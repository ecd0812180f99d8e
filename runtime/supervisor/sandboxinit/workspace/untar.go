package workspace

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"slices"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sandboxd/sandboxd/runtime/supervisor"
)

// startUntar receives a tar archive of a workspace (as OpTar makes it,
// names under "workspace/") in the in chunks that follow and extracts it
// into the workspace as it arrives. Everything is made through os.Root, so
// no name and no link met on the way leads out of the workspace; links in
// the archive are made as links and never followed; only directories,
// regular files and symbolic links are made; project_files is left alone.
func (s *Server) startUntar(id uint64, req supervisor.FileRequest) {
	root, err := s.openWorkspace()
	if err != nil {
		s.done(id, Failure(err))
		return
	}
	pr, pw := io.Pipe()
	result := make(chan error, 1)
	go func() {
		err := extract(root, tar.NewReader(pr))
		root.Close()
		pr.CloseWithError(err) // a sender past a failure gets its error
		result <- err
	}()
	s.mu.Lock()
	s.uploads[id] = &upload{w: pw, max: req.Max, end: func(err error) *supervisor.FileResult {
		if err != nil {
			pw.CloseWithError(err)
		} else {
			pw.Close()
		}
		if xerr := <-result; err == nil {
			err = xerr
		}
		if err != nil {
			return Failure(err)
		}
		return nil
	}}
	s.mu.Unlock()
}

// extract writes the archive's entries into root. Directories get their
// modes and times last, once nothing more is made in them.
func extract(root *os.Root, tr *tar.Reader) error {
	var dirs []*tar.Header
	defer func() {
		for _, hdr := range slices.Backward(dirs) {
			_ = root.Chmod(hdr.Name, fs.FileMode(hdr.Mode))
			_ = root.Chtimes(hdr.Name, hdr.ModTime, hdr.ModTime)
		}
	}()
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("reading the archive: %w", err)
		}
		name, ok := strings.CutPrefix(path.Clean(hdr.Name), "workspace")
		name = strings.TrimPrefix(name, "/")
		switch {
		case !ok || name == "" || name == "." || name == projectDir || strings.HasPrefix(name, projectDir+"/"):
			continue // the workspace itself, and what is not the session's own
		case path.IsAbs(name) || name == ".." || strings.HasPrefix(name, "../"):
			return fmt.Errorf("%s: a name outside the workspace", hdr.Name)
		}
		mode := fs.FileMode(hdr.Mode) & 0o7777 &^ (fs.ModeSetuid | fs.ModeSetgid)
		switch hdr.Typeflag {
		case tar.TypeDir:
			if err := root.MkdirAll(name, 0o755); err != nil {
				return err
			}
			_ = root.Chmod(name, mode|0o700) // writable for what goes in it, until the end
			dirs = append(dirs, &tar.Header{Name: name, Mode: int64(mode), ModTime: hdr.ModTime})
			continue
		case tar.TypeReg:
			write := func(f *os.File) error { return writeHoles(f, tr, hdr.Size) } // zeros come back as holes
			if rec, ok := hdr.PAXRecords[sparseRecord]; ok {
				size, runs, err := sparseRuns(rec, hdr.Size)
				if err != nil {
					return fmt.Errorf("%s: %w", hdr.Name, err)
				}
				write = func(f *os.File) error { return writeRuns(f, tr, size, runs) }
			}
			if err := writeEntry(root, name, mode, write); err != nil {
				return err
			}
		case tar.TypeLink:
			// A second name of a file made before, within the workspace.
			target, ok := strings.CutPrefix(path.Clean(hdr.Linkname), "workspace/")
			if !ok || target == "" || target == projectDir || strings.HasPrefix(target, projectDir+"/") || strings.HasPrefix(target, "../") {
				return fmt.Errorf("%s: a hard link to %s, outside the workspace's own files", hdr.Name, hdr.Linkname)
			}
			_ = root.Remove(name)
			if err := root.Link(target, name); err != nil {
				return err
			}
			continue
		case tar.TypeSymlink:
			_ = root.Remove(name)
			if err := root.Symlink(hdr.Linkname, name); err != nil {
				return err
			}
			_ = lchtimes(root, name, hdr.ModTime)
			continue
		default:
			continue // devices, FIFOs: never made
		}
		_ = root.Chtimes(name, hdr.ModTime, hdr.ModTime)
	}
}

func writeEntry(root *os.Root, name string, mode fs.FileMode, write func(*os.File) error) error {
	if dir := path.Dir(name); dir != "." {
		if err := root.MkdirAll(dir, 0o755); err != nil {
			return err
		}
	}
	_ = root.Remove(name) // a link or a FIFO of that name is replaced, never written through
	f, err := root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, mode)
	if err != nil {
		return err
	}
	err = write(f)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = root.Chmod(name, mode)
	}
	return err
}

// lchtimes sets the times of the link name itself, never its target: in
// its directory, opened through root.
func lchtimes(root *os.Root, name string, t time.Time) error {
	dir, err := root.Open(path.Dir(name))
	if err != nil {
		return err
	}
	defer dir.Close()
	ts := []unix.Timespec{unix.NsecToTimespec(t.UnixNano()), unix.NsecToTimespec(t.UnixNano())}
	return unix.UtimesNanoAt(int(dir.Fd()), path.Base(name), ts, unix.AT_SYMLINK_NOFOLLOW)
}
