"""extensions.py runs numpy's own setup.py build_src in a numpy source tree
(generated C from the .src templates, the C-API tables, config.h from
numpy's configuration checks run with the wasm compiler in CC, and the
random package's C regenerated from its .pyx by the installed Cython), then
writes what numpy's build description says each extension module and each
static library is made of, as JSON: the build (build.sh's build_numpy)
compiles those sources for wasm32-wasi and links them into python.wasm,
instead of numpy.distutils linking shared objects.

Usage (in the numpy source tree): python3.11 extensions.py OUT.json
"""
import builtins
import json
import os
import sys

out = sys.argv[1]
here = os.getcwd()
sys.path.insert(0, here)
# What numpy's setup.py sets before it imports numpy.distutils from the tree.
builtins.__NUMPY_SETUP__ = True
import setuptools  # noqa: F401,E402  (numpy's setup imports it first too)
import numpy.distutils.core as npcore  # noqa: E402

captured = []
orig_setup = npcore.setup


def setup(**kw):
    dist = orig_setup(**kw)
    captured.append(dist)
    return dist


npcore.setup = setup
sys.argv = ["setup.py", "build_src"]
import runpy  # noqa: E402

runpy.run_path(os.path.join(here, "setup.py"), run_name="__main__")
# numpy's setup runs setup() once per command it was given.
dist = captured[-1]


def rel(p):
    p = os.path.normpath(os.path.join(here, p))
    return os.path.relpath(p, here)


def c_sources(sources):
    return [rel(s) for s in sources if isinstance(s, str) and s.endswith(".c")]


def macros(ms):
    return [[m[0], m[1]] if isinstance(m, tuple) else [m, None] for m in ms or []]


# The configuration's include directories and numpy's own (the generated
# config.h and C-API headers among them), which build_ext and build_clib
# give every module and library after their own; not the building
# Python's headers: build.sh gives the wasm interpreter's.
from numpy.distutils.misc_util import Configuration  # noqa: E402

include_dirs = []
for d in list(dist.include_dirs or []) + Configuration.numpy_include_dirs + ["numpy/core/include"]:
    d = rel(d)
    if not d.startswith("..") and d not in include_dirs:
        include_dirs.append(d)
desc = {"extensions": [], "libraries": [], "include_dirs": include_dirs}
for ext in dist.ext_modules:
    desc["extensions"].append({
        "name": ext.name,
        "sources": c_sources(ext.sources),
        "include_dirs": [rel(d) for d in ext.include_dirs],
        "macros": macros(ext.define_macros),
        "libraries": list(ext.libraries),
    })
for name, info in dist.libraries or []:
    desc["libraries"].append({
        "name": name,
        "sources": c_sources(info.get("sources", [])),
        "include_dirs": [rel(d) for d in info.get("include_dirs", [])],
        "macros": macros(info.get("macros")),
    })
with open(out, "w") as f:
    json.dump(desc, f, indent=1, sort_keys=True)
