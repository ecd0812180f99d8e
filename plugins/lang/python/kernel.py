# sandboxd's context kernel for Python: a long-lived interpreter that runs
# each cell it is sent in one namespace, Jupyter-like (the value of a final
# expression is shown). The protocol is the language plugin contract's
# (plugins/language: ContextCommand): a cell is a JSON line on descriptor 3
# ({"code", "name", "mark", "env"}), output goes to 1 and 2, then the cell's mark
# on both, then a JSON reply line on descriptor 4 ({"name", "status",
# "exit_code", "display"}).
import ast, base64, builtins, contextlib, json, linecache, math, os, re, string, subprocess, sys, traceback, warnings


def shown(value):
    """The representations of a value, richest first, text last."""
    out = []
    for method, mime in (('_repr_png_', 'image/png'), ('_repr_svg_', 'image/svg+xml'),
                         ('_repr_html_', 'text/html'), ('_repr_json_', 'application/json')):
        fn = getattr(value, method, None)
        if not callable(fn) or isinstance(value, type):
            continue
        try:
            data = fn()
        except Exception:
            continue
        if data is None:
            continue
        if isinstance(data, bytes):
            data = base64.b64encode(data).decode()
        elif mime == 'application/json':
            data = json.dumps(data)
        out.append({'mime': mime, 'data': data})
    figure = getattr(sys.modules.get('matplotlib.figure'), 'Figure', None)
    if figure is not None and isinstance(value, figure):
        out.extend(chart(value))
    pandas = sys.modules.get('pandas')  # a DataFrame exists only once pandas is imported
    if pandas is not None and isinstance(value, pandas.DataFrame) and value.size <= MAX_FRAME_CELLS:
        data = frame_columns(pandas, value)
        if data is not None and len(data) <= MAX_FRAME_JSON:
            out.append({'mime': 'application/vnd.sandboxd.dataframe+json', 'data': data})
    out.append({'mime': 'text/plain', 'data': repr(value)})
    return out


# A DataFrame's columns go along only for a small frame: its HTML and text
# are cut to a screenful anyway.
MAX_FRAME_CELLS = 100_000
MAX_FRAME_JSON = 1 << 20


def frame_columns(pandas, frame):
    """A DataFrame's columns as JSON lists, as E2B's Code Interpreter gives
    them ("data"): times in ISO form, NaN and infinities as null."""
    def plain(x):
        if isinstance(x, pandas.Timestamp):
            return x.isoformat()
        if isinstance(x, float) and not math.isfinite(x):
            return None
        return x
    try:
        with warnings.catch_warnings():
            warnings.simplefilter('ignore')  # duplicate columns, to_dict's own
            columns = {str(k): [plain(x) for x in v] for k, v in frame.to_dict(orient='list').items()}
        return json.dumps(columns, default=str, allow_nan=False)
    except Exception:
        return None


CHART_MIME = 'application/vnd.sandboxd.chart+json'


# A chart's data goes along only for a chart of up to so many points (the
# extractor makes objects of each), and up to so many bytes in a cell.
MAX_CHART_POINTS = 20_000
MAX_CHARTS_JSON = 4 << 20
charted = [0]  # bytes of chart data in the cell running


def chart(figure):
    """What a matplotlib figure charts, as data (E2B's chart extractor,
    e2b_charts, where the image has it, as E2B's Code Interpreter gives
    it): a list of one representation, or none."""
    try:
        points = 0
        for ax in figure.axes:
            points += sum(len(line.get_xdata()) for line in ax.get_lines())
            points += sum(len(c.get_offsets()) for c in ax.collections) + len(ax.patches)
        if points > MAX_CHART_POINTS:
            return []
        from e2b_charts import chart_figure_to_dict
        data = json.dumps(chart_figure_to_dict(figure), default=str, allow_nan=False)
    except Exception:
        return []
    if data == '{}' or charted[0] + len(data) > MAX_CHARTS_JSON:
        return []
    charted[0] += len(data)
    return [{'mime': CHART_MIME, 'data': data}]


def figures():
    """Open matplotlib figures as PNG (then closed): plt.show() has no
    window here, so what a cell drew comes back with its result."""
    plt = sys.modules.get('matplotlib.pyplot')
    if plt is None:
        return []
    out = []
    import io
    for num in plt.get_fignums():
        buf = io.BytesIO()
        figure = plt.figure(num)
        try:
            figure.savefig(buf, format='png', bbox_inches='tight')
            out.append({'mime': 'image/png', 'data': base64.b64encode(buf.getvalue()).decode()})
            out.extend(chart(figure))
            out.append({'mime': 'text/plain', 'data': repr(figure)})
        except Exception as e:
            print('figure %s could not be drawn: %s' % (num, e), file=sys.stderr)
    plt.close('all')
    return out


shown_now = []  # what display() showed during the cell running
MAX_SHOWN = 8 << 20  # bytes of it: the reply line has a bound of its own


def display(*values, **options):
    """Jupyter's display(): each value is shown where the cell's result
    is, before it (Jupyter's options, raw= and display_id=, are taken and
    left alone)."""
    for value in values:
        items = shown(value)
        size = sum(len(d['data']) for d in shown_now + items)
        if size > MAX_SHOWN:
            print('display: left out, over %d MiB of displays in one cell' % (MAX_SHOWN >> 20), file=sys.stderr)
            continue
        shown_now.extend(items)


def called_from(module):
    """Whether a function of module is among the callers."""
    frame = sys._getframe(1)
    while frame is not None:
        if frame.f_globals.get('__name__') == module:
            return True
        frame = frame.f_back
    return False


class ShowImages:
    """An import hook that has PIL show an image where the cell's result
    is, as Jupyter's image viewer would (show() has no window here, and
    E2B's Code Interpreter shows one that is saved too)."""

    def find_spec(self, name, path=None, target=None):
        if name != 'PIL.Image':
            return None
        import importlib.machinery
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is None or spec.loader is None:
            return None
        load = spec.loader.exec_module

        def exec_module(module):
            load(module)
            try:
                save = module.Image.save
            except AttributeError:
                return  # not the PIL this knows

            def save_shown(image, fp, format=None, **params):
                # Not a figure's own save (savefig): figures are shown
                # once, as figures.
                if isinstance(fp, (str, os.PathLike)) and not called_from('matplotlib.figure'):
                    display(image)
                return save(image, fp, format, **params)
            module.Image.save = save_shown
            # show() saves to a temporary file and opens a viewer.
            module.Image.show = lambda image, title=None: display(image)
        spec.loader.exec_module = exec_module
        return spec


def parse(code, name):
    """The cell's syntax tree. A cell indented as a whole (pasted from
    inside a function or a string) is parsed as Jupyter parses it: its
    first line's indent taken off every line that has it. A cell that is
    not Python for its IPython lines (shell escapes, %pip, %cd) is parsed
    with them made calls (see escapes)."""
    try:
        return unindented(code, name)
    except SyntaxError:
        escaped = escapes(code)
        if escaped == code:
            raise
        return unindented(escaped, name)


def unindented(code, name):
    try:
        return code, ast.parse(code, name, 'exec')
    except IndentationError:
        first = next((line for line in code.splitlines() if line.strip()), '')
        indent = first[:len(first) - len(first.lstrip())]
        if not indent:
            raise
        code = ''.join(line[len(indent):] if line.startswith(indent) else line
                       for line in code.splitlines(True))
        return code, ast.parse(code, name, 'exec')


# IPython's lines that are not Python: `!cmd` and `x = !cmd` (a shell
# command; {name} and $name are the cell's variables), `%pip ...` and
# `%cd DIR`. Agents write them, as notebooks taught them to.
ESCAPE = re.compile(r'^([ \t]*)(?:([A-Za-z_][\w.]*)[ \t]*=[ \t]*)?(!|%pip\b|%cd\b)(.*?)(\r?\n?)$')


def escapes(code):
    out = []
    quote = None  # the triple quote a line starts inside of
    for line in code.splitlines(True):
        m = None if quote else ESCAPE.match(line)
        for q in re.findall(r"'{3}|\"{3}", line):
            quote = None if q == quote else quote or q
        if not m:
            out.append(line)
            continue
        indent, target, kind, rest, end = m.groups()
        rest = rest.strip()
        if kind == '%cd':
            call = '__sandboxd_cd(%r, globals(), locals())' % rest
        else:
            cmd = rest if kind == '!' else 'python3 -m pip ' + rest
            call = '__sandboxd_shell(%r, %s, globals(), locals())' % (cmd, bool(target))
        out.append(indent + (target + ' = ' if target else '') + call + end)
    return ''.join(out)


def expand(cmd, g, l):
    """cmd with {expr} and $name taken from the cell's variables, as
    IPython expands them; what does not expand stays as written."""
    ns = dict(g)
    ns.update(l)
    try:
        cmd = string.Formatter().vformat(cmd, (), ns)
    except Exception:
        pass
    return re.sub(r'\$([A-Za-z_]\w*)', lambda m: str(ns[m.group(1)]) if m.group(1) in ns else m.group(0), cmd)


def shell(cmd, capture, g, l):
    """Runs a shell escape in bash: its output goes to the cell's, or,
    captured (x = !cmd), comes back as its lines (stderr's too)."""
    cmd = expand(cmd, g, l)
    sys.stdout.flush()
    sys.stderr.flush()
    if capture:
        res = subprocess.run(cmd, shell=True, executable='/bin/bash', stdin=subprocess.DEVNULL,
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, errors='replace')
        return res.stdout.splitlines()
    if sys.stdout is sys.__stdout__ and sys.stderr is sys.__stderr__:
        # Straight to the cell's output, as it comes.
        res = subprocess.run(cmd, shell=True, executable='/bin/bash', stdin=subprocess.DEVNULL)
    else:
        # Streams a program redirected (contextlib.redirect_stdout) get
        # the output too.
        res = subprocess.run(cmd, shell=True, executable='/bin/bash', stdin=subprocess.DEVNULL,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, errors='replace')
        sys.stdout.write(res.stdout)
        sys.stderr.write(res.stderr)
    builtins._exit_code = res.returncode
    return None


def cd(path, g, l):
    os.chdir(os.path.expanduser(expand(path, g, l) or '~'))
    print(os.getcwd())


def run(ns, code, name):
    try:
        code, tree = parse(code, name)
    except SyntaxError as e:
        linecache.cache[name] = (len(code), None, code.splitlines(True), name)
        traceback.print_exception(type(e), e, None)
        return {'status': 'error', 'exit_code': 1}
    linecache.cache[name] = (len(code), None, code.splitlines(True), name)
    last = None
    if tree.body and isinstance(tree.body[-1], ast.Expr):
        last = ast.Expression(tree.body.pop().value)
    main = []
    del shown_now[:]
    charted[0] = 0
    try:
        exec(compile(tree, name, 'exec'), ns)
        if last is not None:
            value = eval(compile(last, name, 'eval'), ns)
            if value is not None:
                ns['_'] = value
                main = [dict(d, main=True) for d in shown(value)]
    except SystemExit as e:
        status = e.code
        if status is None:
            status = 0
        elif not isinstance(status, int):
            print(status, file=sys.stderr)
            status = 1
        return {'status': 'exit', 'exit_code': status, 'display': shown_now + figures()}
    except BaseException as e:
        # The kernel's own frame is not the program's.
        traceback.print_exception(type(e), e, e.__traceback__.tb_next)
        return {'status': 'error', 'exit_code': 1, 'display': shown_now + figures()}
    return {'status': 'ok', 'exit_code': 0, 'display': shown_now + figures() + main}


@contextlib.contextmanager
def cell_env(env):
    """Sets env in os.environ for one cell (its subprocesses inherit it)
    and takes it back after, as E2B's kernels do."""
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def main():
    for fd in (3, 4):
        os.set_inheritable(fd, False)  # the programs' children do not get them
    cells = os.fdopen(3, 'r', encoding='utf-8')
    replies = os.fdopen(4, 'w', encoding='utf-8')
    os.environ.setdefault('MPLBACKEND', 'Agg')
    warnings.filterwarnings('ignore', message='.*non-interactive.*')  # plt.show() under Agg
    sys.argv = ['']
    sys.meta_path.insert(0, ShowImages())
    builtins.display = display  # as IPython has it, for modules too
    builtins.__sandboxd_shell, builtins.__sandboxd_cd = shell, cd
    ns = {'__name__': '__main__', '__builtins__': __builtins__}
    for line in cells:
        cell = json.loads(line)
        with cell_env(cell.get('env') or {}):
            reply = run(ns, cell['code'], cell.get('name') or '<cell>')
        reply['name'] = cell.get('name')
        mark = cell['mark'].encode()
        for f, fd in ((sys.stdout, 1), (sys.stderr, 2)):
            try:
                f.flush()
                os.write(fd, mark)
            except Exception:
                pass  # the cell closed it: nothing more goes out there
        replies.write(json.dumps(reply) + '\n')
        replies.flush()


main()
