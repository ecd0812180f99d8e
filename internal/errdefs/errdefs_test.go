package errdefs

import (
	"errors"
	"fmt"
	"io/fs"
	"testing"
)

// policyDenial stands for another package's own error type with a kind.
type policyDenial struct{}

func (policyDenial) Error() string { return "denied" }
func (policyDenial) Kind() Kind    { return PolicyDenied }

func TestKinds(t *testing.T) {
	cause := fs.ErrNotExist
	wrapped := Errorf(NotFound, "session %s: %w", "s1", cause)
	for _, c := range []struct {
		name string
		err  error
		want Kind
	}{
		{"nil", nil, Internal},
		{"unclassified", errors.New("boom"), Internal},
		{"New", New(Invalid, "bad"), Invalid},
		{"Errorf", wrapped, NotFound},
		{"wrapped by fmt", fmt.Errorf("outer: %w", wrapped), NotFound},
		{"another package's type", fmt.Errorf("run: %w", policyDenial{}), PolicyDenied},
		{"the first kind in the chain wins", Errorf(TooLarge, "upload: %w", New(NoSpace, "full")), TooLarge},
	} {
		if got := KindOf(c.err); got != c.want {
			t.Errorf("%s: kind %d, want %d", c.name, got, c.want)
		}
		if c.err != nil && !Is(c.err, c.want) {
			t.Errorf("%s: Is(%d) false", c.name, c.want)
		}
	}
	if Is(nil, Internal) {
		t.Error("nil is of no kind")
	}
	if wrapped.Error() != "session s1: file does not exist" || !errors.Is(wrapped, fs.ErrNotExist) {
		t.Errorf("Errorf: %q, wraps its cause %v", wrapped, errors.Is(wrapped, fs.ErrNotExist))
	}
	if errors.Unwrap(New(Invalid, "bad")) != nil {
		t.Error("New wraps nothing")
	}
}
