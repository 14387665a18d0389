package main

import (
	"fmt"
	"math"
	"os/exec"
	"strings"
)

// numpySnippets are numpy's hot paths: each builds its data first, then
// times only the work (time.process_time), as the Python snippets do, so
// that the same text runs under capsule and under Debian's python3.11 with
// Debian's numpy. The ratio targets are issue 30's: the elementwise and
// sort rows within 3× of native numpy, the matrix product (numpy's own
// loop, no BLAS) within 8×; the FFT has none.
var numpySnippets = []struct {
	snippet
	target float64 // capsule ÷ native at most; 0: none
}{
	{snippet{name: "elementwise a*b+c, sqrt on 1e6 float64 (×10)", tool: toolPython, code: `import time
import numpy as np
a = np.arange(1_000_000, dtype=np.float64); b = a[::-1].copy(); c = np.ones_like(a)
t0 = time.process_time()
for _ in range(10):
    d = np.sqrt(a * b + c)
elapsed_ms = (time.process_time() - t0) * 1000
elapsed_ms`}, 3},
	{snippet{name: "sort 1e6 float64", tool: toolPython, code: `import time
import numpy as np
x = np.random.default_rng(1).random(1_000_000)
t0 = time.process_time()
np.sort(x)
elapsed_ms = (time.process_time() - t0) * 1000
elapsed_ms`}, 3},
	{snippet{name: "matmul 300×300 float64", tool: toolPython, code: `import time
import numpy as np
rng = np.random.default_rng(1)
a = rng.random((300, 300)); b = rng.random((300, 300))
t0 = time.process_time()
a @ b
elapsed_ms = (time.process_time() - t0) * 1000
elapsed_ms`}, 8},
	{snippet{name: "FFT of 2^20 complex128", tool: toolPython, code: `import time
import numpy as np
x = np.random.default_rng(1).random(1 << 20) + 0j
t0 = time.process_time()
np.fft.fft(x)
elapsed_ms = (time.process_time() - t0) * 1000
elapsed_ms`}, 0},
}

// ensureDebianNumpy returns "" when debianPython imports numpy, installing
// Debian's python3-numpy first when it is missing and the bench runs as
// root; otherwise it returns why the reference is skipped.
func ensureDebianNumpy() string {
	return ensureDebianPackage("python3-numpy", debianPython+" has no numpy", func() bool {
		return exec.Command(debianPython, "-c", "import numpy").Run() == nil
	})
}

// numpy runs the numpy snippets under capsule, on a server with the
// default pools, and, in turn within each repetition, under Debian's
// python3.11 with Debian's numpy.
func (b *bench) numpy() error {
	if !b.hasNumpy() {
		logf("numpy: skipped, %s has no numpy (an older build): its rows are left out", b.bin)
		return nil
	}
	logf("numpy: starting a server with the default pools")
	s, err := startServer(b.bin, b.cache)
	if err != nil {
		return err
	}
	defer s.close()
	// The first numpy call asks for the numpy variant; the rows time the
	// work inside the call, whichever snapshot it starts from.
	if _, err := s.call(toolPython, numpyPython); err != nil {
		return err
	}
	r := b.r
	if b.o.skipPython {
		r.numpyNote = "skipped (-skip-python)"
	} else if r.numpyNote = ensureDebianNumpy(); r.numpyNote == "" {
		out, err := exec.Command(debianPython, "-c", "import numpy; print(numpy.__version__)").Output()
		if err != nil {
			return fmt.Errorf("numpy: %s: %w", debianPython, err)
		}
		r.numpyVersion = lastLine(out)
	}
	refs := map[string]string{}
	if r.numpyVersion != "" {
		refs[refDebianPython] = debianPython
	}
	for _, ns := range numpySnippets {
		logf("compute: numpy %s", ns.name)
		row, err := b.pythonComputeRow(s, ns.snippet, refs)
		if err != nil {
			return err
		}
		r.computeNumpy = append(r.computeNumpy, numpyRow{row, ns.target})
	}
	return nil
}

// numpyRow is a numpy snippet's row with its target ratio.
type numpyRow struct {
	computeRow
	target float64
}

// printNumpy writes the numpy rows.
func (r *report) printNumpy(p printer) {
	p("### numpy")
	p("")
	p("numpy's hot paths, timed inside the snippet as the Python snippets are (median of %d): capsule's numpy "+
		"(%s, in the numpy variant's own interpreter module, no BLAS) against Debian's python3.11 with Debian's numpy, "+
		"run in turn within each repetition.", r.opts.reps, r.capsuleNumpy())
	p("")
	native := "Debian numpy " + r.numpyVersion
	if r.numpyVersion == "" {
		native = "Debian numpy (" + r.numpyNote + ")"
	}
	p("| numpy snippet | capsule | capsule call | %s | capsule ÷ native | target | |", native)
	p("|---|---:|---:|---:|---:|---:|---|")
	for _, c := range r.computeNumpy {
		deb := refValue(c.computeRow, refDebianPython)
		target, check := "", ""
		if c.target > 0 {
			target = fmt.Sprintf("≤ %.0f×", c.target)
			if !math.IsNaN(deb) && deb > 0 {
				check = verdict(c.capsule/deb <= c.target)
			}
		}
		p("| %s | %s | %s | %s | %s | %s | %s |", c.snippet.name, fmtMS(c.capsule), fmtMS(c.call), fmtMS(deb),
			fmtRatio(c.capsule, deb), target, check)
	}
	p("")
}

// hasNumpy reports whether the measured binary has numpy, as `capsule
// version` lists it: the bench also measures older builds, for a before
// and after, which have none.
func (b *bench) hasNumpy() bool {
	return strings.Contains(b.r.capsuleVersion, "numpy ")
}

// capsuleNumpy is the numpy the measured binary has, as `capsule version`
// lists it ("numpy 1:1.19.5-1 (Debian source package)").
func (r *report) capsuleNumpy() string {
	for line := range strings.Lines(r.capsuleVersion) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "numpy "); ok {
			return "numpy " + v
		}
	}
	return "numpy"
}
