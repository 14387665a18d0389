# capsule's bootstrap. capsule_init (reactor/capsule.c) runs it once, right after
# CPython's start-up: it sets the sandbox up, defines _main and imports the
# modules calls commonly use. capsule_run then calls _main, which reads one
# request (JSON: {"code": ..., "inputs": ...}) from standard input, runs the
# code as __main__, and writes one report (JSON: {"result": ..., "error":
# {...}, "exit": n}) to a file descriptor that only the host's fd_write
# knows.
#
# Everything up to capsule_run is captured in the interpreter snapshot that
# every worker starts from (python.go), so what is imported here costs a
# call nothing. What the snapshot holds is shared by every call made from it:
# per-call state that must differ (random seeds) is renewed in _main.
#
# The __NAMES__ are filled in by the Go side (python.go).

import sys, os, builtins, _thread, _json

_RESULT_FD = __RESULT_FD__
_SOURCE_NAME = __SOURCE_NAME__
_MAX_REPORT = __MAX_REPORT__
_STDLIB_DIR = __STDLIB_DIR__
_BUNDLE_DIR = __BUNDLE_DIR__
_PACKAGES_DIR = __PACKAGES_DIR__
_SCRATCH_DIR = __SCRATCH_DIR__

# Private references: user code may rebind the public ones; it can only
# spoil its own report by doing so, never the bootstrap's control flow.
_write, _read, _exit = os.write, os.read, os._exit

# Only the standard library, the bundled packages and the operator's
# packages (each mounted only when configured), in that order, are
# importable; the other default entries name paths that do not exist and
# would only cost a stat per import.
sys.path[:] = [_STDLIB_DIR]
for _dir in (_BUNDLE_DIR, _PACKAGES_DIR):
    if os.path.isdir(_dir):
        sys.path.append(_dir)
del _dir
sys.argv[:] = [""]


# --- Built-in modules with dotted names: numpy's extension modules are
# linked into the numpy variant's interpreter (build.sh) and listed under
# their full names (numpy.core._multiarray_umath), but CPython's
# BuiltinImporter finds only top-level names, so this finder, first on the
# meta path, finds the rest.
#
# Every other interpreter lacks them: there numpy's Python files would fail
# deep in numpy.core, with numpy's advice on broken installs. The finder
# says instead why numpy is not there and what to do.
_NUMPY_ELSEWHERE = (
    "numpy runs in an interpreter of its own, which capsule starts for code with an import "
    "statement for it (import numpy, from numpy import ...); this code reached numpy another way "
    "(importlib, __import__, exec, or a package that imports it). Add `import numpy` to the code."
)


class _DottedBuiltinFinder:
    _names = frozenset(n for n in sys.builtin_module_names if "." in n)
    _numpy_elsewhere = "numpy.core._multiarray_umath" not in _names

    @staticmethod
    def find_spec(name, path=None, target=None):
        if name in _DottedBuiltinFinder._names:
            import _frozen_importlib
            return _frozen_importlib.ModuleSpec(name, _frozen_importlib.BuiltinImporter, origin="built-in")
        if name == "numpy" and _DottedBuiltinFinder._numpy_elsewhere:
            import _frozen_importlib_external
            if _frozen_importlib_external.PathFinder.find_spec(name) is not None:
                raise ModuleNotFoundError(_NUMPY_ELSEWHERE, name=name)
        return None


sys.meta_path.insert(0, _DottedBuiltinFinder)
# The private scratch directory is the working directory, so relative paths
# land in it.
try:
    os.chdir(_SCRATCH_DIR)
except OSError:
    pass


# --- JSON, as json.loads and json.dumps(allow_nan=False) do it, from the C
# scanner and encoder.
class _DecodeContext:
    strict = True
    object_hook = None
    object_pairs_hook = None
    parse_float = float
    parse_int = int
    memo = None

    @staticmethod
    def parse_constant(name):
        raise ValueError("invalid JSON constant " + name)


_scan = _json.make_scanner(_DecodeContext())


def _loads(text):
    value, end = _scan(text, 0)
    if end != len(text):
        raise ValueError("trailing data in the request")
    return value


def _not_serialisable(o):
    raise TypeError("Object of type %s is not JSON serializable" % type(o).__name__)


# (markers, default, encoder, indent, key separator, item separator,
# sort_keys, skipkeys, allow_nan): json.dumps's defaults, but no NaN.
_encode = _json.make_encoder({}, _not_serialisable, _json.encode_basestring_ascii,
                             None, ": ", ", ", False, False, False)


def _dumps(value):
    return "".join(_encode(value, 0))


# --- Threads: WASI has none. A plain message beats CPython's "can't start
# new thread". threading copies _thread.start_new_thread when imported, so
# patching _thread first covers threading, concurrent.futures and friends.
def _no_threads(*args, **kwargs):
    raise RuntimeError("threads are not available in this sandbox")


_thread.start_new_thread = _thread.start_new = _no_threads


# --- asyncio: the default loop needs socket.socketpair for its self-pipe,
# which WASI lacks. Our loop has no self-pipe and no selector: with nothing
# ready, it sleeps until the next timer. asyncio is installed lazily (an
# import hook) because importing it costs more than everything else here.
def _install_event_loop(asyncio):
    import time
    from asyncio import base_events, events

    class _Selector:
        def select(self, timeout=None):
            if timeout is None:
                raise RuntimeError(
                    "the event loop has nothing scheduled and nothing to wait "
                    "for (no I/O is possible in this sandbox)")
            if timeout > 0:
                time.sleep(timeout)
            return []

        def close(self):
            pass

    class SandboxEventLoop(base_events.BaseEventLoop):
        """An event loop of timers and callbacks only (no I/O, no signals)."""

        def __init__(self):
            super().__init__()
            self._selector = _Selector()

        def _process_events(self, event_list):
            pass

        def _write_to_self(self):
            pass

        def close(self):
            super().close()
            self._selector = None

    class SandboxEventLoopPolicy(events.BaseDefaultEventLoopPolicy):
        _loop_factory = SandboxEventLoop

    asyncio.SandboxEventLoop = SandboxEventLoop
    asyncio.set_event_loop_policy(SandboxEventLoopPolicy())


_source_entry = None


def _register_source(linecache):
    """Give linecache the user's source, so tracebacks and inspect show it."""
    if _source_entry is not None:
        linecache.cache[_SOURCE_NAME] = _source_entry


# Work to do right after a module is first imported.
_after_import = {"asyncio": _install_event_loop, "linecache": _register_source}


class _ImportHook:
    """Meta path finder that lets a module in _after_import load normally,
    then runs its follow-up."""

    def find_spec(self, name, path=None, target=None):
        after = _after_import.pop(name, None)
        if after is None:
            return None
        if not _after_import:
            sys.meta_path.remove(self)
        spec = _PathFinder.find_spec(name, path)
        if spec is not None and spec.loader is not None:
            spec.loader = _AfterLoad(spec.loader, after)
        return spec


class _AfterLoad:
    def __init__(self, loader, after):
        self._loader, self._after = loader, after

    def create_module(self, spec):
        return self._loader.create_module(spec)

    def exec_module(self, module):
        self._loader.exec_module(module)
        self._after(module)

    def __getattr__(self, name):
        return getattr(self._loader, name)


_PathFinder = sys.modules["_frozen_importlib_external"].PathFinder
for _name in list(_after_import):
    if _name in sys.modules:
        _after_import.pop(_name)(sys.modules[_name])
if _after_import:
    sys.meta_path.insert(0, _ImportHook())

# Headroom for reporting a MemoryError: freed first thing when one arrives.
_reserve = bytearray(1 << 20)


# --- The result, rendered as the REPL shows it and as exact JSON where the
# value maps: json.dumps alone would turn a set, a Decimal or a datetime
# into a string that reads like the string it is not, a tuple into a list,
# int keys into strings, and give JavaScript readers of ints past 2**53 the
# wrong digits.
_SAFE_INT = 2**53
_MAX_DEPTH = 100
_INF = float("inf")


class _Inexact(Exception):
    pass


def _exact(v, depth):
    """v as a JSON-ready value made only of dict (str keys), list, str, int,
    finite float, bool and None, tuples as lists, ints beyond +-2**53 as
    decimal strings; _Inexact when it has anything else."""
    t = type(v)
    if v is None or t is bool or t is str:
        return v
    if t is int:
        return v if -_SAFE_INT <= v <= _SAFE_INT else str(v)
    if t is float:
        if v != v or v == _INF or v == -_INF:
            raise _Inexact
        return v
    if depth >= _MAX_DEPTH:
        raise _Inexact
    if t is list or t is tuple:
        return [_exact(e, depth + 1) for e in v]
    if t is dict:
        out = {}
        for k, e in v.items():
            if type(k) is not str:
                raise _Inexact
            out[k] = _exact(e, depth + 1)
        return out
    return _exact_numpy(v, depth)


# numpy arrays as nested lists and numpy scalars as numbers, where every
# element converts exactly: booleans, integers and floats of at most 64 bits
# (float16 and float32 values are exactly Python floats). Not complex,
# float128, dates or objects; nor an array of more than _MAX_ARRAY_JSON
# elements, whose JSON would outgrow the report: numpy's repr, which
# summarises it, stays.
_MAX_ARRAY_JSON = 100000


def _exact_numpy(v, depth):
    np = sys.modules.get("numpy")
    if np is None:
        raise _Inexact
    if isinstance(v, np.ndarray):
        if v.dtype.kind not in "biuf" or v.dtype.itemsize > 8 or v.size > _MAX_ARRAY_JSON:
            raise _Inexact
        return _exact(v.tolist(), depth)
    if isinstance(v, np.generic) and v.dtype.kind in "biuf" and v.dtype.itemsize <= 8:
        return _exact(v.item(), depth)
    raise _Inexact


# type's own getters of a class's names: a metaclass of the code's may
# override __qualname__ or __module__ with code of its own, which the
# report must not run.
_type_qualname = type.__dict__["__qualname__"].__get__
_type_module = type.__dict__["__module__"].__get__


def _render(value):
    """The result's report fields: its JSON text where it maps exactly,
    its type's name, and its repr. The code's own methods (a __repr__, or
    an array subclass's tolist) may run and fail: that costs the field,
    never the report."""
    t = type(value)
    name = _type_qualname(t)
    # numpy's types by their numpy names (numpy.ndarray, numpy.int64).
    module = _type_module(t)
    if type(module) is str and (module == "numpy" or module.startswith("numpy.")):
        name = module + "." + name
    rendered = {"result_type": name}
    try:
        rendered["result_repr"] = repr(value)
    except BaseException:
        rendered["result_repr"] = "<unrepresentable %s object>" % type(value).__name__
    try:
        rendered["result"] = _dumps(_exact(value, 0))
    except BaseException:
        pass
    return rendered


def _type_name(exc):
    t = type(exc)
    mod = getattr(t, "__module__", None)
    if mod in (None, "builtins", "__main__"):
        return t.__qualname__
    return "%s.%s" % (mod, t.__qualname__)


def _error(exc):
    global _reserve
    if isinstance(exc, MemoryError):
        _reserve = None
    tb = exc.__traceback__
    # Drop the bootstrap's frames (and asyncio's, for top-level await): the
    # traceback starts at the user's code.
    while tb is not None and tb.tb_frame.f_code.co_filename != _SOURCE_NAME:
        tb = tb.tb_next
    try:
        msg = str(exc)
    except BaseException:
        msg = "<exception str() failed>"
    try:
        import traceback
        text = "".join(traceback.format_exception(type(exc), exc, tb))
    except BaseException:
        text = ""
    return {"type": _type_name(exc), "message": msg, "traceback": text}


def _exit_code(exc):
    """SystemExit's code as CPython's handler treats it: None is 0, an int is
    itself, anything else is printed to stderr and means 1."""
    code = exc.code
    if code is None:
        return 0
    if isinstance(code, int):
        return code if -2**31 <= code < 2**31 else 1
    try:
        sys.stderr.write(str(code) + "\n")
    except BaseException:
        pass
    return 1


_PyCF_ONLY_AST = 0x400
_PyCF_ALLOW_TOP_LEVEL_AWAIT = 0x2000
_CO_COROUTINE = 0x80


def _run(code, inputs, has_inputs):
    import _ast
    main = type(sys)("__main__")
    main.__builtins__ = builtins
    if has_inputs:
        main.inputs = inputs
    sys.modules["__main__"] = main
    ns = main.__dict__
    global _source_entry
    _source_entry = (len(code), None, code.splitlines(True), _SOURCE_NAME)
    if "linecache" in sys.modules:
        _register_source(sys.modules["linecache"])

    # Notebook semantics: a trailing expression statement is evaluated
    # separately and its value is the result. Top-level await is allowed.
    flags = _PyCF_ALLOW_TOP_LEVEL_AWAIT
    tree = compile(code, _SOURCE_NAME, "exec", _PyCF_ONLY_AST | flags, dont_inherit=True)
    last = None
    if tree.body and isinstance(tree.body[-1], _ast.Expr):
        last = tree.body.pop()
    body = compile(tree, _SOURCE_NAME, "exec", flags, dont_inherit=True)
    expr = None
    if last is not None:
        expr = compile(_ast.Expression(last.value), _SOURCE_NAME, "eval", flags, dont_inherit=True)

    if body.co_flags & _CO_COROUTINE or (expr is not None and expr.co_flags & _CO_COROUTINE):
        import asyncio

        async def both():
            r = eval(body, ns)
            if body.co_flags & _CO_COROUTINE:
                await r
            if expr is None:
                return None
            r = eval(expr, ns)
            if expr.co_flags & _CO_COROUTINE:
                r = await r
            return r

        return expr is not None, asyncio.run(both())
    eval(body, ns)
    return (False, None) if expr is None else (True, eval(expr, ns))


def _flush():
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except BaseException:
            pass


def _fresh_random():
    """Seed the random module anew, and the generators a snapshot variant's
    packages made for themselves: their state was imported into the
    snapshot, and two calls must never see the same numbers."""
    r = sys.modules.get("random")
    if r is not None:
        r.seed()
    for g in _own_random:
        g.seed()
    # numpy's global RandomState (np.random.rand, np.random.seed) is seeded
    # from entropy when numpy is imported: in the numpy variant, that was
    # once, for every call.
    mtrand = sys.modules.get("numpy.random.mtrand")
    if mtrand is not None:
        mtrand._rand.seed()


def _main():
    _fresh_random()
    chunks = []
    while True:
        chunk = _read(0, 1 << 20)
        if not chunk:
            break
        chunks.append(chunk)
    if not chunks:
        _exit(0)  # discarded before any request
    req = _loads(b"".join(chunks).decode("utf-8", "surrogateescape"))
    code = req["code"]
    has_inputs = "inputs" in req
    inputs = req.get("inputs")
    del req, chunks

    report = {"exit": 0}
    try:
        has_value, value = _run(code, inputs, has_inputs)
    except SystemExit as exc:
        report["exit"] = _exit_code(exc)
    except BaseException as exc:
        report["error"] = _error(exc)
    else:
        if has_value:
            report.update(_render(value))
    _flush()
    _send_report(report)
    _exit(0)


def _send_report(report):
    # The result is already JSON text: splice it in rather than decode and
    # encode it again.
    result = report.pop("result", None)
    text = _dumps(report)
    if result is not None:
        text = '{"result":' + result + "," + text[1:]
    data = text.encode()
    if len(data) > _MAX_REPORT:
        data = _dumps({"error": {
            "type": "OutputLimitError",
            "message": "result: limit of %d MiB reached" % (_MAX_REPORT >> 20),
            "traceback": ""}, "exit": report.get("exit", 0), "limit": "output"}).encode()
    view = memoryview(data)
    while view:
        view = view[_write(_RESULT_FD, view):]


# --- Snapshot variants (variants.go): the same interpreter with heavy
# packages imported and warmed up. A generator such a package seeds from
# entropy at import (sympy's, for one) would be shared by every call made
# from the snapshot, so each is recorded and seeded anew per call, as
# random's own; one seeded with a given value keeps it, as after a plain
# import.
_own_random = []


def _preload(modules, warm_up):
    import random
    seed = random.Random.seed

    def recording_seed(self, a=None, version=2):
        seed(self, a, version)
        _own_random[:] = [g for g in _own_random if g is not self]
        if a is None:
            _own_random.append(self)

    random.Random.seed = recording_seed
    try:
        for name in modules:
            __import__(name)
        exec(warm_up, {"__name__": "__capsule_warm_up__"})
    finally:
        random.Random.seed = seed


# The modules that calls commonly import, imported once for all of them.
_PRELOAD = (
    "json", "re", "collections", "datetime", "math", "random", "itertools",
    "functools", "typing", "dataclasses", "statistics", "decimal", "fractions",
    "string", "textwrap", "copy", "enum", "heapq", "bisect", "operator",
    "time", "traceback", "linecache", "io", "csv", "base64", "hashlib",
    "struct", "pprint", "uuid", "zlib", "asyncio",
)
for _name in _PRELOAD:
    __import__(_name)
del _name
