package main

import (
	"fmt"
	"os"

	"capsule/worker"
)

func workerCommand(args []string) int {
	if len(args) > 0 {
		switch args[0] {
		case "-h", "-help", "--help":
			fmt.Fprintln(os.Stdout, "Usage: capsule worker\n\nInternal: the process capsule serve and capsule exec start for each call.\n"+
				"It takes no arguments and talks to its supervisor over pipes on file descriptors 3 and 4.")
			return exitOK
		}
		fmt.Fprintln(os.Stderr, "capsule worker takes no arguments:", worker.ErrNotStartedBySupervisor)
		return exitUsage
	}
	return worker.Main(languages())
}
