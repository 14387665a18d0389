package javascript

import (
	"bytes"
	"context"
	"fmt"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/sys"
)

// errno values of the emscripten (WASI) ABI that the imports return.
const (
	errnoSuccess = 0
	errnoBadf    = 8
	errnoInval   = 28
	errnoNosys   = 52
	errnoSpipe   = 70
)

// heapMax is the glue's ceiling for emscripten_resize_heap: 2 GiB, the most a
// 32-bit emscripten heap may address.
const heapMax = 2 << 30

// instanceKey carries the *instance in the context of every call into the
// guest, so that the host functions, which wazero instantiates once per
// runtime, find the state of the instance that called them.
type instanceKey struct{}

func instanceOf(ctx context.Context) *instance {
	return ctx.Value(instanceKey{}).(*instance)
}

// defineHost registers the 20 functions the module imports from module "a".
func defineHost(b wazero.HostModuleBuilder) {
	def := func(n name, fn api.GoModuleFunc) {
		b.NewFunctionBuilder().WithGoModuleFunction(fn, n.sig.params, n.sig.results).WithName(n.real).Export(n.min)
	}
	def(impAssertFail, func(ctx context.Context, m api.Module, s []uint64) {
		mem := m.Memory()
		panic(fmt.Errorf("javascript: assertion failed: %s, at: %s:%d (%s)",
			cString(mem, uint32(s[0])), cString(mem, uint32(s[1])), int32(s[2]), cString(mem, uint32(s[3]))))
	})
	def(impFdWrite, func(ctx context.Context, m api.Module, s []uint64) {
		s[0] = uint64(instanceOf(ctx).fdWrite(m.Memory(), int32(s[0]), uint32(s[1]), uint32(s[2]), uint32(s[3])))
	})
	def(impFdClose, func(_ context.Context, _ api.Module, s []uint64) { s[0] = errnoNosys })
	def(impEnvironGet, func(_ context.Context, _ api.Module, s []uint64) {
		// The environment is empty: there is nothing to copy.
		s[0] = errnoSuccess
	})
	def(impEnvironSizesGet, func(_ context.Context, m api.Module, s []uint64) {
		mem := m.Memory()
		if !mem.WriteUint32Le(uint32(s[0]), 0) || !mem.WriteUint32Le(uint32(s[1]), 0) {
			s[0] = errnoInval
			return
		}
		s[0] = errnoSuccess
	})
	def(impNormalizeModule, func(ctx context.Context, m api.Module, s []uint64) {
		// Only reached if a module loader were enabled, which Prepare never
		// does; answer with a copy of the name as the glue would.
		s[0] = uint64(instanceOf(ctx).mallocString(cString(m.Memory(), uint32(s[3]))))
	})
	def(impLoadModuleSource, func(_ context.Context, _ api.Module, s []uint64) {
		// NULL: no module can be loaded.
		s[0] = 0
	})
	def(impShouldInterrupt, func(ctx context.Context, _ api.Module, s []uint64) {
		s[0] = uint64(instanceOf(ctx).shouldInterrupt())
	})
	def(impSetitimer, func(_ context.Context, _ api.Module, s []uint64) {
		// setitimer is reached only through alarm(), which QuickJS never
		// calls; there is no signal to deliver.
		s[0] = 0
	})
	def(impResizeHeap, func(ctx context.Context, m api.Module, s []uint64) {
		s[0] = uint64(instanceOf(ctx).resizeHeap(m.Memory(), uint32(s[0])))
	})
	def(impKeepaliveClear, func(context.Context, api.Module, []uint64) {})
	def(impLocaltime, func(_ context.Context, m api.Module, s []uint64) {
		localtime(m.Memory(), int64(s[0]), uint32(s[1]))
	})
	def(impTzset, func(_ context.Context, m api.Module, s []uint64) {
		tzset(m.Memory(), uint32(s[0]), uint32(s[1]), uint32(s[2]), uint32(s[3]))
	})
	def(impFdSeek, func(_ context.Context, _ api.Module, s []uint64) { s[0] = errnoSpipe })
	def(impDateNow, func(ctx context.Context, _ api.Module, s []uint64) {
		s[0] = api.EncodeF64(instanceOf(ctx).dateNow())
	})
	def(impClockTimeGet, func(ctx context.Context, m api.Module, s []uint64) {
		s[0] = uint64(instanceOf(ctx).clockTimeGet(m.Memory(), uint32(s[0]), uint32(s[2])))
	})
	def(impAbort, func(context.Context, api.Module, []uint64) {
		panic(fmt.Errorf("javascript: the interpreter called abort()"))
	})
	def(impProcExit, func(ctx context.Context, _ api.Module, s []uint64) {
		code := uint32(s[0])
		instanceOf(ctx).exitCode = int(int32(code))
		panic(sys.NewExitError(code))
	})
	def(impCallFunction, func(ctx context.Context, _ api.Module, s []uint64) {
		s[0] = uint64(instanceOf(ctx).callHost(uint32(s[0]), int32(s[2]), uint32(s[3]), uint32(s[4])))
	})
	def(impFreeHostRef, func(context.Context, api.Module, []uint64) {
		// Host refs are a fixed table (hostWrite, ...): nothing to forget.
	})
}

// fdWrite gathers cnt iovecs {ptr, len} at iov into one write to stdout (fd
// 1) or stderr (fd 2) and stores the byte count at pnum.
func (in *instance) fdWrite(mem api.Memory, fd int32, iov, cnt, pnum uint32) uint32 {
	var w = in.streams.Stdout
	switch fd {
	case 1:
	case 2:
		w = in.streams.Stderr
	default:
		return errnoBadf
	}
	var buf []byte
	for i := uint32(0); i < cnt; i++ {
		ptr, ok1 := mem.ReadUint32Le(iov + 8*i)
		n, ok2 := mem.ReadUint32Le(iov + 8*i + 4)
		data, ok3 := mem.Read(ptr, n)
		if !ok1 || !ok2 || !ok3 {
			return errnoInval
		}
		buf = append(buf, data...)
	}
	if len(buf) > 0 && w != nil {
		// Streams never fail the guest: capping is the writer's job.
		_, _ = w.Write(buf)
	}
	if !mem.WriteUint32Le(pnum, uint32(len(buf))) {
		return errnoInval
	}
	return errnoSuccess
}

// resizeHeap grows memory so that it holds at least requested bytes, with
// the emscripten glue's policy: overgrow by 20 %, then 10 %, then 5 %, each
// time by at most 96 MiB beyond the request. Unlike the glue it finally
// tries the exact request, so that the guest can use all of its limit.
// Every refusal past the memory maximum is recorded: it is how Run tells an
// out-of-memory ending from an ordinary exception.
func (in *instance) resizeHeap(mem api.Memory, requested uint32) uint32 {
	old := uint64(mem.Size())
	req := uint64(requested)
	if req > heapMax {
		in.memoryRefused = true
		return 0
	}
	grow := func(size uint64) bool {
		size = min(heapMax, (size+65535)/65536*65536)
		if size <= old {
			return true
		}
		_, ok := mem.Grow(uint32((size - old) / 65536))
		return ok
	}
	for cutDown := uint64(1); cutDown <= 4; cutDown *= 2 {
		over := old + old/(5*cutDown)
		over = min(over, req+96<<20)
		if grow(max(req, over)) {
			return 1
		}
	}
	if grow(req) {
		return 1
	}
	in.memoryRefused = true
	return 0
}

// clockTimeGet stores the time in nanoseconds at p: realtime for clock 0,
// the instance's monotonic clock for 1 to 3 (monotonic, process and thread
// CPU time, which the glue all answers with performance.now()).
func (in *instance) clockTimeGet(mem api.Memory, id, p uint32) uint32 {
	var ns uint64
	switch id {
	case 0:
		ns = in.realtime()
	case 1, 2, 3:
		ns = uint64(time.Since(in.epoch).Nanoseconds())
	default:
		return errnoInval
	}
	if !mem.WriteUint64Le(p, ns) {
		return errnoInval
	}
	return errnoSuccess
}

// realtime is the wall clock in nanoseconds since the Unix epoch.
func (in *instance) realtime() uint64 {
	if in.fixedClock != 0 {
		return in.fixedClock
	}
	return uint64(time.Now().UnixNano())
}

// dateNow is milliseconds since the Unix epoch, with sub-millisecond
// precision as in the glue's Date.now() (which has none, but JavaScript
// floors it anyway).
func (in *instance) dateNow() float64 {
	return float64(in.realtime()/1e3) / 1000
}

// localtime fills the struct tm at p for t seconds since the epoch. The
// guest's time zone is UTC: a worker has no tz database to offer and should
// not leak the host's.
func localtime(mem api.Memory, t int64, p uint32) {
	if t < -(1<<53) || t > 1<<53 {
		t = 0
	}
	u := time.Unix(t, 0).UTC()
	fields := []int32{
		int32(u.Second()), int32(u.Minute()), int32(u.Hour()), int32(u.Day()),
		int32(u.Month()) - 1, int32(u.Year() - 1900), int32(u.Weekday()),
		int32(u.YearDay() - 1), 0 /* isdst */, 0, /* gmtoff */
	}
	for i, v := range fields {
		mem.WriteUint32Le(p+uint32(4*i), uint32(v))
	}
}

// tzset answers for UTC: no offset, no daylight saving time, both zone
// names "UTC" (the glue writes at most 17 bytes to each).
func tzset(mem api.Memory, timezone, daylight, stdName, dstName uint32) {
	mem.WriteUint32Le(timezone, 0)
	mem.WriteUint32Le(daylight, 0)
	mem.WriteString(stdName, "UTC\x00")
	mem.WriteString(dstName, "UTC\x00")
}

// shouldInterrupt is QuickJS's interrupt hook, called every few thousand
// bytecodes: 1 stops the script with an uncatchable "interrupted" error.
func (in *instance) shouldInterrupt() uint32 {
	if in.interrupted {
		return 1
	}
	if in.run == nil {
		return 0
	}
	if (in.hasDeadline && !time.Now().Before(in.deadline)) || in.run.Err() != nil {
		in.interrupted = true
		return 1
	}
	return 0
}

// cString reads the NUL-terminated string at p.
func cString(mem api.Memory, p uint32) string {
	if p == 0 {
		return ""
	}
	size := mem.Size()
	if p >= size {
		return ""
	}
	b, _ := mem.Read(p, size-p)
	if i := bytes.IndexByte(b, 0); i >= 0 {
		return string(b[:i])
	}
	return string(b)
}
