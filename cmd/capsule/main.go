// Command capsule is an MCP server that runs AI agents' Python and
// JavaScript code in WebAssembly sandboxes, one locked-down worker process
// per call. See README.md.
package main

import (
	"fmt"
	"os"
)

const usage = `capsule runs Python and JavaScript code in WebAssembly sandboxes.

Usage:
  capsule serve [flags]                          MCP server on stdio, or over HTTP with --http
  capsule exec LANG [flags] (-c CODE | FILE | -) run code once and print what it did
  capsule doctor [--json]                        check each hardening layer and runtime
  capsule version [--json]                       print versions (also: capsule --version)
  capsule worker                                 internal: started by capsule itself

Run 'capsule COMMAND --help' for a command's flags.
`

func main() {
	os.Exit(run(os.Args[1:]))
}

// Exit statuses of the CLI, shared by every subcommand.
const (
	exitOK        = 0
	exitCodeError = 1 // the code raised, or the server failed
	exitUsage     = 2
	exitLimit     = 3
)

func run(args []string) int {
	if len(args) == 0 {
		fmt.Fprint(os.Stderr, usage)
		return exitUsage
	}
	switch args[0] {
	case "serve":
		return serve(args[1:])
	case "exec":
		return execCommand(args[1:])
	case "worker":
		return workerCommand(args[1:])
	case "doctor":
		return doctor(args[1:])
	case "version", "--version", "-version":
		return version(args[1:])
	case "-h", "-help", "--help", "help":
		fmt.Fprint(os.Stdout, usage)
		return exitOK
	}
	fmt.Fprintf(os.Stderr, "capsule: unknown command %q: the commands are serve, exec, doctor and version\nRun 'capsule --help' for more.\n", args[0])
	return exitUsage
}
