package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"syscall"

	"capsule/cmd/capsule/terminal"
	"capsule/supervisor"
)

const execSynopsis = "capsule exec LANG [flags] (-c CODE | FILE | -)\n\n" +
	"Runs code once through the same supervisor and worker path as serve. LANG is python or javascript.\n" +
	"Prints the code's stdout and stderr, then its result on stdout. --file passes host files in (Python: in\n" +
	"/tmp; JavaScript: the global files); --outputs writes the files the code returns (Python: what it left in\n" +
	"/tmp/outputs; JavaScript: the global outputs) to a host directory.\n" +
	"Exit status: 0 ok, 1 the code raised an error, 2 usage, 3 a limit was hit."

func execCommand(args []string) int {
	fs := newFlagSet("exec", execSynopsis)
	e := NewEnvFlags(fs)
	var c commonFlags
	c.register(e, fs)
	code := fs.String("c", "", "the code to run")
	var files fileFlags
	fs.Var(&files, "file", "pass host file PATH in as NAME (PATH=NAME; by default its base name); repeatable")
	outputs := fs.String("outputs", "", "write the files the code returns into this host directory")
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "-help" {
		fs.SetOutput(os.Stdout)
		fs.Usage()
		if len(args) == 0 {
			return exitUsage
		}
		return exitOK
	}
	lang := args[0]
	if names := languages().Names(); !slices.Contains(names, lang) {
		fmt.Fprintf(os.Stderr, "capsule exec: unknown language %q: want one of %v\n", lang, names)
		return exitUsage
	}
	c.logLevel = "warn"
	if status, ok := parse(e, args[1:]); !ok {
		return status
	}
	if status, ok := c.validate("exec"); !ok {
		return status
	}
	src, err := execSource(fs, *code)
	if err != nil {
		fmt.Fprintln(os.Stderr, "capsule exec:", err)
		return exitUsage
	}
	in, err := readFiles(files, c.cfg.Limits)
	if err != nil {
		fmt.Fprintln(os.Stderr, "capsule exec:", err)
		return exitUsage
	}
	c.cfg.Exec = true
	logger := c.logger("capsule")
	sup, err := c.newSupervisor(logger)
	if err != nil {
		return startFailed("exec", err)
	}
	defer sup.Close()
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	a := sup.Execute(ctx, supervisor.Request{Language: lang, Code: src, Files: in})
	status := printAnswer(a)
	if err := writeOutputs(a, *outputs); err != nil {
		fmt.Fprintln(os.Stderr, "capsule exec:", err)
		return exitCodeError
	}
	return status
}

// execSource finds the code: -c CODE, a file, or - for stdin; exactly one.
func execSource(fs *flag.FlagSet, code string) (string, error) {
	given := false
	fs.Visit(func(f *flag.Flag) { given = given || f.Name == "c" })
	switch {
	case given && fs.NArg() == 0:
		return code, nil
	case !given && fs.NArg() == 1 && fs.Arg(0) == "-":
		b, err := io.ReadAll(os.Stdin)
		return string(b), err
	case !given && fs.NArg() == 1:
		b, err := os.ReadFile(fs.Arg(0))
		return string(b), err
	}
	return "", fmt.Errorf("give the code as exactly one of -c CODE, FILE, or - (stdin)")
}

// printAnswer writes what the code did, for a person at a terminal, and
// returns the exit status. What the guest wrote reaches a terminal with
// its control characters escaped (terminal.GuestOutput).
func printAnswer(a *supervisor.Answer) int {
	stdout, stderr := terminal.GuestOutput(os.Stdout), terminal.GuestOutput(os.Stderr)
	io.WriteString(stdout, a.Stdout)
	io.WriteString(stderr, a.Stderr)
	if a.StdoutTruncated || a.StderrTruncated {
		fmt.Fprintln(os.Stderr, "capsule: output was truncated at the output limit")
	}
	if shown, ok := a.ShownResult(); ok {
		fmt.Fprintln(stdout, shown)
	}
	if a.Error != nil {
		if a.Error.Traceback != "" {
			fmt.Fprintln(stderr, a.Error.Traceback)
		} else {
			fmt.Fprintf(stderr, "%s: %s\n", a.Error.Type, a.Error.Message)
		}
	}
	if note := a.LimitNote(); note != "" {
		fmt.Fprintln(os.Stderr, "capsule:", note)
	}
	switch {
	case a.Limit != nil:
		return exitLimit
	case a.Error != nil || a.ExitCode() != 0:
		return exitCodeError
	}
	return exitOK
}
