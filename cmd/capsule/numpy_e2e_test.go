package main

import (
	"os/exec"
	"strings"
	"testing"
)

// TestNumpy: numpy over MCP, as an agent uses it. Calls that import numpy,
// in any of its forms, start from the numpy variant once it is made; its
// values come back as numpy's repr, its type names and plain JSON; numpy's
// global generator draws other numbers in every call; an array larger than
// the memory limit, or than wasm32 can count, ends as the memory limit,
// and a long matrix product as the timeout, and the next call is clean.
func TestNumpy(t *testing.T) {
	s := startServer(t, "--log-level", "debug")
	awaitVariant(t, s, "numpy", "import numpy as np\nint(np.arange(5).sum())", "10")
	cases := []struct {
		expectation
		variant string
	}{
		{expectation{name: "a linear solve", code: "import numpy as np\nnp.linalg.solve(np.array([[3.0, 1.0], [1.0, 2.0]]), np.array([9.0, 8.0]))",
			result: "[2,3]", typ: "numpy.ndarray", repr: "array([2., 3.])"}, "numpy"},
		{expectation{name: "a numpy scalar", code: "import numpy as np\nnp.int64(3) * 2", result: "6", typ: "numpy.int64", repr: "6"}, "numpy"},
		{expectation{name: "a float32 scalar", code: "from numpy import float32\nfloat32(0.5)", result: "0.5", typ: "numpy.float32"}, "numpy"},
		{expectation{name: "a matrix of booleans", code: "import numpy.linalg as la\nimport numpy\nnumpy.eye(2) > 0",
			result: "[[true,false],[false,true]]", typ: "numpy.ndarray"}, "numpy"},
		{expectation{name: "complex has no JSON", code: "from numpy import fft\nfft.fft([1.0, 0.0])",
			result: "null", typ: "numpy.ndarray", repr: "array([1.+0.j, 1.+0.j])"}, "numpy"},
		{expectation{name: "a large array keeps its summary", code: "import numpy as np\nnp.arange(200000)",
			result: "null", typ: "numpy.ndarray", repr: "array([     0,      1,      2, ..., 199997, 199998, 199999])"}, "numpy"},
		{expectation{name: "polyfit", code: "import numpy as np\nnp.polyfit([0, 1, 2, 3], [1, 3, 5, 7], 1).round(9)", result: "[2,1]"}, "numpy"},
		{expectation{name: "an FFT on default_rng", code: "import numpy as np\nrng = np.random.default_rng(7)\nt = np.arange(64) / 64\n" +
			"int(np.argmax(np.abs(np.fft.rfft(np.sin(2 * np.pi * 5 * t) + 0.01 * rng.standard_normal(64)))))", result: "5"}, "numpy"},
		{expectation{name: "without numpy", code: "import json\njson.dumps(1)", result: `"1"`}, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res, st := s.call(t, "execute_python", c.code)
			check(t, res, st, c.expectation)
			if got := loggedVariant(t, s, c.code); got != c.variant {
				t.Errorf("started from variant %q, want %q", got, c.variant)
			}
		})
	}

	t.Run("numpy's global generator draws anew in every call", func(t *testing.T) {
		drawsAnew(t, s, "numpy", "import numpy as np\nnp.random.rand(3)")
	})

	t.Run("np.save and np.load through a file in /tmp", func(t *testing.T) {
		res, st := s.call(t, "execute_python", "import numpy as np\nnp.save('/tmp/a.npy', np.arange(4))\n"+
			"np.arange(3).tofile('/tmp/b.bin')\n[np.load('/tmp/a.npy'), np.fromfile('/tmp/b.bin', dtype=np.int32)]")
		check(t, res, st, expectation{result: "[[0,1,2,3],[0,1,2]]"})
	})

	limits := []expectation{
		{name: "7 GiB of zeros", code: "import numpy as np\nnp.zeros((30000, 30000))", isError: true, limit: "memory",
			errType: "MemoryError", errContains: "memory: limit of 256MiB reached (Unable to allocate", text: "[limit] memory"},
		{name: "10**10 ones", code: "import numpy as np\nnp.ones(10**10)", isError: true, limit: "memory", errType: "MemoryError",
			errContains: "memory: limit of 256MiB reached (Maximum allowed dimension exceeded)"},
		{name: "763 MiB of ones", code: "import numpy as np\nnp.ones(10**8)", isError: true, limit: "memory", errType: "MemoryError",
			errContains: "Unable to allocate 763. MiB"},
		{name: "arrays until the limit", code: "import numpy as np\nkeep = []\nwhile True:\n    keep.append(np.ones(10**6))",
			isError: true, limit: "memory", errType: "MemoryError"},
	}
	for _, c := range limits {
		t.Run(c.name, func(t *testing.T) {
			res, st := s.call(t, "execute_python", c.code)
			check(t, res, st, c)
			res, st = s.call(t, "execute_python", "import numpy as np\nnp.arange(3).tolist()  # after "+c.name)
			check(t, res, st, expectation{result: "[0,1,2]"})
		})
	}
	t.Run("a long matrix product", func(t *testing.T) {
		res, st := s.callArgs(t, "execute_python", map[string]any{
			"code":            "import numpy as np\na = np.ones((3000, 3000))\nfor _ in range(100):\n    a = a @ a",
			"timeout_seconds": 1,
		})
		check(t, res, st, expectation{isError: true, limit: "timeout"})
	})
}

// TestNumpyHiddenWithoutBundle: --bundled-packages=false hides numpy as it
// hides the pure-Python packages.
func TestNumpyHiddenWithoutBundle(t *testing.T) {
	cmd := exec.Command(capsuleBin, "exec", "python", "--bundled-packages=false", "-c", "import numpy")
	cmd.Env = serverEnv()
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "ModuleNotFoundError: No module named 'numpy'") {
		t.Errorf("import numpy without the bundle: %v\n%s", err, out)
	}
	cmd = exec.Command(capsuleBin, "exec", "python", "-c", "import numpy\nnumpy.__version__")
	cmd.Env = serverEnv()
	out, err = cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "'1.19.5'") {
		t.Errorf("import numpy with the bundle: %v\n%s", err, out)
	}
}

// TestNumpyHasItsOwnModule: numpy's C code is linked into the numpy
// variant's module only, so a call that imports numpy runs there whatever
// else it imports and whatever --python-variants says (without that
// variant's pool, it starts a worker of that module itself), from the very
// first call; code that reaches numpy without an import statement runs on
// the plain interpreter and is told what to do.
func TestNumpyHasItsOwnModule(t *testing.T) {
	s := startServerEnv(t, []string{"XDG_CACHE_HOME=" + t.TempDir()}, "--python-variants", "none", "--log-level", "debug")
	for _, c := range []struct {
		code, want, variant string
	}{
		{"import numpy as np\nint(np.arange(4).sum())", "6", "numpy"},
		{"import sympy\nfrom numpy import linalg\nstr(sympy.Integer(int(linalg.det([[2.0, 0.0], [0.0, 3.0]]).round())))", `"6"`, "numpy"},
		{"import json\njson.dumps([1])", `"[1]"`, ""},
	} {
		if got := callPython(t, s, c.code, c.want); got != c.variant {
			t.Errorf("%q started from variant %q, want %q", c.code, got, c.variant)
		}
	}
	res, st := s.call(t, "execute_python", `__import__("num" + "py")`)
	check(t, res, st, expectation{isError: true, errType: "ModuleNotFoundError", errContains: "Add `import numpy` to the code"})
}
