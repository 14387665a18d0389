package supervisor

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"slices"
	"time"

	"capsule/runtimes"
	"capsule/runtimes/fileset"
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
	// listed, not sent (supervisor/mcp).
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
	// Languages is the table of languages calls may run, which
	// cmd/capsule makes from the runtime packages.
	Languages runtimes.Languages
	Limits    Limits
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
	// MaxTimeoutGiven records that --max-timeout (or its variable) was
	// set: a default may follow --timeout up, a given value may not.
	MaxTimeoutGiven bool
	// PythonPath is a directory or zip of the operator's pure-Python
	// packages, importable read-only in every Python call; empty for none.
	PythonPath string
	// BundledPackages makes the pure-Python packages embedded with the
	// Python runtime (sympy, networkx, ...) importable in every Python
	// call, before PythonPath's.
	BundledPackages bool
	// PythonVariants names the Python snapshot variants in use (of
	// Python's Language.Variants): interpreters with heavy bundled packages already
	// imported, each made on its first call.
	PythonVariants []string
}

// DefaultConfig returns the configuration for languages with every
// default applied: two ready workers each, and every snapshot variant.
func DefaultConfig(languages runtimes.Languages) Config {
	pool := map[string]int{}
	var variants []string
	for _, l := range languages {
		pool[l.Name] = 2
		if l.Name == runtimes.Python {
			variants = l.Variants
		}
	}
	return Config{
		Languages:       languages,
		Limits:          DefaultLimits,
		MaxConcurrency:  runtime.NumCPU(),
		MaxQueue:        256,
		CacheDir:        DefaultCacheDir(),
		Pool:            pool,
		PoolIdle:        time.Minute,
		BundledPackages: true,
		PythonVariants:  slices.Clone(variants),
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

// MinAnswer is the smallest --max-answer: room for the text and the
// structured content of an answer with a few lines of output.
const MinAnswer = 64 << 10

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
		if c.MaxTimeoutGiven {
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
