/*
 * capsule.c: the interpreter's entry points for capsule, linked instead of
 * CPython's main() into a WASI "reactor" module (build.sh). The host calls:
 *
 *   _initialize()   wasi-libc's constructors, once
 *   capsule_init()  CPython's start-up, then the bootstrap program, read
 *                   from standard input until its end; it defines _main
 *                   and imports what calls commonly use
 *   capsule_run()   the bootstrap's _main(): read one request from standard
 *                   input, run it, report, exit
 *
 * Splitting start-up from the run is what lets capsule snapshot the
 * interpreter right after capsule_init returns (the wasm stack is empty
 * then) and start every later worker from that image (see python.go and
 * runtimes/internal/snapshot).
 *
 * The configuration matches `python -S -s -B -u -P`: no site, no user site
 * directory, no .pyc writing, unbuffered stdio, no script directory on
 * sys.path. PYTHONHOME and the encoding come from the environment the host
 * gives.
 */
#include "Python.h"

#include <stdlib.h>
#include <unistd.h>

static PyObject *bootstrap_main; /* the bootstrap's _main */

/* read_stdin reads standard input to its end into a NUL-terminated buffer. */
static char *
read_stdin(void)
{
    size_t len = 0, cap = 1 << 16;
    char *buf = malloc(cap);
    if (buf == NULL) {
        return NULL;
    }
    for (;;) {
        if (cap - len < 4096) {
            char *bigger = realloc(buf, cap * 2);
            if (bigger == NULL) {
                free(buf);
                return NULL;
            }
            buf = bigger;
            cap *= 2;
        }
        ssize_t n = read(0, buf + len, cap - len - 1);
        if (n < 0) {
            free(buf);
            return NULL;
        }
        if (n == 0) {
            break;
        }
        len += (size_t)n;
    }
    buf[len] = '\0';
    return buf;
}

/* numpy's extension modules, linked into the numpy module only (build.sh
   links the interpreter twice; numpy/compile.py writes this function). They
   join the built-in modules under their dotted names, which the bootstrap's
   finder imports (CPython's own finder takes only top-level names for
   built-ins). Weak: in the plain module it is undefined, and so null. */
extern int capsule_numpy_inittab(void) __attribute__((weak));

__attribute__((export_name("capsule_init"))) int
capsule_init(void)
{
    if (capsule_numpy_inittab && capsule_numpy_inittab() < 0) {
        fprintf(stderr, "capsule: cannot add numpy's modules to the built-in modules\n");
        return 1;
    }
    PyConfig config;
    PyConfig_InitPythonConfig(&config);
    config.site_import = 0;
    config.user_site_directory = 0;
    config.write_bytecode = 0;
    config.buffered_stdio = 0;
    config.safe_path = 1;
    config.parse_argv = 0;
    config.install_signal_handlers = 0;
    PyStatus status = PyConfig_SetBytesString(&config, &config.program_name, "python");
    if (!PyStatus_Exception(status)) {
        status = Py_InitializeFromConfig(&config);
    }
    PyConfig_Clear(&config);
    if (PyStatus_Exception(status)) {
        Py_ExitStatusException(status);
    }

    char *source = read_stdin();
    if (source == NULL) {
        fprintf(stderr, "capsule: cannot read the bootstrap program\n");
        return 1;
    }
    PyObject *code = Py_CompileString(source, "<capsule>", Py_file_input);
    free(source);
    if (code == NULL) {
        PyErr_Print();
        return 1;
    }
    PyObject *globals = PyModule_GetDict(PyImport_AddModule("__main__"));
    PyObject *result = PyEval_EvalCode(code, globals, globals);
    Py_DECREF(code);
    if (result == NULL) {
        PyErr_Print();
        return 1;
    }
    Py_DECREF(result);
    bootstrap_main = PyDict_GetItemString(globals, "_main");
    if (bootstrap_main == NULL) {
        fprintf(stderr, "capsule: the bootstrap program defines no _main\n");
        return 1;
    }
    Py_INCREF(bootstrap_main);
    return 0;
}

__attribute__((export_name("capsule_run"))) int
capsule_run(void)
{
    if (bootstrap_main == NULL) {
        fprintf(stderr, "capsule: capsule_run before capsule_init\n");
        return 1;
    }
    PyObject *result = PyObject_CallNoArgs(bootstrap_main);
    if (result == NULL) {
        PyErr_Print();
        return 1;
    }
    Py_DECREF(result);
    return 0;
}
