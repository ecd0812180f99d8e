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

// ShieldInit keeps the signals a program can send from ending a
// namespace's first process: those the Go runtime leaves at their default
// action get a handler that does nothing, and those it takes for its own
// faults are filtered first (see filterFaults).
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
	return filterFaults()
}

// faults are the signals the Go runtime takes for a fault of its own
// unless their si_code says kill or tgkill sent them (SI_USER, SI_TKILL):
// sent with sigqueue's SI_QUEUE, it throws, and ends the process.
var faults = []int{int(unix.SIGILL), int(unix.SIGTRAP), int(unix.SIGBUS), int(unix.SIGFPE), int(unix.SIGSEGV), int(unix.SIGSYS)}

// goFaultHandler is the runtime's handler of faults, where faultFilter
// sends those the kernel raised.
var goFaultHandler uintptr

func faultFilterPC() uintptr

// filterFaults puts faultFilter in front of the runtime's handler for
// faults, so that one a process queued does not end us.
func filterFaults() error {
	for _, sig := range faults {
		var old sigaction
		if _, _, errno := unix.RawSyscall6(unix.SYS_RT_SIGACTION, uintptr(sig), 0, uintptr(unsafe.Pointer(&old)), 8, 0, 0); errno != 0 {
			return fmt.Errorf("reading signal %d's handler: %w", sig, errno)
		}
		switch {
		case uintptr(old.handler) == faultFilterPC():
			continue // done already
		case goFaultHandler == 0 && old.handler > 1:
			goFaultHandler = uintptr(old.handler)
		case uintptr(old.handler) != goFaultHandler:
			return fmt.Errorf("signal %d's handler is not the runtime's", sig)
		}
		old.handler = uint64(faultFilterPC())
		if _, _, errno := unix.RawSyscall6(unix.SYS_RT_SIGACTION, uintptr(sig), uintptr(unsafe.Pointer(&old)), 0, 8, 0, 0); errno != 0 {
			return fmt.Errorf("filtering signal %d: %w", sig, errno)
		}
	}
	return nil
}
