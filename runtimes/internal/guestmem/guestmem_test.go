package guestmem

import (
	"testing"
)

func TestMemory(t *testing.T) {
	var m *Memory
	lm := Allocator(&m).Allocate(0, 1<<20)
	if m == nil {
		t.Skip("no anonymous mappings here")
	}
	b := lm.Reallocate(64 << 10)
	if len(b) != 64<<10 {
		t.Fatalf("len %d", len(b))
	}
	b[0] = 1
	grown := lm.Reallocate(1 << 20)
	if &grown[0] != &b[0] || grown[0] != 1 {
		t.Fatal("growth moved or lost the memory")
	}
	if lm.Reallocate(1<<20+1) != nil {
		t.Fatal("growth beyond the limit succeeded")
	}
	m.SetRunning(true)
	lm.Free()
	if m.buf == nil {
		t.Fatal("unmapped while the guest runs")
	}
	m.SetRunning(false)
	if m.buf != nil {
		t.Fatal("not unmapped once the guest stopped")
	}
}
