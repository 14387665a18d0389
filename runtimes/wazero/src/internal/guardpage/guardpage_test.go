package guardpage

import (
	"sync"
	"testing"
)

// TestTable: entries are found by any address inside them and by none
// outside, freed entries are reused, and the table grows past one chunk.
func TestTable(t *testing.T) {
	var tb table
	var entries []*Entry
	const n = 3*chunkEntries + 5
	for i := uintptr(0); i < n; i++ {
		entries = append(entries, tb.add(0x10000*(i+1), 0x10000*(i+1)+0x100, i+1))
	}
	for i := uintptr(0); i < n; i++ {
		for _, addr := range []uintptr{0x10000 * (i + 1), 0x10000*(i+1) + 0xff} {
			if ctx, ok := tb.find(addr); !ok || ctx != i+1 {
				t.Fatalf("find(%#x) = %d, %v; want %d", addr, ctx, ok, i+1)
			}
		}
		if _, ok := tb.find(0x10000*(i+1) + 0x100); ok {
			t.Fatalf("found %#x, past the end of its entry", 0x10000*(i+1)+0x100)
		}
	}
	tb.update(entries[70], 0, 0, 0)
	if _, ok := tb.find(0x10000 * 71); ok {
		t.Fatal("a freed entry is still found")
	}
	if e := tb.add(0x5, 0x6, 99); e != entries[70] {
		t.Fatal("the freed entry was not reused")
	}
	tb.update(entries[3], 0x20, 0x30, 7)
	if ctx, ok := tb.find(0x2f); !ok || ctx != 7 {
		t.Fatalf("a moved entry: %d, %v", ctx, ok)
	}
}

// TestTableConcurrent: an entry that does not change is always found while
// others are added, moved and removed around it.
func TestTableConcurrent(t *testing.T) {
	var tb table
	mine := tb.add(0x1000, 0x2000, 42)
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for w := uintptr(0); w < 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := uintptr(0); ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				e := tb.add(0x100000*(w+1), 0x100000*(w+1)+i%4096+1, w)
				tb.update(e, 0x200000*(w+1), 0x200000*(w+2), w)
				tb.update(e, 0, 0, 0)
			}
		}()
	}
	for i := 0; i < 20000; i++ {
		if ctx, ok := tb.find(0x1800); !ok || ctx != 42 {
			t.Fatalf("lookup %d: %d, %v", i, ctx, ok)
		}
	}
	close(stop)
	wg.Wait()
	tb.update(mine, 0, 0, 0)
}
