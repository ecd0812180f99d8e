// Package hostmem reads how much memory the host has available, by which
// sandboxd sheds what it keeps ahead of need (frozen sessions go to disk,
// warm pools shrink) when the host runs low.
package hostmem

import (
	"os"
	"strconv"
	"strings"
)

// Available is the host's MemAvailable (/proc/meminfo), in bytes; ok is
// false where it cannot be read.
func Available() (bytes int64, ok bool) {
	data, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0, false
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, found := strings.CutPrefix(line, "MemAvailable:"); found {
			if kib, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64); err == nil {
				return kib << 10, true
			}
		}
	}
	return 0, false
}

// Low says whether the host has less than threshold bytes available; a
// threshold of 0, or a host whose memory cannot be read, is never low.
func Low(threshold int64) bool {
	avail, ok := Available()
	return threshold > 0 && ok && avail < threshold
}
