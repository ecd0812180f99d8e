# sandboxd's context kernel for Python: a long-lived interpreter that runs
# each cell it is sent in one namespace, Jupyter-like (the value of a final
# expression is shown). The protocol is the language plugin contract's
# (plugins/language: ContextCommand): a cell is a JSON line on descriptor 3
# ({"code", "name", "mark"}), output goes to 1 and 2, then the cell's mark
# on both, then a JSON reply line on descriptor 4 ({"name", "status",
# "exit_code", "display"}).
import ast, base64, json, linecache, os, sys, traceback, warnings


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
    out.append({'mime': 'text/plain', 'data': repr(value)})
    return out


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
        try:
            plt.figure(num).savefig(buf, format='png', bbox_inches='tight')
            out.append({'mime': 'image/png', 'data': base64.b64encode(buf.getvalue()).decode()})
        except Exception as e:
            print('figure %s could not be drawn: %s' % (num, e), file=sys.stderr)
    plt.close('all')
    return out


def run(ns, code, name):
    linecache.cache[name] = (len(code), None, code.splitlines(True), name)
    try:
        tree = ast.parse(code, name, 'exec')
    except SyntaxError as e:
        traceback.print_exception(type(e), e, None)
        return {'status': 'error', 'exit_code': 1}
    last = None
    if tree.body and isinstance(tree.body[-1], ast.Expr):
        last = ast.Expression(tree.body.pop().value)
    display = []
    try:
        exec(compile(tree, name, 'exec'), ns)
        if last is not None:
            value = eval(compile(last, name, 'eval'), ns)
            if value is not None:
                ns['_'] = value
                display = shown(value)
    except SystemExit as e:
        status = e.code
        if status is None:
            status = 0
        elif not isinstance(status, int):
            print(status, file=sys.stderr)
            status = 1
        return {'status': 'exit', 'exit_code': status, 'display': figures()}
    except BaseException as e:
        # The kernel's own frame is not the program's.
        traceback.print_exception(type(e), e, e.__traceback__.tb_next)
        return {'status': 'error', 'exit_code': 1, 'display': figures()}
    return {'status': 'ok', 'exit_code': 0, 'display': figures() + display}


def main():
    for fd in (3, 4):
        os.set_inheritable(fd, False)  # the programs' children do not get them
    cells = os.fdopen(3, 'r', encoding='utf-8')
    replies = os.fdopen(4, 'w', encoding='utf-8')
    os.environ.setdefault('MPLBACKEND', 'Agg')
    warnings.filterwarnings('ignore', message='.*non-interactive.*')  # plt.show() under Agg
    sys.argv = ['']
    ns = {'__name__': '__main__', '__builtins__': __builtins__}
    for line in cells:
        cell = json.loads(line)
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
