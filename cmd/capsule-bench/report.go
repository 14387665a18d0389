package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Targets capsule is measured against.
var (
	// targetP50 is for trivial code with the default pause between calls.
	targetP50 = map[string]float64{"Python": 10, "JavaScript": 5}
	// targetSequentialP50 is for trivial code, calls sequentialPause apart.
	targetSequentialP50 = map[string]float64{"Python": 15, "JavaScript": 8}
	// targetRealisticP50 is for realisticPython.
	targetRealisticP50 = 25.0
	// targetImportP50 is for the bundled-package imports, calls
	// sequentialPause apart; targetImportWorkerCPU bounds a worker's CPU
	// for them where set.
	targetImportP50       = map[string]float64{"sympy": 150, "networkx": 60, "numpy": 60}
	targetImportWorkerCPU = map[string]float64{"sympy": 120}
	// targetThroughput is for 2 calls in flight.
	targetThroughput = map[string]float64{"Python": 40, "JavaScript": 80}
	// targetWorkerCPU is the CPU of one worker's whole life.
	targetWorkerCPU = map[string]float64{"Python": 40, "JavaScript": 20}
)

const (
	targetWarmStartMS = 150
	targetColdStartMS = 3000
	targetServerCPU   = 5.0 // ms per call
	targetReadyPSSKiB = 30 << 10
	// targetPythonRatio bounds capsule's compute time over Debian's
	// python3.11 (PGO, LTO) on the same snippet (issue 18: with guard
	// pages instead of bounds checks).
	targetPythonRatio = 3.0
)

// latencyRow is one language, pool setting and case, in milliseconds.
type latencyRow struct {
	language, pool, what string
	pause                time.Duration
	wall                 []float64 // client round trips
	server               []float64 // the answers' duration_ms
	cpu                  cpuTimes  // per call: the server's, and its workers'
	// phases holds, per phase of a worker's life, the CPU each worker
	// reported (ms).
	phases map[string][]float64
}

// target is the row's p50 target, or 0.
func (l latencyRow) target(defaultPause time.Duration) float64 {
	switch {
	case !strings.HasPrefix(l.pool, "warm"):
		return 0
	case l.what == "realistic":
		return targetRealisticP50
	case targetImportP50[l.what] > 0:
		return targetImportP50[l.what]
	case l.pause == sequentialPause:
		return targetSequentialP50[l.language]
	case l.pause == defaultPause:
		return targetP50[l.language]
	}
	return 0
}

// throughputRow is one language at one concurrency.
type throughputRow struct {
	language    string
	concurrency int
	calls       int
	elapsed     time.Duration
	latencies   []float64
	cpu         cpuTimes
}

func (t throughputRow) perSecond() float64 { return float64(t.calls) / t.elapsed.Seconds() }

// scalingRow is one row of the scaling table: a throughput row over one
// transport.
type scalingRow struct {
	transport string
	throughputRow
}

// startRow is one language's start-up times, in milliseconds from the
// server's start.
type startRow struct {
	language       string
	coldInit, cold []float64
	warmInit, warm []float64
	// prepared is where each empty-cache start's preparation of this
	// language's runtime went, as the server logged it.
	prepared []preparedRow
}

// preparedRow is one preparation of a runtime, in milliseconds: the whole,
// the snapshot worker (compile and interpreter start), its CPU time, and
// storing and sealing the images.
type preparedRow struct {
	total, worker, workerCPU, seal float64
}

// workerMemRow is one worker's memory, ready and idle, then running.
type workerMemRow struct {
	language   string
	idle, busy memStatus
	idlePSS    pssStatus
	note       string
}

// report is everything measured.
type report struct {
	opts           options
	date           time.Time
	machine        machine
	capsuleVersion string
	loadBefore     string
	loadAfter      string

	starts     []startRow
	latency    []latencyRow
	throughput []throughputRow
	scaling    []scalingRow
	files      []*filesRow
	serverMem  memStatus
	workerMem  []workerMemRow

	computePy, computeJS []computeRow
	computeNumpy         []numpyRow
	numpyVersion         string
	numpyNote            string
	pythonVersion        string
	pythonNote           string
	debianPythonVersion  string
	debianPythonNote     string
	nodeVersion          string
	nodeNote             string
	quickjsVersions      string
	quickjsNote          string
}

// print writes the report as Markdown; sections that did not run are left
// out.
func (r *report) print(w io.Writer) {
	p := func(format string, args ...any) { fmt.Fprintf(w, format+"\n", args...) }
	m := r.machine
	p("## Benchmarks")
	p("")
	p("Measured by `make bench` (`cmd/capsule-bench`) on %s.", r.date.UTC().Format("2006-01-02 15:04 MST"))
	p("")
	p("- machine: %d CPUs, %s, %s", m.CPUs, m.CPU, m.Kernel)
	p("- bench built with %s; %s", m.GoBench, strings.ReplaceAll(r.capsuleVersion, "\n", "; "))
	p("- load average (1, 5, 15 min) at the start: %s; at the end: %s%s", r.loadBefore, r.loadAfter, r.busyWarning())
	p("- every call goes through MCP stdio (mcp-go client → `capsule serve`) with the default limits; " +
		"`--max-concurrency` is the number of CPUs")
	p("- CPU/call: user+system time per call from `/proc/PID/stat` of the server, its own and that of " +
		"the workers it reaped (each call uses one worker, and the pool starts one in its place)")
	p("")
	if len(r.latency) > 0 {
		r.printLatency(p)
	}
	if len(r.throughput) > 0 {
		r.printThroughput(p)
	}
	if len(r.scaling) > 0 {
		r.printScaling(p)
	}
	if len(r.files) > 0 {
		r.printFiles(p)
	}
	if len(r.starts) > 0 {
		r.printStarts(p)
	}
	if len(r.computePy)+len(r.computeJS) > 0 {
		r.printCompute(p)
	}
	if len(r.computeNumpy) > 0 {
		r.printNumpy(p)
	}
	if r.serverMem.HWM > 0 || len(r.workerMem) > 0 {
		r.printMemory(p)
	}
}

// resultsFile is the name of the file -out writes a report to: the run's
// start in UTC, so that the files of a directory sort by time, with n > 1
// added when another run of the same minute has the name already.
func resultsFile(date time.Time, n int) string {
	name := "results-" + date.UTC().Format("2006-01-02-1504")
	if n > 1 {
		name += fmt.Sprintf("-%d", n)
	}
	return name + ".md"
}

// writeResults writes the report as a Markdown file of its own in dir,
// made if need be, and returns the file's path. It never overwrites a
// file: an earlier run's results stay as they were.
func (r *report) writeResults(dir string) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("writing the report: %w (choose another -out directory)", err)
	}
	for n := 1; ; n++ {
		path := filepath.Join(dir, resultsFile(r.date, n))
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if errors.Is(err, fs.ErrExist) && n < 100 {
			continue
		}
		if err != nil {
			return "", fmt.Errorf("writing the report: %w (choose another -out directory)", err)
		}
		fmt.Fprintf(f, "# capsule-bench results, %s\n\n", r.date.UTC().Format("2006-01-02 15:04 MST"))
		fmt.Fprintf(f, "Written by `cmd/capsule-bench -out` (`make bench`).\n\n")
		r.print(f)
		if err := f.Close(); err != nil {
			return "", fmt.Errorf("writing the report to %s: %w", path, err)
		}
		return path, nil
	}
}

// busyWarning warns when the machine was busy with other work.
func (r *report) busyWarning() string {
	for _, l := range []string{r.loadBefore, r.loadAfter} {
		var one float64
		if _, err := fmt.Sscan(l, &one); err == nil && one > 0.5*float64(r.machine.CPUs) {
			return " (**the machine was busy with other work: times are pessimistic; " +
				"CPU/call is the steadier figure**)"
		}
	}
	return ""
}

type printer func(format string, args ...any)

func (r *report) printLatency(p printer) {
	p("### Latency")
	p("")
	p("One call at a time with a pause between calls, %d calls per row after %d unmeasured: trivial code "+
		"(`%s`), and for Python a realistic call (common imports, a 200-row table built and summarised) "+
		"and the heaviest bundled packages (sympy: `%s`; networkx: `%s`), whose rows start once the "+
		"server's log says a call started from the package's snapshot variant (made on the first such call; "+
		"unmeasured calls for up to a minute). "+
		"Round trip measured by the client; the server's own `duration_ms` beside it. Worker CPU/call is "+
		"the CPU of one worker's whole life (start, compile, lockdown, interpreter, run, exit); server "+
		"CPU/call is the server's own (target ≤ %s).",
		r.opts.n, r.opts.warmup, trivialCode, sympyPython, networkxPython, fmtMS(targetServerCPU))
	p("")
	p("| language | pool | code | pause | p50 | p95 | p99 | server p50 | worker CPU/call | server CPU/call | target p50 | |")
	p("|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|")
	for _, l := range r.latency {
		p50 := percentile(l.wall, 50)
		target, check := "", ""
		if t := l.target(r.opts.pause); t > 0 {
			target, check = "≤ "+fmtMS(t), verdict(p50 <= t)
			if c := targetImportWorkerCPU[l.what]; c > 0 {
				target += ", worker CPU ≤ " + fmtMS(c)
				check = verdict(p50 <= t && ms(l.cpu.children) <= c)
			}
		}
		p("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |", l.language, l.pool, l.what, l.pause,
			fmtMS(p50), fmtMS(percentile(l.wall, 95)), fmtMS(percentile(l.wall, 99)), fmtMS(percentile(l.server, 50)),
			fmtMS(ms(l.cpu.children)), fmtMS(ms(l.cpu.self)), target, check)
	}
	p("")
	r.printPhases(p)
}

// workerPhaseOrder is the order of a worker's life (worker.Phase*).
var workerPhaseOrder = []string{"start", "compile", "lockdown", "interpreter", "wait", "run"}

// printPhases breaks a worker's CPU down by phase, from the first warm
// trivial row of each language.
func (r *report) printPhases(p printer) {
	var rows []latencyRow
	seen := map[string]bool{}
	for _, l := range r.latency {
		if l.target(r.opts.pause) > 0 && l.what == "trivial" && !seen[l.language] && len(l.phases) > 0 {
			rows = append(rows, l)
			seen[l.language] = true
		}
	}
	if len(rows) == 0 {
		return
	}
	p("Where a worker's CPU goes (median ms per phase, as each worker measured itself with " +
		"`CLOCK_PROCESS_CPUTIME_ID`, up to its answer; its exit comes after and is only in the total " +
		"above):")
	p("")
	head, sep := "| language |", "|---|"
	for _, ph := range workerPhaseOrder {
		head += " " + ph + " |"
		sep += "---:|"
	}
	p("%s sum | worker CPU/call | target | |", head)
	p("%s---:|---:|---:|---|", sep)
	for _, l := range rows {
		line, sum := "| "+l.language+" |", 0.0
		for _, ph := range workerPhaseOrder {
			v := median(l.phases[ph])
			if !math.IsNaN(v) {
				sum += v
			}
			line += " " + fmtMS(v) + " |"
		}
		total, t := ms(l.cpu.children), targetWorkerCPU[l.language]
		p("%s %s | %s | ≤ %s | %s |", line, fmtMS(sum), fmtMS(total), fmtMS(t), verdict(total <= t))
	}
	p("")
}

func (r *report) printThroughput(p printer) {
	p("### Throughput")
	p("")
	p("Trivial code, default pools (at least 2 ready workers per language), calls back to back for %s per row; "+
		"calls/s counts from the first call to the last answer.", r.opts.duration)
	p("")
	p("| language | in flight | calls | calls/s | p50 latency | p95 latency | p99 latency | worker CPU/call | target | |")
	p("|---|---:|---:|---:|---:|---:|---:|---:|---:|---|")
	for _, t := range r.throughput {
		target, check := "", ""
		if t.concurrency == 2 {
			v := targetThroughput[t.language]
			target, check = fmt.Sprintf("≥ %.0f/s", v), verdict(t.perSecond() >= v)
		}
		p("| %s | %d | %d | %.1f | %s | %s | %s | %s | %s | %s |", t.language, t.concurrency, t.calls, t.perSecond(),
			fmtMS(percentile(t.latencies, 50)), fmtMS(percentile(t.latencies, 95)), fmtMS(percentile(t.latencies, 99)), fmtMS(ms(t.cpu.children)),
			target, check)
	}
	p("")
}

func (r *report) printScaling(p printer) {
	p("### Scaling with the calls in flight")
	p("")
	p("On %d cores (the default --max-concurrency, so also the most ready workers a pool grows to). "+
		"Trivial code (`%s`), default flags (over HTTP, --max-client-concurrency 64 so that the bench's one client may have every call in flight), "+
		"each row %s of calls back to back from that many callers after half a second at rest; "+
		"CPU per call is the server's own and its workers' together.", r.machine.CPUs, trivialCode, r.opts.scaleRow)
	p("")
	p("| transport | language | in flight | calls | calls/s | p50 latency | p99 latency | CPU/call |")
	p("|---|---|---:|---:|---:|---:|---:|---:|")
	for _, t := range r.scaling {
		p("| %s | %s | %d | %d | %.1f | %s | %s | %s |", t.transport, t.language, t.concurrency, t.calls, t.perSecond(),
			fmtMS(percentile(t.latencies, 50)), fmtMS(percentile(t.latencies, 99)), fmtMS(ms(t.cpu.self+t.cpu.children)))
	}
	p("")
}

func (r *report) printStarts(p printer) {
	p("### Start-up")
	p("")
	p("From starting `capsule serve` to the first answer of a `%s` call, initialize included; "+
		"median of %d. Empty cache: a fresh `XDG_CACHE_HOME` each time, so the server prepares both runtimes "+
		"(in parallel: loads their compiled code from the binary, or compiles it where the binary has none, and makes "+
		"the snapshots) before the first worker is ready.", trivialCode, r.opts.reps)
	p("")
	p("| language | cache | initialize answered | first answer | target | |")
	p("|---|---|---:|---:|---:|---|")
	for _, s := range r.starts {
		cold, warm := median(s.cold), median(s.warm)
		p("| %s | empty | %s | %s | ≤ %s | %s |", s.language, fmtMS(median(s.coldInit)), fmtMS(cold),
			fmtMS(targetColdStartMS), verdict(cold <= targetColdStartMS))
		p("| %s | filled | %s | %s | ≤ %s | %s |", s.language, fmtMS(median(s.warmInit)), fmtMS(warm),
			fmtMS(targetWarmStartMS), verdict(warm <= targetWarmStartMS))
	}
	p("")
	p("Where an empty-cache start goes: the server prepares each runtime once (a snapshot worker loads the module's " +
		"compiled code, or compiles it, which is then nearly all of its CPU, and starts the interpreter; then the images are stored and sealed), as its `runtime prepared` " +
		"log line says; medians of the runs above, each language's own first-answer run.")
	p("")
	p("| language | preparing | snapshot worker | its CPU | store and seal | first answer |")
	p("|---|---:|---:|---:|---:|---:|")
	for _, s := range r.starts {
		if len(s.prepared) == 0 {
			continue
		}
		col := func(f func(preparedRow) float64) string {
			var xs []float64
			for _, pr := range s.prepared {
				xs = append(xs, f(pr))
			}
			return fmtMS(median(xs))
		}
		p("| %s | %s | %s | %s | %s | %s |", s.language,
			col(func(pr preparedRow) float64 { return pr.total }), col(func(pr preparedRow) float64 { return pr.worker }),
			col(func(pr preparedRow) float64 { return pr.workerCPU }), col(func(pr preparedRow) float64 { return pr.seal }),
			fmtMS(median(s.cold)))
	}
	p("")
}

func (r *report) printCompute(p printer) {
	p("### Compute overhead")
	p("")
	p("CPU-bound snippets; each times its own compute (Python `time.process_time`, the CPU time of its process: "+
		"under capsule the worker's, so that other work on the machine does not count; JavaScript `performance.now`, "+
		"wall time, as QuickJS has no CPU clock) and returns the elapsed milliseconds, so process and interpreter "+
		"start-up are not included. Each run is a fresh process (a capsule call, or a new `python3.11`/`python3`/`node`); median of %d, capsule and the Python references run in turn within each repetition. "+
		"\"capsule call\" is the call's `duration_ms` (from the request to the answer, worker from the pool).",
		r.opts.reps)
	p("")
	debRef := "Debian " + strings.TrimPrefix(r.debianPythonVersion, "Python ")
	if r.debianPythonVersion == "" {
		debRef = "Debian python3.11 (" + r.debianPythonNote + ")"
	}
	pyRef := "python3: " + r.pythonVersion
	if r.pythonVersion == "" {
		pyRef = "python3 (" + r.pythonNote + ")"
	}
	p("| Python snippet | capsule | capsule call | %s | capsule ÷ Debian's | target | | %s | capsule ÷ python3 |",
		debRef, pyRef)
	p("|---|---:|---:|---:|---:|---:|---|---:|---:|")
	for _, c := range r.computePy {
		deb, native := refValue(c, refDebianPython), refValue(c, refPython)
		check := ""
		if !math.IsNaN(deb) && deb > 0 {
			check = verdict(c.capsule/deb <= targetPythonRatio)
		}
		p("| %s | %s | %s | %s | %s | ≤ %.0f× | %s | %s | %s |", c.snippet.name, fmtMS(c.capsule), fmtMS(c.call),
			fmtMS(deb), fmtRatio(c.capsule, deb), targetPythonRatio, check, fmtMS(native), fmtRatio(c.capsule, native))
	}
	p("")
	p("Debian's python3.11 (%s, built with profile-guided and link-time optimisation) is the reference for "+
		"the target; python3 is the first on PATH.", debianPython)
	p("")
	p("| JavaScript snippet | capsule | capsule call | QuickJS-NG wasm in node | node (V8) | " +
		"capsule ÷ QuickJS in node | capsule ÷ node |")
	p("|---|---:|---:|---:|---:|---:|---:|")
	for _, c := range r.computeJS {
		q, n := refValue(c, refQuickJS), refValue(c, refNode)
		p("| %s | %s | %s | %s | %s | %s | %s |", c.snippet.name, fmtMS(c.capsule), fmtMS(c.call), fmtMS(q),
			fmtMS(n), fmtRatio(c.capsule, q), fmtRatio(c.capsule, n))
	}
	p("")
	if r.nodeVersion != "" {
		p("node %s.", r.nodeVersion)
	} else {
		p("node: %s.", r.nodeNote)
	}
	switch {
	case r.quickjsVersions != "":
		p("QuickJS-NG in node: %s, installed by the bench with npm into a scratch folder; `evalCode` "+
			"in a fresh context, the wasm run by V8 (capsule runs the same variant, rewritten to own its "+
			"memory, under wazero's compiler).", r.quickjsVersions)
	case r.quickjsNote != "":
		p("QuickJS-NG in node: %s.", r.quickjsNote)
	}
	p("")
}

func (r *report) printMemory(p printer) {
	p("### Memory")
	p("")
	p("From `/proc/PID/status`. The server's peak is read after the latency and throughput runs. " +
		"A worker is read when ready and waiting in the pool, then 0.7 s into a one-second call " +
		"(Python: `time.sleep` loop; JavaScript: busy loop).")
	p("")
	p("| process | VmRSS | VmHWM (peak) |")
	p("|---|---:|---:|")
	if r.serverMem.HWM > 0 {
		p("| server (`capsule serve`) | %s | %s |", fmtMiB(r.serverMem.RSS), fmtMiB(r.serverMem.HWM))
	}
	for _, wm := range r.workerMem {
		p("| %s worker, ready | %s | %s |", wm.language, fmtMiB(wm.idle.RSS), fmtMiB(wm.idle.HWM))
		p("| %s worker, running | %s | %s |", wm.language, fmtMiB(wm.busy.RSS), fmtMiB(wm.busy.HWM))
	}
	p("")
	p("A ready worker's proportional set size (`/proc/PID/smaps_rollup`): its own memory is the " +
		"anonymous part; file and shmem pages (the binary, the sealed snapshot) are shared by every worker.")
	p("")
	p("| worker, ready | own (Pss_Anon) | Pss_File | Pss_Shmem | target own | |")
	p("|---|---:|---:|---:|---:|---|")
	for _, wm := range r.workerMem {
		target, check := "", ""
		if wm.language == "Python" {
			target, check = fmtMiB(targetReadyPSSKiB), verdict(wm.idlePSS.Anon <= targetReadyPSSKiB)
		}
		p("| %s | %s | %s | %s | %s | %s |", wm.language, fmtMiB(wm.idlePSS.Anon), fmtMiB(wm.idlePSS.File),
			fmtMiB(wm.idlePSS.Shmem), target, check)
	}
	for _, wm := range r.workerMem {
		if wm.note != "" {
			p("")
			p("%s: %s.", wm.language, wm.note)
		}
	}
	p("")
}

// refValue is a reference's time, NaN when it did not run.
func refValue(c computeRow, ref string) float64 {
	if v, ok := c.reference[ref]; ok {
		return v
	}
	return math.NaN()
}
