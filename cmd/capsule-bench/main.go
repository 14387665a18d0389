// Command capsule-bench measures capsule through MCP stdio, as an agent's
// host uses it: it starts `capsule serve`, calls execute_python and
// execute_javascript with mcp-go's client, and prints Markdown tables of
// latency (pool warm and pool disabled), throughput at several
// concurrencies, time to the first answer with an empty and a filled
// compilation cache, compute overhead against native python3 and node
// (and QuickJS-NG's own wasm build under node), and the peak memory of the
// server and of one worker, each beside capsule's targets.
//
// Usage:
//
//	go run ./cmd/capsule-bench -bin bin/capsule [-n 100] [-pause 50ms] [-quick] [-out docs/bench]
//
// Progress goes to stderr; the report goes to stdout and, with -out DIR,
// also to DIR/results-YYYY-MM-DD-HHMM.md (UTC), a file of its own per run,
// which is how `make bench` keeps its dated results in docs/bench. Every server gets
// its compilation cache in a temporary XDG_CACHE_HOME, so the bench never
// touches the user's cache, and none of the caller's CAPSULE_* variables.
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"strings"
	"time"
)

// options are the bench's flags.
type options struct {
	bin        string
	n          int
	warmup     int
	pause      time.Duration
	duration   time.Duration
	scaleRow   time.Duration
	reps       int
	quick      bool
	skipNode   bool
	skipPython bool
	cpuprofile string
	// out is the directory the report is also written to, as a file of
	// its own; "" writes it to stdout only.
	out  string
	only map[string]bool
}

// phases are the parts of the bench -only can choose.
var phases = []string{"start", "warm", "scaling", "nopool", "files", "memory", "compute", "numpy"}

// hiddenFlags are defined but left out of -help.
var hiddenFlags = map[string]bool{"cpuprofile": true}

func parseFlags(args []string) (options, error) {
	var o options
	fs := flag.NewFlagSet("capsule-bench", flag.ContinueOnError)
	fs.StringVar(&o.bin, "bin", "bin/capsule", "the capsule binary to measure")
	fs.IntVar(&o.n, "n", 40, "measured calls per latency row")
	fs.IntVar(&o.warmup, "warmup", 3, "unmeasured calls before each latency row")
	fs.DurationVar(&o.pause, "pause", time.Second, "pause between latency calls, as an agent leaves them while it thinks; shorter than a Python worker's start-up (about 0.35 s of CPU) empties the pool")
	fs.DurationVar(&o.duration, "duration", 5*time.Second, "how long each throughput row keeps calls in flight")
	fs.DurationVar(&o.scaleRow, "scale-duration", 2*time.Second, "how long each row of the scaling table keeps calls in flight")
	fs.IntVar(&o.reps, "reps", 3, "repetitions of each start-up and compute measurement (the median is reported)")
	fs.BoolVar(&o.quick, "quick", false, "a smoke run: -n 15, -duration 1.5s, -reps 1")
	fs.BoolVar(&o.skipNode, "skip-node", false, "skip the node references (and the npm install of QuickJS-NG)")
	fs.BoolVar(&o.skipPython, "skip-python", false, "skip the native Python references (Debian's python3.11 and python3)")
	only := fs.String("only", strings.Join(phases, ","), "the phases to run, comma-separated: "+strings.Join(phases, ", "))
	fs.StringVar(&o.cpuprofile, "cpuprofile", "", "write the bench's own CPU profile to this file")
	fs.StringVar(&o.out, "out", "", "also write the report to DIR/results-YYYY-MM-DD-HHMM.md (UTC; made if need be, never overwritten); make bench passes docs/bench")
	fs.Usage = func() {
		out := fs.Output()
		fmt.Fprintf(out, "Usage: capsule-bench [flags]\n\nMeasures capsule through MCP stdio and prints Markdown tables.\n\nFlags:\n")
		fs.VisitAll(func(f *flag.Flag) {
			if hiddenFlags[f.Name] {
				return
			}
			fmt.Fprintf(out, "  -%s\n    \t%s (default %q)\n", f.Name, f.Usage, f.DefValue)
		})
	}
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected arguments: %s", strings.Join(fs.Args(), " "))
	}
	o.only = map[string]bool{}
	for _, p := range strings.Split(*only, ",") {
		p = strings.TrimSpace(p)
		if !slices.Contains(phases, p) {
			return o, fmt.Errorf("-only: unknown phase %q; the phases are %s", p, strings.Join(phases, ", "))
		}
		o.only[p] = true
	}
	if o.quick {
		set := map[string]bool{}
		fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
		if !set["n"] {
			o.n = 15
		}
		if !set["duration"] {
			o.duration = 1500 * time.Millisecond
		}
		if !set["scale-duration"] {
			o.scaleRow = time.Second
		}
		if !set["reps"] {
			o.reps = 1
		}
	}
	if o.n < 1 || o.reps < 1 || o.warmup < 0 || o.duration <= 0 || o.scaleRow <= 0 || o.pause < 0 {
		return o, errors.New("-n and -reps must be at least 1, -duration and -scale-duration positive, -warmup and -pause not negative")
	}
	return o, nil
}

func main() {
	o, err := parseFlags(os.Args[1:])
	if errors.Is(err, flag.ErrHelp) {
		os.Exit(0)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "capsule-bench:", err)
		os.Exit(2)
	}
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "capsule-bench:", err)
		os.Exit(1)
	}
}

// began is when the bench started, for the progress log.
var began = time.Now()

// logf writes a progress line to stderr.
func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "[%6.1fs] %s\n", time.Since(began).Seconds(), fmt.Sprintf(format, args...))
}

func run(o options) error {
	if o.cpuprofile != "" {
		f, err := os.Create(o.cpuprofile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	bin, err := filepath.Abs(o.bin)
	if err != nil {
		return err
	}
	if _, err := os.Stat(bin); err != nil {
		return fmt.Errorf("%w (run make build first)", err)
	}
	tmp, err := os.MkdirTemp("", "capsule-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)

	r := &report{opts: o, date: time.Now(), machine: readMachine()}
	if out, err := exec.Command(bin, "version").Output(); err == nil {
		r.capsuleVersion = strings.TrimSpace(string(out))
	}
	r.loadBefore = loadAverage()
	b := &bench{o: o, bin: bin, tmp: tmp, cache: filepath.Join(tmp, "cache"), r: r}
	steps := []struct {
		name string
		run  func() error
	}{
		{"start", b.coldStart},
		{"", b.fillCache},
		{"start", b.warmStart},
		{"warm", b.warmPool},
		{"scaling", b.scaling},
		{"nopool", b.noPool},
		{"files", b.filesOverhead},
		{"memory", b.workerMemory},
		{"compute", b.compute},
		{"numpy", b.numpy},
	}
	var failed error
	for _, st := range steps {
		if st.name != "" && !o.only[st.name] {
			continue
		}
		if failed = st.run(); failed != nil {
			break
		}
	}
	r.loadAfter = loadAverage()
	logf("done in %s", time.Since(began).Round(time.Second))
	// What was measured is printed, and written, even when a phase failed.
	r.print(os.Stdout)
	if o.out != "" {
		path, err := r.writeResults(o.out)
		if err != nil {
			return errors.Join(failed, err)
		}
		logf("report written to %s", path)
	}
	return failed
}

// bench holds what the phases share.
type bench struct {
	o   options
	bin string
	tmp string
	// cache is the XDG_CACHE_HOME of every server but the empty-cache
	// ones; fillCache fills it.
	cache string
	r     *report
}

// languages are the two tools with their display names and trivial code.
var languages = []struct {
	name, tool, flag string
}{
	{"Python", toolPython, "--pool-python"},
	{"JavaScript", toolJavaScript, "--pool-javascript"},
}

const trivialCode = "1+1"

// noPoolFlags disable both pools.
var noPoolFlags = []string{"--pool-python", "0", "--pool-javascript", "0"}

// firstAnswer starts a server on cacheHome and times its initialize and
// its first answer, both from the process start.
func (b *bench) firstAnswer(cacheHome, tool string) (initMS, firstMS float64, log string, err error) {
	s, err := startServer(b.bin, cacheHome)
	if err != nil {
		return 0, 0, "", err
	}
	defer s.close()
	if _, err := s.call(tool, trivialCode); err != nil {
		return 0, 0, "", err
	}
	first := time.Since(s.started)
	return ms(s.initialized.Sub(s.started)), ms(first), s.stderr.since(0), nil
}

// preparation reads where the preparation of language went from a server's
// JSON log: its "runtime prepared" line, which the server writes when the
// cache was empty (a Python snapshot variant's line, written when a call
// first asks for it, names its variant and is not the runtime's).
func preparation(log, language string) (p preparedRow, ok bool) {
	for line := range strings.Lines(log) {
		var m struct {
			Message      string  `json:"@message"`
			Language     string  `json:"language"`
			Variant      string  `json:"variant"`
			Duration     float64 `json:"duration_ms"`
			Worker       float64 `json:"worker_ms"`
			WorkerCPU    float64 `json:"worker_cpu_ms"`
			StoreAndSeal float64 `json:"store_and_seal_ms"`
		}
		if json.Unmarshal([]byte(line), &m) == nil && m.Message == "runtime prepared" && m.Language == language && m.Variant == "" {
			return preparedRow{total: m.Duration, worker: m.Worker, workerCPU: m.WorkerCPU, seal: m.StoreAndSeal}, true
		}
	}
	return p, false
}

// coldStart measures the time from starting serve to the first answer
// with an empty compilation cache: a fresh XDG_CACHE_HOME each time, so the
// server prepares both runtimes (loads or compiles their code, and makes
// the snapshots).
func (b *bench) coldStart() error {
	for _, l := range languages {
		row := startRow{language: l.name}
		for i := range b.o.reps {
			home := filepath.Join(b.tmp, fmt.Sprintf("cold-%s-%d", l.tool, i))
			logf("start-up: %s, empty cache (%d/%d)", l.name, i+1, b.o.reps)
			in, first, log, err := b.firstAnswer(home, l.tool)
			os.RemoveAll(home)
			if err != nil {
				return err
			}
			row.coldInit = append(row.coldInit, in)
			row.cold = append(row.cold, first)
			if p, ok := preparation(log, strings.ToLower(l.name)); ok {
				row.prepared = append(row.prepared, p)
			}
		}
		b.r.starts = append(b.r.starts, row)
	}
	return nil
}

// fillCache fills the shared compilation cache: one call of each language,
// which also waits for both modules to be compiled.
func (b *bench) fillCache() error {
	logf("filling the compilation cache")
	s, err := startServer(b.bin, b.cache)
	if err != nil {
		return err
	}
	defer s.close()
	for _, l := range languages {
		if _, err := s.call(l.tool, trivialCode); err != nil {
			return err
		}
	}
	return nil
}

// warmStart measures the time from starting serve to the first answer
// with the filled compilation cache.
func (b *bench) warmStart() error {
	for i, l := range languages {
		row := &b.r.starts[i]
		for j := range b.o.reps {
			logf("start-up: %s, filled cache (%d/%d)", l.name, j+1, b.o.reps)
			in, first, _, err := b.firstAnswer(b.cache, l.tool)
			if err != nil {
				return err
			}
			row.warmInit = append(row.warmInit, in)
			row.warm = append(row.warm, first)
		}
	}
	return nil
}

// latencyCase is what a latency row calls, and how.
type latencyCase struct {
	pool  string        // the pool setting, as the table shows it
	what  string        // the code, as the table shows it
	code  string        // the code
	pause time.Duration // between calls
	// variant is the snapshot variant the code's calls start from once
	// the server has made it (on the first such call): the row measures
	// them from then on.
	variant string
}

// variantWait bounds the unmeasured calls a row makes while the server
// makes its snapshot variant (seconds; a binary without variants never
// logs one).
const variantWait = time.Minute

// latency makes n calls one at a time, pausing between them, after warmup
// unmeasured ones (and, for a variant's row, those until the server's log
// says a call started from the variant) and a second for the pool to fill.
func (b *bench) latency(s *server, language, tool string, c latencyCase) (latencyRow, error) {
	row := latencyRow{language: language, pool: c.pool, what: c.what, pause: c.pause}
	logf("latency: %s, pool %s, %s, %s apart, %d calls", language, c.pool, c.what, c.pause, b.o.n)
	warmStart := s.stderr.len()
	for range b.o.warmup {
		if _, err := s.call(tool, c.code); err != nil {
			return row, err
		}
		time.Sleep(c.pause)
	}
	if c.variant != "" {
		started := time.Now()
		inUse := func() bool { return startedFromVariant(s.stderr.since(warmStart), c.variant) }
		for !inUse() && time.Since(started) < variantWait {
			if _, err := s.call(tool, c.code); err != nil {
				return row, err
			}
			time.Sleep(c.pause)
		}
		if inUse() {
			logf("latency: calls start from the %s snapshot variant, after %s of unmeasured calls", c.variant, time.Since(started).Round(time.Millisecond))
		} else {
			logf("latency: no call started from a %s snapshot variant within %s", c.variant, variantWait)
		}
	}
	time.Sleep(time.Second)
	logStart := s.stderr.len()
	before, err := readCPU(s.pid())
	if err != nil {
		return row, err
	}
	for range b.o.n {
		a, err := s.call(tool, c.code)
		if err != nil {
			return row, err
		}
		row.wall = append(row.wall, ms(a.wall))
		row.server = append(row.server, a.durationMS())
		time.Sleep(c.pause)
	}
	row.phases = workerPhases(s.stderr.since(logStart))
	after, err := readCPU(s.pid())
	if err != nil {
		return row, err
	}
	row.cpu = perCall(before, after, b.o.n)
	return row, nil
}

// perCall divides the CPU used between two readings by the calls made.
func perCall(before, after cpuTimes, calls int) cpuTimes {
	if calls == 0 {
		return cpuTimes{}
	}
	return cpuTimes{
		self:     (after.self - before.self) / time.Duration(calls),
		children: (after.children - before.children) / time.Duration(calls),
	}
}

// throughput keeps conc calls in flight for the configured duration, and
// counts the calls per second, from the first call to the last answer.
func (b *bench) throughput(s *server, language, tool string, conc int) (throughputRow, error) {
	logf("throughput: %s, %d in flight, %s", language, conc, b.o.duration)
	time.Sleep(time.Second) // let the pool fill after the previous row
	return b.inFlight(s, language, tool, conc, b.o.duration)
}

// scalingConcurrency are the scaling table's calls in flight.
var scalingConcurrency = []int{1, 2, 4, 8, 16, 32}

// scaling measures throughput, latency and CPU per call at each of
// scalingConcurrency, for both languages, over stdio and over HTTP, with
// the default flags (so the pools may grow to --max-concurrency, one per
// CPU; over HTTP the one client may have all its calls in flight). Rows are short: this shows how the server scales with the calls
// in flight on this machine's cores, not a long-run rate.
func (b *bench) scaling() error {
	for _, t := range []struct {
		name  string
		start func(bin, cacheHome string, flags ...string) (*server, error)
		flags []string
	}{
		{"stdio", startServer, nil},
		// The bench is one client with up to 32 calls in flight; over HTTP
		// one client may have only twice --max-concurrency by default.
		{"HTTP", startHTTPServer, []string{"--max-client-concurrency", "64"}},
	} {
		logf("scaling: starting a server with the default flags, over %s", t.name)
		s, err := t.start(b.bin, b.cache, t.flags...)
		if err != nil {
			return err
		}
		for _, l := range languages {
			if _, err := s.call(l.tool, trivialCode); err != nil {
				s.close()
				return err
			}
			for _, conc := range scalingConcurrency {
				logf("scaling: %s over %s, %d in flight, %s", l.name, t.name, conc, b.o.scaleRow)
				// The pool back at rest between rows, as a new burst of
				// calls finds it.
				time.Sleep(500 * time.Millisecond)
				row, err := b.inFlight(s, l.name, l.tool, conc, b.o.scaleRow)
				if err != nil {
					s.close()
					return err
				}
				b.r.scaling = append(b.r.scaling, scalingRow{transport: t.name, throughputRow: row})
			}
		}
		s.close()
	}
	return nil
}

// inFlight keeps conc calls of trivial code in flight for d, and counts
// the calls per second, from the first call to the last answer, and the
// server's and its workers' CPU per call.
func (b *bench) inFlight(s *server, language, tool string, conc int, d time.Duration) (throughputRow, error) {
	type result struct {
		lat []float64
		err error
	}
	results := make(chan result, conc)
	before, err := readCPU(s.pid())
	if err != nil {
		return throughputRow{}, err
	}
	start := time.Now()
	for range conc {
		go func() {
			var res result
			for time.Since(start) < d {
				a, err := s.call(tool, trivialCode)
				if err != nil {
					res.err = err
					break
				}
				res.lat = append(res.lat, ms(a.wall))
			}
			results <- res
		}()
	}
	row := throughputRow{language: language, concurrency: conc}
	var firstErr error
	for range conc {
		res := <-results
		if res.err != nil && firstErr == nil {
			firstErr = res.err
		}
		row.latencies = append(row.latencies, res.lat...)
	}
	row.elapsed = time.Since(start)
	row.calls = len(row.latencies)
	after, err := readCPU(s.pid())
	if err != nil {
		return row, err
	}
	row.cpu = perCall(before, after, row.calls)
	return row, firstErr
}

// warmPool measures latency and throughput with the default pools, then
// the server's peak RSS.
func (b *bench) warmPool() error {
	logf("starting a server with the default pools")
	s, err := startServer(b.bin, b.cache)
	if err != nil {
		return err
	}
	defer s.close()
	for _, l := range languages {
		cases := []latencyCase{
			{pool: "warm (2)", what: "trivial", code: trivialCode, pause: b.o.pause},
			{pool: "warm (2)", what: "trivial", code: trivialCode, pause: sequentialPause},
		}
		if l.tool == toolPython {
			cases = append(cases, latencyCase{pool: "warm (2)", what: "realistic", code: realisticPython, pause: b.o.pause},
				latencyCase{pool: "warm (2)", what: "sympy", code: sympyPython, pause: sequentialPause, variant: "sympy"},
				latencyCase{pool: "warm (2)", what: "networkx", code: networkxPython, pause: sequentialPause, variant: "networkx"})
			if b.hasNumpy() {
				cases = append(cases, latencyCase{pool: "warm (2)", what: "numpy", code: numpyPython, pause: sequentialPause, variant: "numpy"})
			}
		}
		for _, c := range cases {
			row, err := b.latency(s, l.name, l.tool, c)
			if err != nil {
				return err
			}
			b.r.latency = append(b.r.latency, row)
		}
	}
	for _, l := range languages {
		for _, c := range []int{1, 2, 8} {
			row, err := b.throughput(s, l.name, l.tool, c)
			if err != nil {
				return err
			}
			b.r.throughput = append(b.r.throughput, row)
		}
	}
	m, err := readMem(s.pid())
	if err != nil {
		return err
	}
	b.r.serverMem = m
	return nil
}

// noPool measures latency with both pools disabled.
func (b *bench) noPool() error {
	logf("starting a server with the pools disabled")
	s, err := startServer(b.bin, b.cache, noPoolFlags...)
	if err != nil {
		return err
	}
	defer s.close()
	for _, l := range languages {
		row, err := b.latency(s, l.name, l.tool, latencyCase{pool: "off (0)", what: "trivial", code: trivialCode, pause: b.o.pause})
		if err != nil {
			return err
		}
		b.r.latency = append(b.r.latency, row)
	}
	return nil
}

// sequentialPause is how far apart an agent's calls come when it calls
// again at once: the pool must keep up with that.
const sequentialPause = 20 * time.Millisecond

// realisticPython is what an agent's ordinary data question looks like:
// common imports, a small table built and summarised.
const realisticPython = `import json, re, datetime, collections, statistics, math
rows = [{"day": (datetime.date(2026, 1, 1) + datetime.timedelta(days=i)).isoformat(),
         "sales": (i * 37) % 101, "region": ["north", "south", "east"][i % 3]} for i in range(200)]
by_region = collections.defaultdict(list)
for r in rows:
    by_region[r["region"]].append(r["sales"])
summary = {k: {"mean": statistics.mean(v), "stdev": round(statistics.stdev(v), 2),
               "max": max(v), "log_total": round(math.log(sum(v)), 3)} for k, v in by_region.items()}
weekdays = collections.Counter(datetime.date.fromisoformat(r["day"]).strftime("%A") for r in rows)
assert re.match(r"\d{4}-\d{2}-\d{2}", rows[0]["day"])
json.dumps({"summary": summary, "busiest": weekdays.most_common(1)})`

// sympyPython, networkxPython and numpyPython import the heaviest bundled
// packages and use them a little, as an agent's first line of algebra,
// graph or data work.
const (
	sympyPython    = "import sympy; x = sympy.Symbol('x'); sympy.expand((x + 1)**10)"
	networkxPython = "import networkx"
	// numpyPython is a small task: a linear solve and a mean.
	numpyPython = "import numpy as np\na = np.array([[3.0, 1.0], [1.0, 2.0]])\n" +
		"[np.linalg.solve(a, np.array([9.0, 8.0])).tolist(), float(np.arange(1000.0).mean())]"
)

// longCode keeps a worker busy for about a second.
var longCode = map[string]string{
	toolPython:     "import time\nfor _ in range(10):\n    time.sleep(0.1)\n1",
	toolJavaScript: "const t = Date.now();\nwhile (Date.now() - t < 1000) {}\n1",
}

// workerMemory reads one worker's memory per language. The server keeps
// one ready worker of that language and none of the other, so its only
// child is that worker: read idle, then while it runs a one-second call
// (the pool hands exactly that worker the call).
func (b *bench) workerMemory() error {
	for _, l := range languages {
		flags := append([]string{}, noPoolFlags...)
		for i := range flags {
			if flags[i] == l.flag {
				flags[i+1] = "1"
			}
		}
		logf("memory: one %s worker", l.name)
		row, err := b.oneWorker(l.name, l.tool, flags)
		if err != nil {
			return err
		}
		b.r.workerMem = append(b.r.workerMem, row)
	}
	return nil
}

func (b *bench) oneWorker(language, tool string, flags []string) (workerMemRow, error) {
	row := workerMemRow{language: language}
	s, err := startServer(b.bin, b.cache, flags...)
	if err != nil {
		return row, err
	}
	defer s.close()
	if _, err := s.call(tool, trivialCode); err != nil {
		return row, err
	}
	// The pool refills; the other language's cache-filling worker exits.
	deadline := time.Now().Add(10 * time.Second)
	var kids []int
	for {
		time.Sleep(300 * time.Millisecond)
		kids = children(s.pid())
		if len(kids) == 1 || time.Now().After(deadline) {
			break
		}
	}
	if len(kids) != 1 {
		return row, fmt.Errorf("memory: the server has %d children, want exactly its one ready worker", len(kids))
	}
	pid := kids[0]
	if !waitIdle(pid, 30*time.Second) {
		return row, fmt.Errorf("memory: worker %d did not settle as a ready worker", pid)
	}
	if row.idle, err = readMem(pid); err != nil {
		return row, err
	}
	if row.idlePSS, err = readPSS(pid); err != nil {
		return row, err
	}
	done := make(chan error, 1)
	go func() {
		_, err := s.call(tool, longCode[tool])
		done <- err
	}()
	time.Sleep(700 * time.Millisecond)
	busy, busyErr := readMem(pid)
	if err := <-done; err != nil {
		return row, err
	}
	if busyErr != nil {
		return row, fmt.Errorf("memory: worker %d during the call: %w", pid, busyErr)
	}
	row.busy = busy
	// The worker that ran the call exits after it: that confirms it was
	// the one measured.
	time.Sleep(200 * time.Millisecond)
	if _, err := os.Stat(fmt.Sprintf("/proc/%d/status", pid)); err == nil {
		if m, err := readMem(pid); err == nil && m.RSS > 0 {
			row.note = "the measured worker outlived the call: it may not be the one that ran it"
		}
	}
	return row, nil
}

// pythonComputeRow runs a Python snippet under capsule and under the
// reference interpreters in refs (name: command), in turn within each
// repetition, so that a change in the machine's speed during the run
// (other work on a shared machine) reaches both sides of a ratio alike.
func (b *bench) pythonComputeRow(s *server, sn snippet, refs map[string]string) (computeRow, error) {
	row := computeRow{snippet: sn, reference: map[string]float64{}}
	var inner, call []float64
	times := map[string][]float64{}
	for range b.o.reps {
		in, c, err := runCapsuleSnippet(s, sn, 1)
		if err != nil {
			return row, err
		}
		inner, call = append(inner, in), append(call, c)
		for ref, command := range refs {
			v, err := runRef(1, command, "-c", sn.code+"\nprint(elapsed_ms)")
			if err != nil {
				return row, err
			}
			times[ref] = append(times[ref], v)
		}
	}
	row.capsule, row.call = median(inner), median(call)
	for ref, xs := range times {
		row.reference[ref] = median(xs)
	}
	return row, nil
}

// compute runs the CPU-bound snippets under capsule and the references.
func (b *bench) compute() error {
	logf("compute: starting a server with the default pools")
	s, err := startServer(b.bin, b.cache)
	if err != nil {
		return err
	}
	defer s.close()
	// Let the pools fill, so that each snippet gets a ready worker.
	for _, l := range languages {
		if _, err := s.call(l.tool, trivialCode); err != nil {
			return err
		}
	}
	time.Sleep(time.Second)
	r := b.r
	if b.o.skipPython {
		r.debianPythonNote = "skipped (-skip-python)"
	} else if r.debianPythonNote = ensureDebianPython(); r.debianPythonNote == "" {
		r.debianPythonVersion = commandVersion(debianPython)
	}
	if b.o.skipPython {
		r.pythonNote = "skipped (-skip-python)"
	} else if _, err := exec.LookPath("python3"); err != nil {
		r.pythonNote = "skipped: no python3 on PATH"
	} else {
		r.pythonVersion = commandVersion("python3")
	}
	// The references present, by name: each runs the snippets too.
	refs := map[string]string{}
	if r.debianPythonVersion != "" {
		refs[refDebianPython] = debianPython
	}
	if r.pythonVersion != "" {
		refs[refPython] = "python3"
	}
	for _, sn := range pythonSnippets {
		logf("compute: Python %s", sn.name)
		row, err := b.pythonComputeRow(s, sn, refs)
		if err != nil {
			return err
		}
		r.computePy = append(r.computePy, row)
	}

	haveNode := false
	if b.o.skipNode {
		r.nodeNote = "skipped (-skip-node)"
	} else if _, err := exec.LookPath("node"); err != nil {
		r.nodeNote = "skipped: no node on PATH"
	} else {
		haveNode = true
		r.nodeVersion = commandVersion("node")
	}
	nodeDir := filepath.Join(b.tmp, "node")
	haveQuickJS := false
	if haveNode {
		if err := os.MkdirAll(nodeDir, 0o755); err != nil {
			return err
		}
		logf("compute: npm install %s", strings.Join(quickjsPackages, " "))
		v, err := nodeSetup(nodeDir, true)
		if err != nil {
			r.quickjsNote = "skipped: " + err.Error()
			if _, err := nodeSetup(nodeDir, false); err != nil {
				return err
			}
		} else {
			haveQuickJS = true
			r.quickjsVersions = v
		}
	}
	for i, sn := range jsSnippets {
		logf("compute: JavaScript %s", sn.name)
		row := computeRow{snippet: sn, reference: map[string]float64{}}
		if row.capsule, row.call, err = runCapsuleSnippet(s, sn, b.o.reps); err != nil {
			return err
		}
		if haveNode {
			file := filepath.Join(nodeDir, fmt.Sprintf("snippet%d.js", i))
			if err := os.WriteFile(file, []byte(sn.code), 0o644); err != nil {
				return err
			}
			runner := filepath.Join(nodeDir, "runner.js")
			if haveQuickJS {
				if row.reference[refQuickJS], err = runRef(b.o.reps, "node", runner, "quickjs", file); err != nil {
					return err
				}
			}
			if row.reference[refNode], err = runRef(b.o.reps, "node", runner, "node", file); err != nil {
				return err
			}
		}
		r.computeJS = append(r.computeJS, row)
	}
	return nil
}
