//go:build !amd64 && !arm64

package spawn

// ShieldInit leaves the signals the Go runtime does not handle at their
// default: it has no handler to give them on this architecture (see
// shield.go).
func ShieldInit() error { return nil }
