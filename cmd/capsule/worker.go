package main

import (
	"fmt"
	"os"

	"capsule/worker"
)

func workerCommand(args []string) int {
	if len(args) > 0 {
		fmt.Fprintln(os.Stderr, "capsule worker takes no arguments:", worker.ErrNotStartedBySupervisor)
		return exitUsage
	}
	return worker.Main()
}
