package main

import (
	"fmt"
	"strings"
	"testing"

	"capsule/runtimes/memprobe"
)

// TestOutOfBoundsAccessesTrap drives the memory probe (runtimes/memprobe)
// through a real worker, locked down, on the guest memory workers have (a
// guard-page memory without bounds checks where the platform allows): a
// load or store of each width at the last byte that fits, one past it, at
// the top of the 32-bit index range with the largest static offset, right
// after memory.grow, and in the page that grow did not reach. Every access
// that fits must work and every other one must end the call as a trap the
// answer names, with what was printed before it, never a read of the
// host's memory and never a hang.
func TestOutOfBoundsAccessesTrap(t *testing.T) {
	s := startServer(t, "--timeout", "20s")
	const page = 65536
	for _, op := range memprobe.Ops {
		if !representative(op) {
			continue
		}
		at := func(offset, addr uint64) string { return fmt.Sprintf("%s %d", memprobe.FunctionName(op, offset), addr) }
		cases := []struct {
			name  string
			grow  bool
			size  uint64 // the memory's size when the accesses run
			fault string // the access out of bounds
		}{
			{"one past the end", false, page, at(0, page-op.Width+1)},
			{"top of the index range", false, page, at(0xffffffff, 0xffffffff)},
			{"beyond a grown memory", true, 2 * page, at(0, 2*page)},
		}
		for _, c := range cases {
			t.Run(op.Name+"/"+strings.ReplaceAll(c.name, " ", "_"), func(t *testing.T) {
				lines := []string{"#capsule-fault:memory", "print before the accesses"}
				if c.grow {
					lines = append(lines, "grow 1")
				}
				// The access ending at the memory's last byte, with a
				// static offset of 0 and of 1.
				lines = append(lines, at(0, c.size-op.Width), at(1, c.size-op.Width-1),
					"print the accesses that fit worked", c.fault)
				res, st := s.call(t, "execute_python", strings.Join(lines, "\n"))
				check(t, res, st, expectation{
					isError:     true,
					stdout:      "before the accesses\nthe accesses that fit worked\n",
					errType:     "RuntimeError",
					errContains: "wasm error: out of bounds memory access",
				})
			})
		}
	}
}

// representative picks, of the probe's ops, one load and one store of each
// width: the wazero tests of patch 0002 run every op with every offset.
func representative(op memprobe.Op) bool {
	switch op.Name {
	case "i32.load8_u", "i32.load16_u", "i32.load", "i64.load", "v128.load",
		"i32.store8", "i32.store16", "i32.store", "i64.store", "v128.store":
		return true
	}
	return false
}
