package supervisor

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"capsule/runtimes"
	"capsule/runtimes/fileset"
	"capsule/runtimes/python"
	"capsule/supervisor/isolation"
)

// Limits bound every execution. The defaults are documented in the README
// and stated, with the configured values, in each tool's description.
type Limits struct {
	// Timeout is the wall-clock limit of one execution.
	Timeout time.Duration
	// MaxTimeout caps the per-call timeout_seconds a client may ask for.
	MaxTimeout time.Duration
	// Memory caps the guest's linear memory.
	Memory Size
	// MaxOutput caps stdout and stderr, each; beyond it output is dropped
	// and counted, and the run goes on.
	MaxOutput Size
	// MaxCode caps the length of the submitted code in characters
	// (Unicode code points, as the input schema's maxLength counts them),
	// and the size of the inputs in bytes of JSON.
	MaxCode Size
	// Scratch caps a Python call's private writable directory (/tmp, the
	// working directory), held in the worker's memory on top of Memory;
	// 0 means no writable directory.
	Scratch Size
	// MaxFilesIn caps the files passed in to one call, all together.
	MaxFilesIn Size
	// MaxFilesInCount caps how many files one call may pass in; at most
	// fileset.MaxListed.
	MaxFilesInCount int
	// MaxFilesOut caps the files one call returns, all together; beyond
	// it (or beyond MaxFilesOutCount files) they are listed, not sent.
	MaxFilesOut      Size
	MaxFilesOutCount int
	// MaxAnswer caps an MCP answer as encoded JSON: the text, the
	// structured content and the files sent, all together. Output comes
	// first; files fill what is left, and those that do not fit are
	// listed, not sent (answersize.go).
	MaxAnswer Size
}

// DefaultLimits are the limits when no flag or environment variable is set.
var DefaultLimits = Limits{
	Timeout:    30 * time.Second,
	MaxTimeout: 120 * time.Second,
	Memory:     256 << 20,
	MaxOutput:  1 << 20,
	MaxCode:    1 << 20,
	Scratch:    64 << 20,
	// A 5 MiB CSV in and out, with room to spare.
	MaxFilesIn:       8 << 20,
	MaxFilesInCount:  256,
	MaxFilesOut:      8 << 20,
	MaxFilesOutCount: 64,
	// The TypeScript SDK, which most MCP hosts are built on, drops a
	// stdio connection on a message over 10 MiB; 8 MiB leaves room for
	// the envelope and for clients with a slightly smaller buffer.
	MaxAnswer: 8 << 20,
}

// Config is everything the supervisor is configured with.
type Config struct {
	Limits Limits
	// MaxConcurrency is how many executions run at once; more wait.
	MaxConcurrency int
	// MaxQueue is how many calls may wait for a slot; beyond it a call is
	// answered at once that the server is busy. 0 means no limit.
	MaxQueue int
	// CacheDir holds wazero's compilation cache. Empty disables it.
	CacheDir string
	// Pool is the fewest ready workers kept per language: while calls come
	// the pool grows with them, up to MaxConcurrency (see pool). 0
	// disables the pool for that language.
	Pool map[string]int
	// PoolIdle is how long a ready worker may wait before it is recycled.
	PoolIdle time.Duration
	// Isolation says which unprivileged ids workers get in their user
	// namespace.
	Isolation isolation.Options
	// RequireHardening makes any missing OS hardening layer fatal at start.
	RequireHardening bool
	// Prewarm starts the pools (and so fills the compilation cache) when
	// the supervisor starts. One-shot commands such as exec leave it off.
	Prewarm bool
	// Exec says the calls come from capsule exec, whose limits its own
	// flags set: a limit's note names them, not a call's arguments.
	Exec bool
	// maxTimeoutGiven records that --max-timeout (or its variable) was
	// set: a default may follow --timeout up, a given value may not.
	maxTimeoutGiven bool
	// PythonPath is a directory or zip of the operator's pure-Python
	// packages, importable read-only in every Python call; empty for none.
	PythonPath string
	// BundledPackages makes the pure-Python packages embedded with the
	// Python runtime (sympy, networkx, ...) importable in every Python
	// call, before PythonPath's.
	BundledPackages bool
	// PythonVariants names the Python snapshot variants in use
	// (python.Variants): interpreters with heavy bundled packages already
	// imported, each made on its first call.
	PythonVariants []string
}

// DefaultConfig returns the configuration with every default applied.
func DefaultConfig() Config {
	return Config{
		Limits:          DefaultLimits,
		MaxConcurrency:  runtime.NumCPU(),
		MaxQueue:        256,
		CacheDir:        DefaultCacheDir(),
		Pool:            map[string]int{runtimes.Python: 2, runtimes.JavaScript: 2},
		PoolIdle:        time.Minute,
		BundledPackages: true,
		PythonVariants:  python.VariantNames(),
		Isolation:       isolation.Options{UID: isolation.DefaultID, GID: isolation.DefaultID, HostUID: defaultHostID(), HostGID: defaultHostID()},
	}
}

// defaultHostID is the host uid and gid workers map to by default: nobody
// when the supervisor is root, whose own ids would make workers host root
// outside their namespace; otherwise the supervisor's own (0), the only
// ids an unprivileged process can map.
func defaultHostID() int {
	if os.Geteuid() == 0 {
		return isolation.DefaultID
	}
	return 0
}

// DefaultCacheDir is the compilation cache under the user's cache directory,
// keyed by our version so a new capsule never loads code compiled for an
// older one (wazero's own key adds the module hash and wazero version).
func DefaultCacheDir() string {
	base, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	return fmt.Sprintf("%s/capsule/%s", base, Version)
}

// durationValue is a flag.Value for a positive time.Duration.
type durationValue struct{ d *time.Duration }

func (v durationValue) String() string {
	if v.d == nil {
		return ""
	}
	return v.d.String()
}

func (v durationValue) Set(s string) error {
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		return fmt.Errorf("invalid duration %q: want a positive Go duration such as 30s or 2m", s)
	}
	*v.d = d
	return nil
}

// intValue is a flag.Value for an integer of at least min.
type intValue struct {
	n   *int
	min int
}

func (v intValue) String() string {
	if v.n == nil {
		return ""
	}
	return fmt.Sprint(*v.n)
}

func (v intValue) Set(s string) error {
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil || n < v.min {
		return fmt.Errorf("invalid count %q: want a whole number of at least %d", s, v.min)
	}
	*v.n = n
	return nil
}

// poolValue is a flag.Value for one language's pool size.
type poolValue struct {
	pool     map[string]int
	language string
}

func (v poolValue) String() string {
	if v.pool == nil {
		return ""
	}
	return fmt.Sprint(v.pool[v.language])
}

func (v poolValue) Set(s string) error {
	n := 0
	if err := (intValue{&n, 0}).Set(s); err != nil {
		return err
	}
	v.pool[v.language] = n
	return nil
}

// EnvFlags ties flags to environment variables: a flag not given on the
// command line takes its variable's value, if set.
type EnvFlags struct {
	fs  *flag.FlagSet
	env map[string]string // flag name → variable
}

// NewEnvFlags wraps fs.
func NewEnvFlags(fs *flag.FlagSet) *EnvFlags {
	return &EnvFlags{fs: fs, env: map[string]string{}}
}

// FlagSet is the flag set e wraps.
func (e *EnvFlags) FlagSet() *flag.FlagSet { return e.fs }

// Var defines a flag backed by value, read from variable env when the flag
// is absent. The usage text gets the variable's name appended.
func (e *EnvFlags) Var(value flag.Value, name, env, usage string) {
	e.fs.Var(value, name, fmt.Sprintf("%s (env %s)", usage, env))
	e.env[name] = env
}

// Parse parses args, then applies environment variables to the flags that
// were not given.
func (e *EnvFlags) Parse(args []string) error {
	if err := e.fs.Parse(args); err != nil {
		return err
	}
	given := map[string]bool{}
	e.fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	for name, env := range e.env {
		v, ok := os.LookupEnv(env)
		if !ok || given[name] {
			continue
		}
		if err := e.fs.Lookup(name).Value.Set(v); err != nil {
			return fmt.Errorf("%s: %w", env, err)
		}
	}
	return nil
}

// RegisterFlags defines the configuration's flags, with their environment
// variables, on e.
func (c *Config) RegisterFlags(e *EnvFlags) {
	e.Var(durationValue{&c.Limits.Timeout}, "timeout", "CAPSULE_TIMEOUT", "wall-clock limit of one execution")
	e.Var(givenValue{durationValue{&c.Limits.MaxTimeout}, &c.maxTimeoutGiven}, "max-timeout", "CAPSULE_MAX_TIMEOUT",
		"the most a call's timeout_seconds may ask for; not below --timeout (left unset, it rises to --timeout)")
	e.Var(&c.Limits.Memory, "memory", "CAPSULE_MEMORY", "memory limit of one execution")
	e.Var(&c.Limits.MaxOutput, "max-output", "CAPSULE_MAX_OUTPUT", "limit on stdout and on stderr, each; the rest is dropped and counted")
	e.Var(&c.Limits.MaxCode, "max-code", "CAPSULE_MAX_CODE", "limit on the submitted code, in characters (as the tools' maxLength counts them), and on the inputs, in bytes of JSON")
	e.Var(&c.Limits.Scratch, "scratch", "CAPSULE_SCRATCH", "size of a Python call's private in-memory /tmp, held in the worker on top of --memory (0: none)")
	e.Var(&c.Limits.MaxFilesIn, "max-files-in", "CAPSULE_MAX_FILES_IN", "limit on the files passed in to one call, all together (0: none may be)")
	e.Var(intValue{&c.Limits.MaxFilesInCount, 0}, "max-files-in-count", "CAPSULE_MAX_FILES_IN_COUNT",
		fmt.Sprintf("how many files one call may pass in, at most %d; more are refused before a worker starts (0: none may be)", fileset.MaxListed))
	e.Var(&c.Limits.MaxFilesOut, "max-files-out", "CAPSULE_MAX_FILES_OUT", "limit on the files one call returns, all together; files beyond it are listed, not sent")
	e.Var(&c.Limits.MaxAnswer, "max-answer", "CAPSULE_MAX_ANSWER",
		"limit on an MCP answer's encoded size (text, structured content and files as base64); output comes first, files that do not fit are listed, not sent")
	e.Var(intValue{&c.Limits.MaxFilesOutCount, 0}, "max-files-out-count", "CAPSULE_MAX_FILES_OUT_COUNT", "how many files one call may return; files beyond it are listed, not sent")
	e.Var(StringValue{&c.PythonPath}, "python-path", "CAPSULE_PYTHON_PATH", "directory or zip of pure-Python packages importable in every Python call (read-only), after the bundled ones")
	e.Var(boolValue{&c.BundledPackages}, "bundled-packages", "CAPSULE_BUNDLED_PACKAGES", "make the bundled pure-Python packages (sympy, networkx, ...: see capsule version) importable in Python calls")
	e.Var(variantsValue{&c.PythonVariants}, "python-variants", "CAPSULE_PYTHON_VARIANTS",
		"Python snapshot variants, comma-separated: interpreters with these bundled packages already imported, made on their first call; none for none ("+strings.Join(python.VariantNames(), ", ")+")")
	e.Var(intValue{&c.MaxConcurrency, 1}, "max-concurrency", "CAPSULE_MAX_CONCURRENCY", "executions that run at once, by default one per CPU; more wait their turn")
	e.Var(intValue{&c.MaxQueue, 0}, "max-queue", "CAPSULE_MAX_QUEUE", "calls that may wait for a free worker; beyond it a call is answered that the server is busy (0: no limit)")
	e.Var(poolValue{c.Pool, runtimes.Python}, "pool-python", "CAPSULE_POOL_PYTHON", "the fewest ready Python workers kept waiting; more while calls come, up to --max-concurrency; 0 disables the pool")
	e.Var(poolValue{c.Pool, runtimes.JavaScript}, "pool-javascript", "CAPSULE_POOL_JAVASCRIPT", "the fewest ready JavaScript workers kept waiting; more while calls come, up to --max-concurrency; 0 disables the pool")
	e.Var(intValue{&c.Isolation.UID, 1}, "worker-uid", "CAPSULE_WORKER_UID", "unprivileged uid of a worker inside its user namespace")
	e.Var(intValue{&c.Isolation.GID, 1}, "worker-gid", "CAPSULE_WORKER_GID", "unprivileged gid of a worker inside its user namespace")
	e.Var(intValue{&c.Isolation.HostUID, 0}, "worker-host-uid", "CAPSULE_WORKER_HOST_UID",
		"host uid a worker's uid maps to; needs root to differ from the server's own (0: the server's own uid)")
	e.Var(intValue{&c.Isolation.HostGID, 0}, "worker-host-gid", "CAPSULE_WORKER_HOST_GID",
		"host gid a worker's gid maps to; needs root to differ from the server's own (0: the server's own gid)")
	e.Var(boolValue{&c.RequireHardening}, "require-hardening", "CAPSULE_REQUIRE_HARDENING", "refuse to start when any OS hardening layer is unavailable")
	e.Var(durationValue{&c.PoolIdle}, "pool-idle", "CAPSULE_POOL_IDLE", "how long a ready worker waits before it is recycled")
}

// ErrConfig marks a configuration that cannot work: the commands exit with
// the usage status on it, not with the failure one.
var ErrConfig = errors.New("invalid configuration")

// Validate checks that the limits make sense together. An error wraps
// ErrConfig.
func (c *Config) Validate() error {
	if err := c.validate(); err != nil {
		return fmt.Errorf("%w: %w", ErrConfig, err)
	}
	return nil
}

func (c *Config) validate() error {
	if c.Limits.MaxTimeout < c.Limits.Timeout {
		if c.maxTimeoutGiven {
			// A default timeout that no call could even ask for is a
			// mistake; silently raising the given maximum hides it.
			return fmt.Errorf("max-timeout %s is below timeout %s: a call could not even ask for the default; raise --max-timeout or lower --timeout",
				c.Limits.MaxTimeout, c.Limits.Timeout)
		}
		c.Limits.MaxTimeout = c.Limits.Timeout
	}
	if os.Geteuid() != 0 {
		if h := c.Isolation.HostUID; h != 0 && h != os.Getuid() {
			return fmt.Errorf("worker-host-uid %d: only root can map workers to another host uid than its own (%d)", h, os.Getuid())
		}
		if h := c.Isolation.HostGID; h != 0 && h != os.Getgid() {
			return fmt.Errorf("worker-host-gid %d: only root can map workers to another host gid than its own (%d)", h, os.Getgid())
		}
	}
	if c.Limits.Memory < runtimes.MinMemory {
		return fmt.Errorf("memory limit %s is too small: the interpreters need at least %s", c.Limits.Memory, Size(runtimes.MinMemory))
	}
	if c.Limits.MaxCode < 1 {
		return fmt.Errorf("code size limit must be at least 1 byte")
	}
	if c.Limits.MaxFilesInCount > fileset.MaxListed {
		return fmt.Errorf("max-files-in-count %d is above the most a call may pass in, %d", c.Limits.MaxFilesInCount, fileset.MaxListed)
	}
	if c.Limits.MaxAnswer < MinAnswer {
		return fmt.Errorf("max-answer %s is too small: an answer needs at least %s for its text and structured content", c.Limits.MaxAnswer, Size(MinAnswer))
	}
	if c.MaxConcurrency < 1 {
		return fmt.Errorf("max-concurrency must be at least 1")
	}
	return nil
}

// givenValue wraps a flag.Value and records that it was set.
type givenValue struct {
	flag.Value
	given *bool
}

func (v givenValue) String() string {
	if v.Value == nil {
		return ""
	}
	return v.Value.String()
}

func (v givenValue) Set(s string) error {
	if err := v.Value.Set(s); err != nil {
		return err
	}
	*v.given = true
	return nil
}

// boolValue is a flag.Value for a boolean that also reads 1/0, yes/no, on/off.
type boolValue struct{ b *bool }

func (v boolValue) String() string {
	if v.b == nil {
		return "false"
	}
	return strconv.FormatBool(*v.b)
}

// IsBoolFlag lets the flag be given without a value.
func (v boolValue) IsBoolFlag() bool { return true }

func (v boolValue) Set(s string) error {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "1", "true", "yes", "on":
		*v.b = true
	case "0", "false", "no", "off", "":
		*v.b = false
	default:
		return fmt.Errorf("invalid boolean %q: want true or false", s)
	}
	return nil
}

// variantsValue is a flag.Value for a list of Python snapshot variants:
// names from python.Variants, comma-separated, or none.
type variantsValue struct{ names *[]string }

func (v variantsValue) String() string {
	if v.names == nil || len(*v.names) == 0 {
		return "none"
	}
	return strings.Join(*v.names, ",")
}

func (v variantsValue) Set(s string) error {
	var names []string
	if t := strings.TrimSpace(s); t != "none" && t != "" {
		for name := range strings.SplitSeq(t, ",") {
			name = strings.TrimSpace(name)
			if !slices.Contains(python.VariantNames(), name) {
				return fmt.Errorf("unknown Python snapshot variant %q: the variants are %s, or none", name, strings.Join(python.VariantNames(), ", "))
			}
			if !slices.Contains(names, name) {
				names = append(names, name)
			}
		}
	}
	*v.names = names
	return nil
}

// StringValue is a flag.Value for a plain string.
type StringValue struct{ S *string }

func (v StringValue) String() string {
	if v.S == nil {
		return ""
	}
	return *v.S
}

// Set implements flag.Value.
func (v StringValue) Set(s string) error { *v.S = s; return nil }

// BoolValue returns a flag.Value for b (true/false, 1/0, yes/no, on/off).
func BoolValue(b *bool) flag.Value { return boolValue{b} }

// DurationValue returns a flag.Value for a positive duration (30s, 2m).
func DurationValue(d *time.Duration) flag.Value { return durationValue{d} }

// IntValue returns a flag.Value for a whole number of at least min.
func IntValue(n *int, min int) flag.Value { return intValue{n, min} }
