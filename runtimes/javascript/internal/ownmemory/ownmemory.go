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
	"bytes"
	"errors"
	"flag"
	"fmt"
	"os"
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

// Section ids of the WebAssembly binary format.
const (
	secCustom = 0
	secImport = 2
	secMemory = 5
	secExport = 7
)

// sectionRank is the position a section must have in a module; it is not the
// id (the data count section, id 12, comes before code, id 10).
func sectionRank(id byte) int {
	switch id {
	case 12:
		return 10
	case 10:
		return 11
	case 11:
		return 12
	default:
		return int(id)
	}
}

type section struct {
	id      byte
	payload []byte
}

// Rewrite moves the single imported memory of module into a memory section
// with the same limits and exports it as exportName. Function, table and
// global indices do not change: memory imports have their own index space,
// and the defined memory takes index 0 as the import did.
func Rewrite(module []byte, exportName string) ([]byte, error) {
	if len(module) < 8 || !bytes.Equal(module[:4], []byte("\x00asm")) || !bytes.Equal(module[4:8], []byte{1, 0, 0, 0}) {
		return nil, errors.New("not a WebAssembly 1.0 binary module")
	}
	var sections []section
	r := &reader{b: module, pos: 8}
	for !r.done() {
		id := r.byte()
		size := r.u32()
		payload := r.bytes(int(size))
		if r.err != nil {
			return nil, fmt.Errorf("section %d: %w", id, r.err)
		}
		sections = append(sections, section{id, payload})
	}

	var limits []byte
	for i, s := range sections {
		switch s.id {
		case secMemory:
			return nil, errors.New("module already defines a memory")
		case secImport:
			p, l, err := dropMemoryImport(s.payload)
			if err != nil {
				return nil, err
			}
			sections[i].payload, limits = p, l
		case secExport:
			p, err := addMemoryExport(s.payload, exportName)
			if err != nil {
				return nil, err
			}
			sections[i].payload = p
		}
	}
	if limits == nil {
		return nil, errors.New("module imports no memory")
	}
	hasExport := false
	for _, s := range sections {
		hasExport = hasExport || s.id == secExport
	}
	if !hasExport {
		return nil, errors.New("module has no export section")
	}

	mem := section{secMemory, append(leb(1), limits...)}
	var outSecs []section
	inserted := false
	for _, s := range sections {
		if !inserted && s.id != secCustom && sectionRank(s.id) > secMemory {
			outSecs = append(outSecs, mem)
			inserted = true
		}
		outSecs = append(outSecs, s)
	}
	if !inserted {
		outSecs = append(outSecs, mem)
	}

	out := append([]byte(nil), module[:8]...)
	for _, s := range outSecs {
		out = append(out, s.id)
		out = append(out, leb(uint32(len(s.payload)))...)
		out = append(out, s.payload...)
	}
	return out, nil
}

// dropMemoryImport re-encodes an import section without its memory import
// and returns that import's encoded limits.
func dropMemoryImport(payload []byte) (newPayload, limits []byte, err error) {
	r := &reader{b: payload}
	n := r.u32()
	var kept [][]byte
	for i := uint32(0); i < n && r.err == nil; i++ {
		start := r.pos
		r.name()
		r.name()
		kind := r.byte()
		switch kind {
		case 0: // function: type index
			r.u32()
		case 1: // table: reftype + limits
			r.byte()
			r.limits()
		case 2: // memory: limits
			lstart := r.pos
			r.limits()
			if limits != nil {
				return nil, nil, errors.New("module imports more than one memory")
			}
			limits = append([]byte(nil), payload[lstart:r.pos]...)
			continue
		case 3: // global: valtype + mutability
			r.byte()
			r.byte()
		default:
			return nil, nil, fmt.Errorf("import %d: unknown kind %d", i, kind)
		}
		kept = append(kept, payload[start:r.pos])
	}
	if r.err != nil || !r.done() {
		return nil, nil, fmt.Errorf("malformed import section: %v", r.err)
	}
	newPayload = leb(uint32(len(kept)))
	for _, k := range kept {
		newPayload = append(newPayload, k...)
	}
	return newPayload, limits, nil
}

// addMemoryExport appends an export of memory 0 under name.
func addMemoryExport(payload []byte, name string) ([]byte, error) {
	r := &reader{b: payload}
	n := r.u32()
	entries := r.pos
	for i := uint32(0); i < n && r.err == nil; i++ {
		if r.name() == name {
			return nil, fmt.Errorf("module already exports %q", name)
		}
		r.byte()
		r.u32()
	}
	if r.err != nil || !r.done() {
		return nil, fmt.Errorf("malformed export section: %v", r.err)
	}
	out := leb(n + 1)
	out = append(out, payload[entries:]...)
	out = append(out, leb(uint32(len(name)))...)
	out = append(out, name...)
	out = append(out, 2) // memory
	out = append(out, leb(0)...)
	return out, nil
}

// reader decodes the binary format; the first error sticks.
type reader struct {
	b   []byte
	pos int
	err error
}

func (r *reader) done() bool { return r.pos >= len(r.b) }

func (r *reader) fail(err error) {
	if r.err == nil {
		r.err = err
	}
}

func (r *reader) byte() byte {
	if r.pos >= len(r.b) {
		r.fail(errors.New("unexpected end"))
		return 0
	}
	c := r.b[r.pos]
	r.pos++
	return c
}

func (r *reader) u32() uint32 {
	var v uint32
	for shift := 0; shift < 35; shift += 7 {
		c := r.byte()
		v |= uint32(c&0x7f) << shift
		if c&0x80 == 0 {
			return v
		}
	}
	r.fail(errors.New("LEB128 too long"))
	return 0
}

func (r *reader) bytes(n int) []byte {
	if n < 0 || r.pos+n > len(r.b) {
		r.fail(errors.New("unexpected end"))
		return nil
	}
	b := r.b[r.pos : r.pos+n]
	r.pos += n
	return b
}

func (r *reader) name() string { return string(r.bytes(int(r.u32()))) }

func (r *reader) limits() {
	flags := r.byte()
	r.u32()
	if flags&1 != 0 {
		r.u32()
	}
}

func leb(v uint32) []byte {
	var out []byte
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if v != 0 {
			out = append(out, c|0x80)
			continue
		}
		return append(out, c)
	}
}
