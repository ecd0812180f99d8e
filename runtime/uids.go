package runtime

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
)

// UIDRange is the host uids sandboxes run as, First to Last inclusive; each
// sandbox gets one of its own (and the gid of the same number), so the
// kernel's per-user limits (RLIMIT_NPROC, inotify instances, pipe buffers,
// pending signals, message queues) are per sandbox, never shared.
type UIDRange struct{ First, Last uint32 }

// DefaultUIDRange lies far above Debian's host users and the subordinate
// ranges it hands out (100000 + 65536 per user).
var DefaultUIDRange = UIDRange{First: 1_000_000_000, Last: 1_000_065_535}

func (r UIDRange) String() string { return fmt.Sprintf("%d-%d", r.First, r.Last) }

// Size is how many uids the range holds.
func (r UIDRange) Size() int { return int(r.Last-r.First) + 1 }

// ParseUIDRange reads "FIRST-LAST".
func ParseUIDRange(s string) (UIDRange, error) {
	a, b, ok := strings.Cut(strings.TrimSpace(s), "-")
	first, err1 := strconv.ParseUint(strings.TrimSpace(a), 10, 32)
	last, err2 := strconv.ParseUint(strings.TrimSpace(b), 10, 32)
	r := UIDRange{First: uint32(first), Last: uint32(last)}
	switch {
	case !ok || err1 != nil || err2 != nil:
		return r, fmt.Errorf("%q is not FIRST-LAST", s)
	case r.First < 1000:
		return r, fmt.Errorf("%q starts below 1000, among system users (and root)", s)
	case r.Last < r.First:
		return r, fmt.Errorf("%q ends before it starts", s)
	case r.Last == 1<<32-1:
		return r, fmt.Errorf("%q includes 4294967295, the kernel's invalid uid", s)
	}
	return r, nil
}

// CheckHost refuses a range that holds a user or group of the host, or
// overlaps a subordinate range handed out in /etc/subuid or /etc/subgid:
// a sandbox must not be able to act as any of them. etc is "/etc" but in
// tests.
func (r UIDRange) CheckHost(etc string) error {
	var problems []string
	for _, f := range []string{"passwd", "group"} {
		ids, err := readIDs(filepath.Join(etc, f), func(fields []string) (uint64, uint64, bool) {
			if len(fields) < 3 {
				return 0, 0, false
			}
			id, err := strconv.ParseUint(fields[2], 10, 32)
			return id, 1, err == nil
		})
		if err != nil {
			return err
		}
		for _, e := range ids {
			if r.overlaps(e.first, e.count) {
				problems = append(problems, fmt.Sprintf("%s has %s with id %d", filepath.Join(etc, f), e.name, e.first))
			}
		}
	}
	for _, f := range []string{"subuid", "subgid"} {
		ids, err := readIDs(filepath.Join(etc, f), func(fields []string) (uint64, uint64, bool) {
			if len(fields) < 3 {
				return 0, 0, false
			}
			first, err1 := strconv.ParseUint(fields[1], 10, 32)
			count, err2 := strconv.ParseUint(fields[2], 10, 32)
			return first, count, err1 == nil && err2 == nil
		})
		if err != nil {
			return err
		}
		for _, e := range ids {
			if r.overlaps(e.first, e.count) {
				problems = append(problems, fmt.Sprintf("%s gives %s %d-%d", filepath.Join(etc, f), e.name, e.first, e.first+e.count-1))
			}
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("sandbox uids %s overlap the host's: %s", r, strings.Join(problems, "; "))
	}
	return nil
}

func (r UIDRange) overlaps(first, count uint64) bool {
	return count > 0 && first <= uint64(r.Last) && first+count-1 >= uint64(r.First)
}

type idEntry struct {
	name         string
	first, count uint64
}

// readIDs reads the id ranges of a colon-separated file; a missing file
// holds none.
func readIDs(path string, parse func(fields []string) (first, count uint64, ok bool)) ([]idEntry, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []idEntry
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Split(sc.Text(), ":")
		if first, count, ok := parse(fields); ok {
			out = append(out, idEntry{name: fields[0], first: first, count: count})
		}
	}
	return out, sc.Err()
}

// ErrNoUID means every uid of the range is in use.
var ErrNoUID = errors.New("every sandbox uid is in use")

// UIDs hands out the uids of a range, one per sandbox, and takes them back
// when the sandbox is gone. Safe for concurrent use.
type UIDs struct {
	r    UIDRange
	mu   sync.Mutex
	used map[uint32]bool
	next uint32 // where the search for a free one starts: uids rotate, so a freed one rests
}

// NewUIDs hands out the uids of r.
func NewUIDs(r UIDRange) *UIDs { return &UIDs{r: r, used: map[uint32]bool{}, next: r.First} }

// Take returns a free uid.
func (u *UIDs) Take() (uint32, error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	for i := 0; i < u.r.Size(); i++ {
		id := u.next
		if u.next == u.r.Last {
			u.next = u.r.First
		} else {
			u.next++
		}
		if !u.used[id] {
			u.used[id] = true
			return id, nil
		}
	}
	return 0, fmt.Errorf("%w (%d of %s): raise the range or lower pool and session maxima", ErrNoUID, u.r.Size(), u.r)
}

// Mark records a uid found in use (a container that outlived a restart).
func (u *UIDs) Mark(id uint32) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.used[id] = true
}

// Release gives a uid back once nothing runs as it.
func (u *UIDs) Release(id uint32) {
	u.mu.Lock()
	defer u.mu.Unlock()
	delete(u.used, id)
}
