// Command ownmemory rewrites the QuickJS emscripten module so that it defines
// and exports its own linear memory instead of importing it from module "a".
//
// Why: wazero's host modules cannot export a memory, and the memory cap that
// matters (the configured per-execution limit) is applied by wazero's
// RuntimeConfig.WithMemoryLimitPages only to memories a module defines itself.
// Doing this once at build time keeps the run-time path to one compiled module
// and one host module, with no wasm generated at run time and no experimental
// import resolver.
//
// Usage: go run ./runtimes/javascript/internal/ownmemory -in X.wasm -out Y.wasm
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"

	"capsule/runtimes/internal/wasmbin"
)

func main() {
	in := flag.String("in", "", "input wasm file (imports its memory)")
	out := flag.String("out", "", "output wasm file (defines and exports its memory)")
	flag.Parse()
	if *in == "" || *out == "" {
		fmt.Fprintln(os.Stderr, "usage: ownmemory -in X.wasm -out Y.wasm")
		os.Exit(2)
	}
	src, err := os.ReadFile(*in)
	if err != nil {
		fmt.Fprintln(os.Stderr, "ownmemory:", err)
		os.Exit(1)
	}
	dst, err := Rewrite(src, "memory")
	if err != nil {
		fmt.Fprintln(os.Stderr, "ownmemory:", err)
		os.Exit(1)
	}
	if err := os.WriteFile(*out, dst, 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "ownmemory:", err)
		os.Exit(1)
	}
}

// Rewrite moves the single imported memory of module into a memory section
// with the same limits and exports it as exportName. Function, table and
// global indices do not change: memory imports have their own index space,
// and the defined memory takes index 0 as the import did.
func Rewrite(module []byte, exportName string) ([]byte, error) {
	sections, err := wasmbin.Sections(module)
	if err != nil {
		return nil, err
	}

	var limits []byte
	for i, s := range sections {
		switch s.ID {
		case wasmbin.SecMemory:
			return nil, errors.New("module already defines a memory")
		case wasmbin.SecImport:
			p, l, err := dropMemoryImport(s.Payload)
			if err != nil {
				return nil, err
			}
			sections[i].Payload, limits = p, l
		case wasmbin.SecExport:
			p, err := addMemoryExport(s.Payload, exportName)
			if err != nil {
				return nil, err
			}
			sections[i].Payload = p
		}
	}
	if limits == nil {
		return nil, errors.New("module imports no memory")
	}
	hasExport := false
	for _, s := range sections {
		hasExport = hasExport || s.ID == wasmbin.SecExport
	}
	if !hasExport {
		return nil, errors.New("module has no export section")
	}

	mem := wasmbin.Section{ID: wasmbin.SecMemory, Payload: append(wasmbin.AppendU32(nil, 1), limits...)}
	var out []wasmbin.Section
	inserted := false
	for _, s := range sections {
		if !inserted && s.ID != wasmbin.SecCustom && wasmbin.Rank(s.ID) > wasmbin.SecMemory {
			out = append(out, mem)
			inserted = true
		}
		out = append(out, s)
	}
	if !inserted {
		out = append(out, mem)
	}
	return wasmbin.Encode(out), nil
}

// dropMemoryImport re-encodes an import section without its memory import
// and returns that import's encoded limits.
func dropMemoryImport(payload []byte) (newPayload, limits []byte, err error) {
	r := &wasmbin.Reader{B: payload}
	n := r.U32()
	var kept [][]byte
	for i := uint32(0); i < n && r.Err == nil; i++ {
		start := r.Pos
		r.Name()
		r.Name()
		kind := r.Byte()
		switch kind {
		case 0: // function: type index
			r.U32()
		case 1: // table: reftype + limits
			r.Byte()
			r.Limits()
		case 2: // memory: limits
			lstart := r.Pos
			r.Limits()
			if limits != nil {
				return nil, nil, errors.New("module imports more than one memory")
			}
			limits = append([]byte(nil), payload[lstart:r.Pos]...)
			continue
		case 3: // global: valtype + mutability
			r.Byte()
			r.Byte()
		default:
			return nil, nil, fmt.Errorf("import %d: unknown kind %d", i, kind)
		}
		kept = append(kept, payload[start:r.Pos])
	}
	if r.Err != nil || !r.Done() {
		return nil, nil, fmt.Errorf("malformed import section: %v", r.Err)
	}
	newPayload = wasmbin.AppendU32(nil, uint32(len(kept)))
	for _, k := range kept {
		newPayload = append(newPayload, k...)
	}
	return newPayload, limits, nil
}

// addMemoryExport appends an export of memory 0 under name.
func addMemoryExport(payload []byte, name string) ([]byte, error) {
	r := &wasmbin.Reader{B: payload}
	n := r.U32()
	entries := r.Pos
	for i := uint32(0); i < n && r.Err == nil; i++ {
		if r.Name() == name {
			return nil, fmt.Errorf("module already exports %q", name)
		}
		r.Byte()
		r.U32()
	}
	if r.Err != nil || !r.Done() {
		return nil, fmt.Errorf("malformed export section: %v", r.Err)
	}
	out := wasmbin.AppendU32(nil, n+1)
	out = append(out, payload[entries:]...)
	out = wasmbin.AppendName(out, name)
	out = append(out, wasmbin.KindMemory)
	return wasmbin.AppendU32(out, 0), nil
}
