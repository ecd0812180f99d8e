// Package units owns the quantities that the wire, the configuration and
// the daemon share: sizes in bytes and durations, each read in the forms
// people write ("256MiB", "1.5s") and written back in one of them. Package
// api names them for its clients; other packages use them from here, not
// from the wire's package.
package units

import (
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	dockerunits "github.com/docker/go-units"
)

// Duration is a time.Duration that reads "1.5s", "200ms" or a number of
// seconds, and writes the string form.
type Duration time.Duration

// MarshalJSON writes "1.5s"; zero is "0s".
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

// UnmarshalJSON accepts a Go duration string or a number of seconds.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		var secs float64
		if err := json.Unmarshal(b, &secs); err != nil {
			return fmt.Errorf("a duration is a string like \"2s\" or a number of seconds, not %s", b)
		}
		*d = Duration(secs * float64(time.Second))
		return nil
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("%q is not a duration: use forms like \"500ms\", \"2s\", \"1m\"", s)
	}
	*d = Duration(v)
	return nil
}

// ByteSize is a number of bytes that reads "128m", "256MiB", "1g" (powers
// of 1024) or a plain number, and writes a plain number.
type ByteSize int64

// UnmarshalJSON accepts a size string or a number of bytes.
func (b *ByteSize) UnmarshalJSON(data []byte) error {
	var s string
	if err := json.Unmarshal(data, &s); err != nil {
		var n int64
		if err := json.Unmarshal(data, &n); err != nil {
			return fmt.Errorf("a size is a string like \"128MiB\" or a number of bytes, not %s", data)
		}
		*b = ByteSize(n)
		return nil
	}
	n, err := ParseByteSize(s)
	if err != nil {
		return err
	}
	*b = ByteSize(n)
	return nil
}

// ParseByteSize reads "128m", "256MiB", "1g", "4096" as bytes (k, m, g are
// powers of 1024, as docker run --memory takes them).
func ParseByteSize(s string) (int64, error) {
	if n, err := strconv.ParseInt(s, 10, 64); err == nil && n >= 0 {
		return n, nil
	}
	n, err := dockerunits.RAMInBytes(s)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("%q is not a size: use forms like \"128MiB\", \"128m\", \"1g\"", s)
	}
	return n, nil
}

// String writes sizes the way people read them: 128MiB.
func (b ByteSize) String() string { return dockerunits.BytesSize(float64(b)) }
