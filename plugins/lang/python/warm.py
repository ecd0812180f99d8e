# sandboxd's warm start for Python (see the language package's Warm): the
# warm process is `python3 main.py` with this file as sitecustomize. It
# runs once the interpreter is up, before main.py is opened: it says it is
# ready, waits for the run, makes the process the run's (argv, environment,
# directory), puts back what a fresh start has (sys.path, the image's own
# sitecustomize) and returns; the interpreter then runs main.py as usual,
# so __main__, tracebacks and the exit are the interpreter's own.


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


_sandboxd_warm()
