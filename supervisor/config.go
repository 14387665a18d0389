package supervisor

import (
	"flag"
	"fmt"
	"os"
	"runtime"
	"strings"
	"time"
)

// Limits bound every execution. The defaults are documented in the README
// and stated, with the configured values, in each tool's description.
type Limits struct {
	// Timeout is the wall-clock limit of one execution.
	Timeout time.Duration
	// Memory caps the guest's linear memory.
	Memory Size
	// MaxOutput caps stdout and stderr, each; beyond it output is dropped
	// and counted, and the run goes on.
	MaxOutput Size
	// MaxCode caps the size of the submitted code.
	MaxCode Size
}

// DefaultLimits are the limits when no flag or environment variable is set.
var DefaultLimits = Limits{
	Timeout:   30 * time.Second,
	Memory:    256 << 20,
	MaxOutput: 1 << 20,
	MaxCode:   1 << 20,
}

// Config is everything the supervisor is configured with.
type Config struct {
	Limits Limits
	// MaxConcurrency is how many executions run at once; more wait.
	MaxConcurrency int
	// CacheDir holds wazero's compilation cache. Empty disables it.
	CacheDir string
}

// DefaultConfig returns the configuration with every default applied.
func DefaultConfig() Config {
	return Config{
		Limits:         DefaultLimits,
		MaxConcurrency: runtime.NumCPU(),
		CacheDir:       DefaultCacheDir(),
	}
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

// positiveInt is a flag.Value for an integer >= 1.
type positiveInt struct{ n *int }

func (v positiveInt) String() string {
	if v.n == nil {
		return ""
	}
	return fmt.Sprint(*v.n)
}

func (v positiveInt) Set(s string) error {
	var n int
	if _, err := fmt.Sscan(s, &n); err != nil || n < 1 || fmt.Sprint(n) != strings.TrimSpace(s) {
		return fmt.Errorf("invalid count %q: want a whole number of at least 1", s)
	}
	*v.n = n
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
	e.Var(&c.Limits.Memory, "memory", "CAPSULE_MEMORY", "memory limit of one execution")
	e.Var(&c.Limits.MaxOutput, "max-output", "CAPSULE_MAX_OUTPUT", "limit on stdout and on stderr, each; the rest is dropped and counted")
	e.Var(&c.Limits.MaxCode, "max-code", "CAPSULE_MAX_CODE", "limit on the size of the submitted code")
	e.Var(positiveInt{&c.MaxConcurrency}, "max-concurrency", "CAPSULE_MAX_CONCURRENCY", "executions that run at once; more wait their turn (default: number of CPUs)")
}

// Validate checks that the limits make sense together.
func (c *Config) Validate() error {
	if c.Limits.Memory < 1<<20 {
		return fmt.Errorf("memory limit %s is too small: want at least 1MiB", c.Limits.Memory)
	}
	if c.Limits.MaxCode < 1 {
		return fmt.Errorf("code size limit must be at least 1 byte")
	}
	if c.MaxConcurrency < 1 {
		return fmt.Errorf("max-concurrency must be at least 1")
	}
	return nil
}
