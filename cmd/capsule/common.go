package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/hashicorp/go-hclog"

	"capsule/runtimes/compiled"
	"capsule/supervisor"
)

// commonFlags are the flags every command that starts workers takes.
type commonFlags struct {
	cfg      supervisor.Config
	logLevel string
	logJSON  bool
}

func newFlagSet(name, synopsis string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: %s\n\nFlags:\n", synopsis)
		fs.PrintDefaults()
	}
	return fs
}

// parseFlags runs parse, which parses fs's flags (through fs.Parse or an
// EnvFlags around it), and reports whether the command should go on, and
// with which exit status otherwise. --help prints the full usage to
// stdout and exits 0; a bad flag prints one line saying what is wrong and
// where the flags are listed, not the whole usage, which would bury it.
func parseFlags(fs *flag.FlagSet, parse func() error) (int, bool) {
	// The flag package prints the error and the usage itself on failure;
	// the output is held back here and written as said above.
	fs.SetOutput(io.Discard)
	err := parse()
	fs.SetOutput(nil)
	switch {
	case err == nil:
		return 0, true
	case errors.Is(err, flag.ErrHelp):
		fs.SetOutput(os.Stdout)
		fs.Usage()
		return exitOK, false
	}
	msg := err.Error()
	if name, ok := strings.CutPrefix(msg, "flag provided but not defined: -"); ok {
		msg = "unknown flag --" + name
	}
	fmt.Fprintf(os.Stderr, "capsule %s: %s\nRun 'capsule %s --help' for its flags.\n", fs.Name(), msg, fs.Name())
	return exitUsage, false
}

// register defines the shared flags on e.
func (c *commonFlags) register(e *EnvFlags, fs *flag.FlagSet) {
	c.cfg = supervisor.DefaultConfig(languages())
	registerConfigFlags(e, &c.cfg)
	c.logLevel = "info"
	e.Var(StringValue{S: &c.logLevel}, "log-level", "CAPSULE_LOG_LEVEL", "log level: trace, debug, info, warn, error")
	e.Var(boolValue{&c.logJSON}, "log-json", "CAPSULE_LOG_JSON", "log as JSON lines")
}

// parse parses args and reports whether the command should go on, and
// with which exit status otherwise.
func parse(e *EnvFlags, args []string) (int, bool) {
	return parseFlags(e.FlagSet(), func() error { return e.Parse(args) })
}

// validate checks the configuration before anything starts, so that a
// usage or configuration error exits with the usage status.
func (c *commonFlags) validate(command string) (int, bool) {
	if err := c.cfg.Validate(); err != nil {
		fmt.Fprintf(os.Stderr, "capsule %s: %v\n", command, err)
		return exitUsage, false
	}
	return 0, true
}

// logger returns the logger the flags ask for. Logs always go to stderr:
// in stdio mode stdout belongs to the MCP protocol.
func (c *commonFlags) logger(name string) hclog.InterceptLogger {
	return hclog.NewInterceptLogger(&hclog.LoggerOptions{
		Name:       name,
		Level:      hclog.LevelFromString(c.logLevel),
		Output:     os.Stderr,
		JSONFormat: c.logJSON,
	})
}

// newSupervisor starts the supervisor with the parsed configuration.
func (c *commonFlags) newSupervisor(log hclog.Logger) (*supervisor.Supervisor, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("finding our own executable to start workers: %w", err)
	}
	if _, err := os.Stat("/proc/self/exe"); err == nil {
		// Immune to the binary being replaced or moved while we run.
		exe = "/proc/self/exe"
	}
	if err := runtimesBuilt(); err != nil {
		return nil, err
	}
	return supervisor.New(c.cfg, log, exe)
}

// runtimesBuilt reports an error when the binary embeds the placeholders
// of `make wazero` for a runtime rather than the runtime: it could answer
// no call of that language.
func runtimesBuilt() error {
	errs := []error{compiled.Built()}
	for _, l := range languages() {
		errs = append(errs, l.Built())
	}
	return errors.Join(errs...)
}

// startFailed reports why the supervisor could not start and returns the
// exit status: the usage one for a configuration that cannot work (an
// unsafe cache directory, an unusable --python-path), the failure one for
// anything else.
func startFailed(command string, err error) int {
	fmt.Fprintf(os.Stderr, "capsule %s: %v\n", command, err)
	if errors.Is(err, supervisor.ErrConfig) {
		return exitUsage
	}
	return exitCodeError
}
