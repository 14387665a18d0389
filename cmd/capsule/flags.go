package main

import (
	"flag"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"capsule/runtimes"
	"capsule/runtimes/fileset"
	"capsule/runtimes/python"
	"capsule/supervisor"
	"capsule/supervisor/mcp/transport"
)

// The commands' flags: each has an environment variable, which a flag
// given on the command line overrides (EnvFlags), and fills a field of
// supervisor.Config or transport.ServeOptions.

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

// registerConfigFlags defines the configuration's flags, with their environment
// variables, on e.
func registerConfigFlags(e *EnvFlags, c *supervisor.Config) {
	e.Var(durationValue{&c.Limits.Timeout}, "timeout", "CAPSULE_TIMEOUT", "wall-clock limit of one execution")
	e.Var(givenValue{durationValue{&c.Limits.MaxTimeout}, &c.MaxTimeoutGiven}, "max-timeout", "CAPSULE_MAX_TIMEOUT",
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
	e.Var(StringValue{S: &c.PythonPath}, "python-path", "CAPSULE_PYTHON_PATH", "directory or zip of pure-Python packages importable in every Python call (read-only), after the bundled ones")
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

// registerServeFlags defines serve's transport flags, with their environment
// variables, on e.
func registerServeFlags(e *EnvFlags, o *transport.ServeOptions) {
	e.Var(StringValue{S: &o.HTTP}, "http", "CAPSULE_HTTP",
		"serve MCP over Streamable HTTP at "+transport.MCPPath+" on this address (host:port; a bare port or :port binds 127.0.0.1) instead of stdio")
	e.Var(StringValue{S: &o.AuthTokenFile}, "auth-token-file", "CAPSULE_AUTH_TOKEN_FILE",
		"file holding the bearer token HTTP clients must send (or set "+transport.AuthTokenEnv+")")
	e.Var(originsValue{&o.AllowOrigins}, "allow-origin", "CAPSULE_ALLOW_ORIGIN",
		"also accept HTTP requests from this browser origin, scheme://host[:port] or *; repeatable, comma-separated (loopback origins are always accepted)")
	e.Var(autoSize{&o.MaxRequestBody}, "max-request-body", "CAPSULE_MAX_REQUEST_BODY",
		"limit on an HTTP request's body (larger ones get 413) and on a stdio message (larger ones get a JSON-RPC error)")
	e.Var(autoInt{&o.MaxClientConcurrency}, "max-client-concurrency", "CAPSULE_MAX_CLIENT_CONCURRENCY",
		"HTTP requests one client (remote IP) may have in flight; more get 429")
	e.Var(boolValue{&o.TrustProxyHeaders}, "trust-proxy-headers", "CAPSULE_TRUST_PROXY_HEADERS",
		"identify HTTP clients by X-Forwarded-For's first address (only behind a proxy that sets it)")
	e.Var(durationValue{&o.ShutdownGrace}, "shutdown-grace", "CAPSULE_SHUTDOWN_GRACE",
		"on SIGTERM or SIGINT, how long running calls may take to finish before their workers are killed")
}

// originsValue is a flag.Value for a list of allowed origins, given
// repeatedly or comma-separated.
type originsValue struct{ list *[]string }

func (v originsValue) String() string {
	if v.list == nil {
		return ""
	}
	return strings.Join(*v.list, ",")
}

func (v originsValue) Set(s string) error {
	var err error
	*v.list, err = transport.AddOrigins(*v.list, s)
	return err
}

// autoSize is a Size flag whose zero value means "derived after parsing",
// and says so in the help.
type autoSize struct{ s *supervisor.Size }

func (v autoSize) String() string {
	switch {
	case v.s == nil:
		return "" // the flag package's zero value, so the default below is shown
	case *v.s == 0:
		return "5 × max-code + 4/3 × max-files-in + 1MiB"
	}
	return v.s.String()
}

func (v autoSize) Set(s string) error {
	n, err := supervisor.ParseSize(s)
	if err == nil && n == 0 {
		err = fmt.Errorf("invalid size %q: want more than 0", s)
	}
	if err != nil {
		return err
	}
	*v.s = n
	return nil
}

// autoInt is a count flag whose zero value means "derived after parsing",
// and says so in the help.
type autoInt struct{ n *int }

func (v autoInt) String() string {
	switch {
	case v.n == nil:
		return "" // the flag package's zero value, so the default below is shown
	case *v.n == 0:
		return "2 × max-concurrency"
	}
	return strconv.Itoa(*v.n)
}

func (v autoInt) Set(s string) error { return intValue{v.n, 1}.Set(s) }
