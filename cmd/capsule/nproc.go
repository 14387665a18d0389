package main

import (
	"fmt"
	"os"
	"slices"

	"capsule/supervisor"
)

// init refuses, before anything else of capsule runs, to start a server
// (or exec, or doctor) under an RLIMIT_NPROC too small for its threads and
// two workers. Go's runtime makes threads as goroutines need them, and one
// it cannot make is a fatal error with a dump of every goroutine (exit
// status 2, and no word of which limit); the earlier this check runs, the
// fewer such threads precede it. A limit too small even for the runtime's
// first threads fails inside the runtime, before any of capsule's code.
// Only the commands that start workers are checked: workers run under
// the server's own limit, which it checked, and version or --help need
// no workers.
func init() {
	if len(os.Args) < 2 || !slices.Contains([]string{"serve", "exec", "doctor"}, os.Args[1]) {
		return
	}
	if err := supervisor.CheckProcessLimit(); err != nil {
		fmt.Fprintf(os.Stderr, "capsule: %v\n", err)
		os.Exit(exitUsage)
	}
}
