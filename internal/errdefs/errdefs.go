// Package errdefs classifies the errors sandboxd's own packages return:
// each has a Kind, what went wrong as the caller must act on it, and a
// message for the person who reads it. Errors are classified where they
// arise, sentinels included (runtime.ErrImageMissing, pool.ErrExhausted).
// The wire's codes and HTTP statuses are the edges' business: one table
// in internal/wire gives each kind's, and the edges derive theirs from it.
package errdefs

import (
	"errors"
	"fmt"
)

// Kind is what went wrong, as the caller must act on it.
type Kind uint8

// The kinds. An error with none is Internal.
const (
	Internal           Kind = iota
	Invalid                 // the request is wrong: fix it
	UnknownLanguage         // no such language here
	NotFound                // no such session, execution, project, ...
	Conflict                // the thing is in a state that forbids it
	PolicyDenied            // a policy said no
	ApprovalDenied          // a person said no
	ApprovalTimeout         // nobody decided in time
	PoolExhausted           // no sandbox within the queue timeout: retry
	TooManySessions         // the sessions' ceiling
	TooManyConnections      // a session's forwarded ports
	RuntimeUnavailable      // the engine or cluster does not answer
	ImageMissing            // the language's image is not there
	ImageBuilding           // it is being built: retry
	PluginUnavailable       // the language's plugin is down
	ShuttingDown            // sandboxd is stopping: retry elsewhere
	SessionLost             // the session's sandbox is gone
	TooLarge                // over a size limit
	NoSpace                 // a disk is full
	Unauthorized            // no valid token
	Forbidden               // not from here
	SnapshotDamaged         // a snapshot's archive is not what was saved
)

// Error is a classified error, wrapping its cause if it has one.
type Error struct {
	kind Kind
	msg  string
	err  error
}

// New is an error of kind k that says msg.
func New(k Kind, msg string) error { return &Error{kind: k, msg: msg} }

// Errorf is an error of kind k with a formatted message; a %w in it wraps
// its operand, as fmt.Errorf does.
func Errorf(k Kind, format string, args ...any) error {
	err := fmt.Errorf(format, args...)
	return &Error{kind: k, msg: err.Error(), err: errors.Unwrap(err)}
}

func (e *Error) Error() string { return e.msg }

// Kind is e's kind.
func (e *Error) Kind() Kind { return e.kind }

func (e *Error) Unwrap() error { return e.err }

// kinded is an error that knows its kind: an Error, or another package's
// own type (a policy's denial carries its findings too).
type kinded interface {
	error
	Kind() Kind
}

// KindOf is the kind of the first error in err's chain that has one;
// Internal if none has.
func KindOf(err error) Kind {
	var k kinded
	if errors.As(err, &k) {
		return k.Kind()
	}
	return Internal
}

// Is says whether err is of kind k.
func Is(err error, k Kind) bool { return err != nil && KindOf(err) == k }
