//go:build amd64 || arm64

package spawn

import (
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"
)

// sigaction is the kernel's struct sigaction, as rt_sigaction takes it.
type sigaction struct{ handler, flags, restorer, mask uint64 }

// unhandled are the signals the Go runtime leaves at their default action
// (it keeps them for C libraries: glibc's SIGCANCEL, musl's SIGSYNCCALL)
// and does not hand to os/signal.
var unhandled = []int{32, 34}

// nothingPC is the address of nothing (shield_*.s), a signal handler that
// returns at once.
func nothingPC() uintptr

// ShieldInit gives the signals the Go runtime leaves at their default
// action a handler that does nothing, so that a namespace's first process
// lives through them.
//
// Linux is meant to drop a signal at its default action sent to a PID
// namespace's first process from inside the namespace, but it delivers
// one that arrives while the thread it is sent to blocks it — as each
// thread does while it runs a Go signal handler — and it then ends the
// process: a program sending every signal to PID 1 killed sandbox-init
// with signal 32 or 34 about once in ten tries. A handler is what the
// kernel asks of an init that means to live, and unlike SIG_IGN, exec
// resets it: the programs we start get the default dispositions.
func ShieldInit() error {
	var goHandler sigaction // the runtime's own, whose flags and return trampoline we share
	if _, _, errno := unix.RawSyscall6(unix.SYS_RT_SIGACTION, uintptr(unix.SIGURG), 0, uintptr(unsafe.Pointer(&goHandler)), 8, 0, 0); errno != 0 {
		return fmt.Errorf("reading the Go runtime's signal handler: %w", errno)
	}
	act := sigaction{handler: uint64(nothingPC()), flags: goHandler.flags, restorer: goHandler.restorer, mask: goHandler.mask}
	for _, sig := range unhandled {
		if _, _, errno := unix.RawSyscall6(unix.SYS_RT_SIGACTION, uintptr(sig), uintptr(unsafe.Pointer(&act)), 0, 8, 0, 0); errno != 0 {
			return fmt.Errorf("handling signal %d: %w", sig, errno)
		}
	}
	return nil
}
