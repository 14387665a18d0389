package javascript

import (
	"bytes"
	"context"
	"sync"
	"testing"
	"time"

	"capsule/runtimes"
	"capsule/runtimes/internal/runtimetest"
)

var (
	engineOnce sync.Once
	engineVal  *engine
	engineErr  error
)

const testLimit = 256 << 20

// testEngine is one engine shared by the package's tests: compiling takes
// a quarter of a second. Like workers' engines, it starts every instance
// from an interpreter snapshot (TestColdStart covers the start-up that
// makes one).
func testEngine(t testing.TB) *engine {
	t.Helper()
	engineOnce.Do(func() {
		var e runtimes.Engine
		e, engineErr = runtimetest.Restored(Compile, runtimes.Config{MemoryLimitBytes: testLimit, FilesOut: testFilesOut})
		if engineErr == nil {
			engineVal = e.(*engine)
		}
	})
	if engineErr != nil {
		t.Fatal(engineErr)
	}
	return engineVal
}

// testInstance prepares an instance whose output goes to the two buffers.
func testInstance(t testing.TB, e *engine) (*instance, *bytes.Buffer, *bytes.Buffer) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	inst, err := e.Prepare(context.Background(), runtimes.Streams{Stdout: &stdout, Stderr: &stderr})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = inst.Close(context.Background()) })
	return inst.(*instance), &stdout, &stderr
}

func TestFdWriteGathers(t *testing.T) {
	in, stdout, stderr := testInstance(t, testEngine(t))
	parts := []string{"hello, ", "", "wörld", "\n"}
	iov := in.malloc(uint32(8 * len(parts)))
	for i, p := range parts {
		buf := in.malloc(uint32(len(p)) + 1)
		in.mem.WriteString(buf, p)
		in.mem.WriteUint32Le(iov+uint32(8*i), buf)
		in.mem.WriteUint32Le(iov+uint32(8*i)+4, uint32(len(p)))
	}
	pnum := in.malloc(4)

	if errno := in.fdWrite(in.mem, 1, iov, uint32(len(parts)), pnum); errno != errnoSuccess {
		t.Fatalf("fd_write(1) = %d", errno)
	}
	if got, want := stdout.String(), "hello, wörld\n"; got != want {
		t.Errorf("stdout = %q, want %q", got, want)
	}
	if n, _ := in.mem.ReadUint32Le(pnum); n != uint32(len("hello, wörld\n")) {
		t.Errorf("*pnum = %d, want %d", n, len("hello, wörld\n"))
	}
	if errno := in.fdWrite(in.mem, 2, iov, 1, pnum); errno != errnoSuccess || stderr.String() != "hello, " {
		t.Errorf("fd_write(2) = %d, stderr %q", errno, stderr.String())
	}
	if errno := in.fdWrite(in.mem, 3, iov, 1, pnum); errno != errnoBadf {
		t.Errorf("fd_write(3) = %d, want EBADF", errno)
	}
	if errno := in.fdWrite(in.mem, 1, in.mem.Size()-4, 1, pnum); errno != errnoInval {
		t.Errorf("fd_write with an iovec outside memory = %d, want EINVAL", errno)
	}
}

func TestResizeHeap(t *testing.T) {
	const limit = 32 << 20
	re, err := Compile(context.Background(), runtimes.Config{MemoryLimitBytes: limit})
	if err != nil {
		t.Fatal(err)
	}
	defer re.Close(context.Background())
	in, _, _ := testInstance(t, re.(*engine))

	start := in.mem.Size()
	if start != 16<<20 {
		t.Fatalf("initial memory %d, want 16MiB (the module's minimum)", start)
	}
	// The glue's policy overgrows by 20 %: asking for 1 byte more gives
	// 16MiB * 1.2, page-aligned.
	if in.resizeHeap(in.mem, start+1) != 1 {
		t.Fatal("resize to 16MiB+1 refused")
	}
	if got, want := in.mem.Size(), uint32((uint64(start)*6/5+65535)/65536*65536); got != want {
		t.Errorf("after growth memory is %d, want %d", got, want)
	}
	if in.memoryRefused {
		t.Error("memoryRefused set by a successful growth")
	}
	// Beyond the limit: refused and recorded.
	if in.resizeHeap(in.mem, limit+1) != 0 {
		t.Error("resize beyond the limit accepted")
	}
	if !in.memoryRefused {
		t.Error("memoryRefused not set by a refused growth")
	}
	// Exactly the limit: every overgrowth fails, the exact request fits.
	if in.resizeHeap(in.mem, limit) != 1 || in.mem.Size() != limit {
		t.Errorf("resize to exactly the limit: memory %d, want %d", in.mem.Size(), limit)
	}
	// Smaller than what there is: nothing to do.
	if in.resizeHeap(in.mem, 1<<20) != 1 {
		t.Error("resize to a smaller size refused")
	}
}

func TestClocks(t *testing.T) {
	in, _, _ := testInstance(t, testEngine(t))
	p := in.malloc(8)

	before := time.Now().UnixNano()
	if errno := in.clockTimeGet(in.mem, 0, p); errno != errnoSuccess {
		t.Fatalf("clock_time_get(REALTIME) = %d", errno)
	}
	after := time.Now().UnixNano()
	if ns, _ := in.mem.ReadUint64Le(p); int64(ns) < before || int64(ns) > after {
		t.Errorf("realtime %d not within [%d, %d]", ns, before, after)
	}

	in.clockTimeGet(in.mem, 1, p)
	m1, _ := in.mem.ReadUint64Le(p)
	time.Sleep(2 * time.Millisecond)
	in.clockTimeGet(in.mem, 1, p)
	m2, _ := in.mem.ReadUint64Le(p)
	if m2-m1 < uint64(2*time.Millisecond) {
		t.Errorf("monotonic clock advanced %d ns over a 2ms sleep", m2-m1)
	}
	if errno := in.clockTimeGet(in.mem, 4, p); errno != errnoInval {
		t.Errorf("clock_time_get(4) = %d, want EINVAL", errno)
	}

	if now, d := float64(time.Now().UnixMilli()), in.dateNow(); d < now-5 || d > now+5 {
		t.Errorf("emscripten_date_now = %f, want about %f", d, now)
	}

	tm := in.malloc(44)
	localtime(in.mem, time.Date(2024, 2, 29, 13, 14, 15, 0, time.UTC).Unix(), tm)
	want := []uint32{15, 14, 13, 29, 1, 124, 4 /* Thursday */, 59, 0, 0}
	for i, w := range want {
		if got, _ := in.mem.ReadUint32Le(tm + uint32(4*i)); got != w {
			t.Errorf("struct tm field %d = %d, want %d", i, got, w)
		}
	}

	tz := in.malloc(4 + 4 + 17 + 17)
	in.mem.WriteUint32Le(tz, 99)
	in.mem.WriteUint32Le(tz+4, 99)
	tzset(in.mem, tz, tz+4, tz+8, tz+25)
	if off, _ := in.mem.ReadUint32Le(tz); off != 0 {
		t.Errorf("timezone = %d, want 0", off)
	}
	if dl, _ := in.mem.ReadUint32Le(tz + 4); dl != 0 {
		t.Errorf("daylight = %d, want 0", dl)
	}
	if std, dst := cString(in.mem, tz+8), cString(in.mem, tz+25); std != "UTC" || dst != "UTC" {
		t.Errorf("zone names %q, %q, want UTC", std, dst)
	}
}

func TestShouldInterrupt(t *testing.T) {
	in, _, _ := testInstance(t, testEngine(t))
	if in.shouldInterrupt() != 0 {
		t.Fatal("interrupt before Run")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	in.run = ctx
	in.deadline, in.hasDeadline = ctx.Deadline()
	if in.shouldInterrupt() != 0 {
		t.Fatal("interrupt before the deadline")
	}
	time.Sleep(25 * time.Millisecond)
	if in.shouldInterrupt() != 1 || !in.interrupted {
		t.Fatal("no interrupt after the deadline")
	}
}
