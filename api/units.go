package api

import "github.com/sandboxd/sandboxd/internal/units"

// Duration is a time.Duration that reads "1.5s", "200ms" or a number of
// seconds, and writes the string form.
type Duration = units.Duration

// ByteSize is a number of bytes that reads "128m", "256MiB", "1g" (powers
// of 1024) or a plain number, and writes a plain number.
type ByteSize = units.ByteSize
