# sandboxd's warm start for Python (see the language package's Warm): the
# warm process is `python3 main.py` with this file as sitecustomize. It
# runs once the interpreter is up, before main.py is opened: it says it is
# ready, waits for the run, makes the process the run's (argv, environment,
# directory), puts back what a fresh start has (sys.path, the image's own
# sitecustomize) and returns; the interpreter then runs main.py as usual,
# so __main__, tracebacks and the exit are the interpreter's own.
#
# Started with SANDBOXD_WARM_FORK=1, it is a zygote instead (see the
# supervisor's zygote.go): loaded once and kept across runs, it forks
# each warm process, which then goes on as above. The zygote runs as the
# programs' uid, so it keeps out of their reach: it is not dumpable (no
# ptrace, no /proc/PID/mem or fd of it) and blocks the signals it may
# (SIGCHLD aside, which it ignores). The supervisor checks, before each
# fork, that no program changed what a fork would inherit from it
# (limits, nice, affinity, pending signals).


def _sandboxd_zygote():
    import sys

    # What a fresh start has loaded, and the import system's cache of it.
    fresh, fresh_paths = set(sys.modules), set(sys.path_importer_cache)
    import ctypes
    import fcntl
    import os
    import signal
    import socket

    libc = ctypes.CDLL(None, use_errno=True)
    PR_SET_DUMPABLE = 4
    if libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_DUMPABLE)")
    # SIGCHLD stays unblocked (and ignored, as by default): blocked, each
    # fork's would stay pending, and the zygote would look changed.
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, signal.valid_signals() - {signal.SIGCHLD})
    control = socket.socket(fileno=3)
    os.write(4, b"ready\n")
    os.close(4)
    while True:
        try:
            _, fds, _, _ = socket.recv_fds(control, 1, 5)
        except OSError:
            os._exit(0)
        if len(fds) != 5:
            os._exit(0)  # the supervisor is gone, or not speaking to us
        first = os.fork()
        if first == 0:
            # Forked twice, so that the warm process is the supervisor's
            # child (PID 1 takes the orphan) and it reaps it, as any.
            try:
                pid = os.fork()
            except OSError as e:
                control.sendall(b"error %s\n" % str(e).encode())
                os._exit(1)
            if pid:
                control.sendall(b"pid %d\n" % pid)
                os._exit(0)
            # The program starts once the fork between us is gone, as a
            # fresh start's is the supervisor's child from its first line
            # (os.getppid() says so, whatever the timing). A parent out of
            # our PID namespace reads as 0 either way: nothing to wait for.
            parent = os.getppid()
            for _ in range(1 << 16):
                if parent == 0 or os.getppid() != parent:
                    break
                os.sched_yield()
            control.close()
            high = [fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 16) for fd in fds]
            for fd in fds:
                os.close(fd)
            for i, fd in enumerate(high):
                os.dup2(fd, i)
                os.close(fd)
            os.setpgid(0, 0)
            libc.prctl(PR_SET_DUMPABLE, 1, 0, 0, 0)
            signal.pthread_sigmask(signal.SIG_SETMASK, mask)
            for name in set(sys.modules) - fresh:
                del sys.modules[name]
            for path in set(sys.path_importer_cache) - fresh_paths:
                del sys.path_importer_cache[path]
            return
        for fd in fds:
            os.close(fd)
        os.waitpid(first, 0)


def _sandboxd_warm():
    import os
    import sys

    here = os.path.dirname(__file__)
    os.write(4, b"ready\n")
    os.close(4)
    data = b""
    while True:
        chunk = os.read(3, 1 << 16)
        if not chunk:
            break
        data += chunk
    os.close(3)
    fields = data.split(b"\0")
    argc = int(fields[0])
    argv = [os.fsdecode(a) for a in fields[1:1 + argc]]
    envc = int(fields[1 + argc])
    env = dict(kv.split(b"=", 1) for kv in fields[2 + argc:2 + argc + envc])
    cwd = fields[2 + argc + envc]

    os.chdir(cwd)
    for key in list(os.environb):
        if key not in env:
            del os.environb[key]
    for key, value in env.items():
        if os.environb.get(key) != value:
            os.environb[key] = value
    sys.argv[:] = argv[1:]
    sys.orig_argv[:] = argv
    while here in sys.path:
        sys.path.remove(here)
    sys.path_importer_cache.pop(here, None)

    # The image's own sitecustomize, as a fresh start imports it.
    spec = sys.modules["_frozen_importlib_external"].PathFinder.find_spec("sitecustomize", sys.path)
    if spec is None:
        # None: leave no module behind, as site does when there is none.
        raise ImportError("no sitecustomize", name="sitecustomize")
    module = sys.modules["_frozen_importlib"].module_from_spec(spec)
    sys.modules["sitecustomize"] = module
    spec.loader.exec_module(module)


if __import__("os").environ.get("SANDBOXD_WARM_FORK") == "1":
    _sandboxd_zygote()
_sandboxd_warm()
