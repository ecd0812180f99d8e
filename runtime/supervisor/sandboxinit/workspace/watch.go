package workspace

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"strconv"
	"sync"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/sandboxd/sandboxd/runtime/supervisor"
)

// Watches: inotify on a workspace directory (and, recursive, every
// directory below it, new ones included), each event a path relative to
// the workspace. A directory is opened through os.Root first and watched
// through its descriptor's /proc link, so a link planted anywhere on the
// way leads nowhere out of the workspace. Events go out in batches every
// watchBatch, in the order they came, each once; past watchMaxBatch a
// batch says how many it left out.

// Bounds of one watch.
const (
	watchBatch    = 50 * time.Millisecond
	watchMaxBatch = 256
	watchMaxDirs  = 1024
)

// watch is one watch in progress.
type watch struct {
	fd   int
	file *os.File // fd, for reads the close interrupts
	root *os.Root
	rec  bool

	mu   sync.Mutex
	dirs map[int32]string // watch descriptor -> directory, relative to the workspace
	top  int32

	closing sync.Once
}

// startWatch begins a watch; the call ends when it is killed, or the
// directory goes.
func (s *Server) startWatch(id uint64, req supervisor.FileRequest) {
	root, err := s.openWorkspace()
	if err != nil {
		s.done(id, Failure(err))
		return
	}
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	if err != nil {
		root.Close()
		s.done(id, Failure(err))
		return
	}
	w := &watch{fd: fd, file: os.NewFile(uintptr(fd), "inotify"), root: root, rec: req.Recursive, dirs: map[int32]string{}}
	top := path.Clean(req.Path)
	if err := w.add(top); err != nil {
		w.close()
		s.done(id, Failure(err))
		return
	}
	if w.rec {
		w.addBelow(top)
	}
	s.mu.Lock()
	s.watches[id] = w
	s.mu.Unlock()
	send := func(evs []supervisor.FileEvent) {
		data, _ := json.Marshal(evs)
		s.send(supervisor.Message{Op: supervisor.OpOut, ID: id, Stream: supervisor.Events, Data: data})
	}
	send([]supervisor.FileEvent{}) // set: what changes from now on is seen
	go func() {
		res := w.run(send)
		s.mu.Lock()
		delete(s.watches, id)
		s.mu.Unlock()
		s.done(id, res)
	}()
}

// add watches one directory, named relative to the workspace.
func (w *watch) add(dir string) error {
	d, err := w.root.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if st, err := d.Stat(); err != nil || !st.IsDir() {
		return fmt.Errorf("%s is not a directory", dir)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.dirs) >= watchMaxDirs {
		return nil // deeper directories go unwatched
	}
	const mask = unix.IN_CREATE | unix.IN_MODIFY | unix.IN_CLOSE_WRITE | unix.IN_DELETE | unix.IN_MOVED_FROM |
		unix.IN_MOVED_TO | unix.IN_ATTRIB | unix.IN_DELETE_SELF | unix.IN_ONLYDIR | unix.IN_EXCL_UNLINK
	wd, err := unix.InotifyAddWatch(w.fd, "/proc/self/fd/"+strconv.Itoa(int(d.Fd())), mask)
	if err != nil {
		return err
	}
	if len(w.dirs) == 0 {
		w.top = int32(wd)
	}
	w.dirs[int32(wd)] = dir
	return nil
}

// addBelow watches the directories under dir, as far as the bound goes;
// it returns what it found there.
func (w *watch) addBelow(dir string) []supervisor.Entry {
	entries, err := walk(w.root, dir, true)
	if err != nil || len(entries) == 0 {
		return nil
	}
	for _, e := range entries[1:] {
		if e.Type == "dir" {
			_ = w.add(e.Path)
		}
	}
	return entries[1:]
}

// addNew watches a directory that came into a recursive watch, and the
// ones below it. What was made in it before its watch was set is told as
// created: a program that makes a directory and writes in it at once
// loses nothing but what it also removed meanwhile.
func (w *watch) addNew(dir string) []supervisor.FileEvent {
	if w.add(dir) != nil {
		return nil
	}
	var evs []supervisor.FileEvent
	for _, e := range w.addBelow(dir) {
		evs = append(evs, supervisor.FileEvent{Path: e.Path, Type: supervisor.EventCreate})
	}
	return evs
}

// close ends the watch: its reads end, and run with them.
func (w *watch) close() {
	w.closing.Do(func() {
		w.file.Close()
		w.root.Close()
	})
}

// run reads events until the watch is stopped or its directory goes,
// sending them in batches.
func (w *watch) run(send func([]supervisor.FileEvent)) *supervisor.FileResult {
	raw := make(chan []supervisor.FileEvent, 64)
	ended := make(chan error, 1)
	go func() { ended <- w.read(raw) }()
	// A batch keeps the order events came in, each once.
	var batch []supervisor.FileEvent
	inBatch := map[supervisor.FileEvent]bool{}
	dropped := 0
	add := func(ev supervisor.FileEvent) {
		switch {
		case inBatch[ev]:
		case len(batch) >= watchMaxBatch:
			dropped++
		default:
			inBatch[ev] = true
			batch = append(batch, ev)
		}
	}
	flush := func() {
		if len(batch) == 0 && dropped == 0 {
			return
		}
		if dropped > 0 {
			batch = append(batch, supervisor.FileEvent{Type: supervisor.EventOverflow, Count: dropped})
		}
		send(batch)
		batch, dropped = nil, 0
		clear(inBatch)
	}
	tick := time.NewTicker(watchBatch)
	defer tick.Stop()
	for {
		select {
		case evs := <-raw:
			for _, ev := range evs {
				add(ev)
			}
		case <-tick.C:
			flush()
		case err := <-ended:
			for len(raw) > 0 {
				for _, ev := range <-raw {
					add(ev)
				}
			}
			flush()
			w.close()
			if err != nil {
				return &supervisor.FileResult{ErrorKind: supervisor.ErrNotFound, Error: err.Error()}
			}
			return &supervisor.FileResult{}
		}
	}
}

// errGone ends a watch whose directory was removed or moved away.
var errGone = errors.New("the watched directory is gone")

// read turns inotify's records into events until the descriptor closes
// (nil) or the watched directory goes (errGone).
func (w *watch) read(out chan<- []supervisor.FileEvent) error {
	buf := make([]byte, 64<<10)
	for {
		n, err := w.file.Read(buf)
		if err != nil {
			if errors.Is(err, os.ErrClosed) || errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
		var evs []supervisor.FileEvent
		for off := 0; off+unix.SizeofInotifyEvent <= n; {
			ev := (*unix.InotifyEvent)(unsafe.Pointer(&buf[off]))
			nameBytes := buf[off+unix.SizeofInotifyEvent : off+unix.SizeofInotifyEvent+int(ev.Len)]
			off += unix.SizeofInotifyEvent + int(ev.Len)
			name := string(nameBytes[:clen(nameBytes)])
			w.mu.Lock()
			dir, known := w.dirs[ev.Wd]
			top := ev.Wd == w.top
			if ev.Mask&unix.IN_IGNORED != 0 {
				delete(w.dirs, ev.Wd)
			}
			w.mu.Unlock()
			switch {
			case ev.Mask&unix.IN_Q_OVERFLOW != 0:
				evs = append(evs, supervisor.FileEvent{Type: supervisor.EventOverflow, Count: 1})
				continue
			case ev.Mask&(unix.IN_DELETE_SELF|unix.IN_IGNORED) != 0 && top:
				out <- evs
				return errGone
			case !known || name == "":
				continue
			}
			p := path.Join(dir, name)
			kind := eventKind(ev.Mask)
			if kind == "" {
				continue
			}
			evs = append(evs, supervisor.FileEvent{Path: p, Type: kind})
			if w.rec && ev.Mask&unix.IN_ISDIR != 0 && ev.Mask&(unix.IN_CREATE|unix.IN_MOVED_TO) != 0 {
				evs = append(evs, w.addNew(p)...)
			}
		}
		if len(evs) > 0 {
			out <- evs
		}
	}
}

func eventKind(mask uint32) string {
	switch {
	case mask&unix.IN_CREATE != 0:
		return supervisor.EventCreate
	case mask&(unix.IN_MODIFY|unix.IN_CLOSE_WRITE) != 0:
		return supervisor.EventWrite
	case mask&unix.IN_DELETE != 0:
		return supervisor.EventRemove
	case mask&(unix.IN_MOVED_FROM|unix.IN_MOVED_TO) != 0:
		return supervisor.EventRename
	case mask&unix.IN_ATTRIB != 0:
		return supervisor.EventChmod
	}
	return ""
}

// clen is the length of a NUL-padded name.
func clen(b []byte) int {
	for i, c := range b {
		if c == 0 {
			return i
		}
	}
	return len(b)
}
