package guestmem

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"unsafe"

	"github.com/tetratelabs/wazero/experimental"
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

// TestGuardMemory: where memories have guard pages, a memory is a
// reservation of the whole wasm32 reach starting at its buffer, in which
// exactly the current size is readable and writable, never executable.
func TestGuardMemory(t *testing.T) {
	if !GuardPages() {
		t.Skip("no guard pages here")
	}
	const limit = 3 << 16
	lm := Allocator(nil).Allocate(0, limit)
	defer lm.Free()
	g, ok := lm.(experimental.GuardPageMemory)
	if !ok {
		t.Fatalf("%T is not an experimental.GuardPageMemory", lm)
	}
	buf := lm.Reallocate(1 << 16)
	start, length := g.Reservation()
	if start != sliceStart(buf) || length != experimental.MemoryGuardReservation {
		t.Fatalf("reservation %#x+%d, buffer at %#x", start, length, sliceStart(buf))
	}
	whole := unsafe.Slice(unsafe.SliceData(buf), length) // for probing past the end
	buf[len(buf)-1] = 1
	if !faults(whole, 1<<16) {
		t.Fatal("the byte past the memory is readable")
	}
	buf = lm.Reallocate(2 << 16)
	buf[len(buf)-1] = 2
	if faults(whole, 1<<16) || !faults(whole, 2<<16) {
		t.Fatal("growth did not open exactly the new page")
	}
	if lm.Reallocate(limit+1<<16) != nil {
		t.Fatal("growth beyond the limit succeeded")
	}
	if !faults(whole, limit) || !faults(whole, length-1) {
		t.Fatal("the reservation is open past the memory")
	}
	for _, m := range mappingsOf(t, start, start+uintptr(length)) {
		if want := "---p"; m.end > start+2<<16 && m.perms != want {
			t.Errorf("%#x-%#x is %s, want %s", m.start, m.end, m.perms, want)
		}
		if want := "rw-p"; m.end <= start+2<<16 && m.perms != want {
			t.Errorf("%#x-%#x is %s, want %s", m.start, m.end, m.perms, want)
		}
	}
}

// faults reports whether reading b[i] faults.
func faults(b []byte, i uint64) (fault bool) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() { fault = recover() != nil }()
	sink = b[i]
	return false
}

// sink keeps faults's read from being optimised away.
var sink byte

type mapping struct {
	start, end uintptr
	perms      string
}

// mappingsOf lists the mappings of this process between start and end.
func mappingsOf(t *testing.T, start, end uintptr) []mapping {
	t.Helper()
	f, err := os.Open("/proc/self/maps")
	if err != nil {
		t.Skip(err)
	}
	defer f.Close()
	var out []mapping
	s := bufio.NewScanner(f)
	for s.Scan() {
		var m mapping
		if _, err := fmt.Sscanf(s.Text(), "%x-%x %s", &m.start, &m.end, &m.perms); err != nil {
			t.Fatal(err)
		}
		if m.start < end && m.end > start {
			out = append(out, m)
		}
	}
	if len(out) == 0 {
		t.Fatal("the reservation is not in /proc/self/maps")
	}
	return out
}

// dataLimitEnv makes the test binary TestDataLimit's helper: it sets
// RLIMIT_DATA to its own writable memory (VmData) plus the value, in MiB.
const dataLimitEnv = "CAPSULE_GUESTMEM_DATA_LIMIT_MIB"

// TestDataLimit: a reservation is address space, not memory: it does not
// count against RLIMIT_DATA (nor does VmData grow by it), while the pages a
// growth opens do, so that RLIMIT_DATA still bounds the guest's memory: a
// growth past it fails, as a growth past the memory limit does.
func TestDataLimit(t *testing.T) {
	if !GuardPages() {
		t.Skip("no guard pages here")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestDataLimitHelper$", "-test.v")
	cmd.Env = append(os.Environ(), dataLimitEnv+"=64")
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS: TestDataLimitHelper") {
		t.Fatalf("helper: %v\n%s", err, out)
	}
	t.Logf("%s", strings.TrimSpace(string(out)))
}

func TestDataLimitHelper(t *testing.T) {
	headroom, err := strconv.ParseUint(os.Getenv(dataLimitEnv), 10, 64)
	if err != nil {
		t.Skip("run by TestDataLimit")
	}
	before := vmData(t)
	limit := before + headroom<<20
	if err := syscall.Setrlimit(syscall.RLIMIT_DATA, &syscall.Rlimit{Cur: limit, Max: limit}); err != nil {
		t.Fatal(err)
	}
	lm := Allocator(nil).Allocate(0, 4<<30)
	if _, ok := lm.(experimental.GuardPageMemory); !ok {
		t.Fatalf("no reservation under RLIMIT_DATA = VmData + %d MiB", headroom)
	}
	reserved := vmData(t)
	t.Logf("VmData %d MiB before, %d MiB with an %d MiB reservation", before>>20, reserved>>20, experimental.MemoryGuardReservation>>20)
	if reserved > before+8<<20 {
		t.Errorf("the reservation counts as data: VmData grew by %d MiB", (reserved-before)>>20)
	}
	if b := lm.Reallocate(headroom / 2 << 20); b == nil {
		t.Fatalf("opening %d MiB under RLIMIT_DATA = VmData + %d MiB failed", headroom/2, headroom)
	}
	if b := lm.Reallocate(2 * headroom << 20); b != nil {
		t.Fatalf("opening %d MiB past RLIMIT_DATA succeeded", 2*headroom)
	}
	t.Logf("VmData %d MiB with %d MiB open; opening %d MiB failed", vmData(t)>>20, headroom/2, 2*headroom)
}

// vmData reads this process's VmData (writable private mappings, what
// RLIMIT_DATA limits) in bytes.
func vmData(t *testing.T) uint64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Skip(err)
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, "VmData:"); ok {
			kb, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb << 10
		}
	}
	t.Fatal("no VmData")
	return 0
}
