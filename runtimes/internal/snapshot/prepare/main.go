// Command prepare rewrites a runtime's module for snapshots (see
// snapshot.PrepareModule) at build time, so that the binary embeds a module
// that instantiates without writing its memory, and the data it moved out.
//
// Usage: go run ./runtimes/internal/snapshot/prepare -in X.wasm -out Y.wasm -data Y.data
package main

import (
	"flag"
	"fmt"
	"os"

	"capsule/runtimes/internal/snapshot"
)

func main() {
	in := flag.String("in", "", "the module as built")
	out := flag.String("out", "", "where to write the prepared module")
	data := flag.String("data", "", "where to write the data it moved out")
	flag.Parse()
	if *in == "" || *out == "" || *data == "" {
		fmt.Fprintln(os.Stderr, "usage: prepare -in X.wasm -out Y.wasm -data Y.data")
		os.Exit(2)
	}
	if err := run(*in, *out, *data); err != nil {
		fmt.Fprintln(os.Stderr, "prepare:", err)
		os.Exit(1)
	}
}

func run(in, out, data string) error {
	module, err := os.ReadFile(in)
	if err != nil {
		return err
	}
	prepared, moved, err := snapshot.PrepareModule(module)
	if err != nil {
		return fmt.Errorf("%s: %w", in, err)
	}
	for _, f := range []struct {
		path string
		b    []byte
	}{{out, prepared}, {data, moved}} {
		if err := os.WriteFile(f.path+".tmp", f.b, 0o644); err != nil {
			return err
		}
		if err := os.Rename(f.path+".tmp", f.path); err != nil {
			return err
		}
	}
	return nil
}
