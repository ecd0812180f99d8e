package sandboxinit

import (
	"fmt"
	"os"

	"github.com/landlock-lsm/go-landlock/landlock"
)

// terminationLog is the file a kubelet mounts into every container of a
// pod, from the node's disk, writable by anyone (0666), with no bound and
// outside the pod's ephemeral storage: a program could fill the node's
// disk through it.
const terminationLog = "/dev/termination-log"

// keepTerminationLog takes the right to write the termination log from
// us and every program we start: a Landlock domain (the kernel's, open to
// an unprivileged process) in which writing is allowed only where a
// sandbox writes, its scratch places and devices; the root is read-only
// already. RLIMIT_FSIZE would bound the log, and a sparse workspace file
// with it. Where there is no termination log (not a pod), it does
// nothing; where the kernel has no Landlock of ABI 3 (Linux 6.2), it
// says so.
func keepTerminationLog() {
	if _, err := os.Lstat(terminationLog); err != nil {
		return
	}
	rw := append([]string{containerPaths.workspace, containerPaths.tmp, "/dev/pts", "/proc"}, containerPaths.scratch...)
	err := landlock.V3.RestrictPaths(
		landlock.RODirs("/"),
		landlock.RWDirs(rw...).IgnoreIfMissing(),
		landlock.RWFiles("/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty", "/dev/ptmx").IgnoreIfMissing(),
	)
	if err != nil {
		fmt.Fprintf(os.Stderr, "sandbox-init: programs may write %s, which has no bound: %v\n", terminationLog, err)
	}
}
