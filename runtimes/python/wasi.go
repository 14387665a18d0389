package python

import (
	"context"
	"encoding/binary"
	"io"
	"math"
	"time"

	"github.com/tetratelabs/wazero/api"
)

// WASI errno values used by the host functions below.
const (
	errnoSuccess = 0
	errnoBadf    = 8
	errnoFault   = 21
	errnoInval   = 28
)

// WASI subscription and event constants (wasi_snapshot_preview1).
const (
	eventTypeClock   = 0
	eventTypeFdRead  = 1
	eventTypeFdWrite = 2

	clockRealtime  = 0
	clockMonotonic = 1

	subscriptionClockAbstime = 1

	subscriptionSize = 48
	eventSize        = 32
)

var le = binary.LittleEndian

// instanceFrom finds the instance whose _start call is running.
func instanceFrom(ctx context.Context) *instance {
	in, _ := ctx.Value(instanceKey{}).(*instance)
	return in
}

// fdWrite replaces WASI fd_write. Descriptors 1 and 2 go to the instance's
// stdout and stderr writers; resultFD goes to the report buffer, so the
// bootstrap's report can never be mixed with (or forged by) ordinary
// output. Every other descriptor is a file the guest opened (only its
// scratch directory is writable), written by files: wazero's fd_write.
func fdWrite(files api.GoModuleFunction) api.GoModuleFunc {
	return func(ctx context.Context, mod api.Module, stack []uint64) {
		fd := uint32(stack[0])
		iovs, iovsLen, resultNwritten := uint32(stack[1]), uint32(stack[2]), uint32(stack[3])
		in := instanceFrom(ctx)
		if in == nil {
			stack[0] = errnoBadf
			return
		}
		var w io.Writer
		switch fd {
		case 1:
			w = in.stdout
		case 2:
			w = in.stderr
		case resultFD:
			w = (*reportWriter)(in)
		default:
			files.Call(ctx, mod, stack)
			return
		}
		stack[0] = uint64(writeIovecs(mod.Memory(), w, iovs, iovsLen, resultNwritten))
	}
}

// writeIovecs gathers the guest's iovec array into w and stores the byte
// count. Errors from w are not the guest's concern: the writer caps and
// counts, and the guest sees its write succeed.
func writeIovecs(mem api.Memory, w io.Writer, iovs, iovsLen, resultNwritten uint32) uint32 {
	if uint64(iovsLen)*8 > math.MaxUint32 {
		return errnoInval
	}
	iov, ok := mem.Read(iovs, iovsLen*8)
	if !ok {
		return errnoFault
	}
	var total uint32
	for i := uint32(0); i < iovsLen; i++ {
		off, n := le.Uint32(iov[i*8:]), le.Uint32(iov[i*8+4:])
		b, ok := mem.Read(off, n)
		if !ok {
			return errnoFault
		}
		if uint64(total)+uint64(n) > math.MaxUint32 {
			return errnoInval
		}
		_, _ = w.Write(b)
		total += n
	}
	if !mem.WriteUint32Le(resultNwritten, total) {
		return errnoFault
	}
	return errnoSuccess
}

// reportWriter appends to the instance's report buffer, up to maxReport;
// beyond that it only records the overflow.
type reportWriter instance

func (r *reportWriter) Write(p []byte) (int, error) {
	r.reportMu.Lock()
	defer r.reportMu.Unlock()
	if r.reportOverflow || r.report.Len()+len(p) > maxReport {
		r.reportOverflow = true
	} else {
		r.report.Write(p)
	}
	// Wake Run: the bootstrap writes its report in one call, as its last
	// act before exiting.
	select {
	case r.reported <- struct{}{}:
	default:
	}
	return len(p), nil
}

// pollOneoff replaces WASI poll_oneoff. wazero's version answers ENOTSUP to
// absolute clock subscriptions, which is what CPython's time.sleep uses
// (clock_nanosleep with TIMER_ABSTIME), so time.sleep would raise OSError.
// This one supports relative and absolute clocks (realtime and monotonic,
// using the same clocks the module is given), and reports every descriptor
// ready at once: regular files always are, standard input holds what the
// host preloaded or is at its end, and writes never block.
func pollOneoff(ctx context.Context, mod api.Module, stack []uint64) {
	in, out, n, resultNevents := uint32(stack[0]), uint32(stack[1]), uint32(stack[2]), uint32(stack[3])
	stack[0] = uint64(pollOneoffWith(mod.Memory(), instanceFrom(ctx), in, out, n, resultNevents))
}

// pollOneoffWith is poll_oneoff on a given memory and instance (nil: the
// process's own clock). It keeps no per-subscription state on the Go heap,
// so a guest passing millions of subscriptions costs the host nothing but
// time: one pass finds the earliest deadline, a second, after the wait,
// writes the events straight into the guest's output buffer.
func pollOneoffWith(mem api.Memory, inst *instance, in, out, n, resultNevents uint32) uint32 {
	if n == 0 || uint64(n)*subscriptionSize > math.MaxUint32 {
		return errnoInval
	}
	subs, ok := mem.Read(in, n*subscriptionSize)
	if !ok {
		return errnoFault
	}
	events, ok := mem.Read(out, n*eventSize)
	if !ok {
		return errnoFault
	}
	now := nanotime
	if inst != nil {
		now = inst.nowFunc
	}
	start, wallStart := now(), time.Now().UnixNano()

	// deadline gives a clock subscription's instant on the monotonic
	// clock, or ok=false for a clock this host does not have.
	deadline := func(sub []byte) (int64, bool) {
		id, timeout, flags := le.Uint32(sub[16:]), le.Uint64(sub[24:]), le.Uint16(sub[40:])
		switch {
		case flags&subscriptionClockAbstime == 0:
			return satAdd(start, timeout), true
		case id == clockMonotonic:
			return int64(min(timeout, math.MaxInt64)), true
		case id == clockRealtime:
			if t := int64(min(timeout, math.MaxInt64)); t > wallStart {
				return satAdd(start, uint64(t-wallStart)), true
			}
			return start, true
		}
		return 0, false
	}

	earliest := int64(math.MaxInt64)
	hasClock, immediate := false, false
	for i := uint32(0); i < n; i++ {
		sub := subs[i*subscriptionSize : (i+1)*subscriptionSize]
		switch sub[8] {
		case eventTypeClock:
			if d, ok := deadline(sub); ok {
				earliest = min(earliest, d)
				hasClock = true
			} else {
				immediate = true // reported at once with EINVAL
			}
		case eventTypeFdRead, eventTypeFdWrite:
			immediate = true // reads and writes never block
		default:
			return errnoInval
		}
	}

	// Nothing ready yet: wait for the earliest clock.
	if !immediate && hasClock {
		time.Sleep(time.Duration(max(earliest-now(), 0)))
	}

	t := now()
	nevents := uint32(0)
	emit := func(sub []byte, errno uint16) {
		ev := events[nevents*eventSize : (nevents+1)*eventSize]
		clear(ev)
		copy(ev[0:8], sub[0:8]) // userdata
		le.PutUint16(ev[8:], errno)
		ev[10] = sub[8] // type
		nevents++
	}
	for i := uint32(0); i < n; i++ {
		sub := subs[i*subscriptionSize : (i+1)*subscriptionSize]
		switch sub[8] {
		case eventTypeClock:
			if d, ok := deadline(sub); !ok {
				emit(sub, errnoInval)
			} else if d <= t {
				emit(sub, errnoSuccess)
			}
		case eventTypeFdRead, eventTypeFdWrite:
			emit(sub, errnoSuccess)
		}
	}
	if !mem.WriteUint32Le(resultNevents, nevents) {
		return errnoFault
	}
	return errnoSuccess
}

// satAdd adds a duration to a monotonic instant without overflowing.
func satAdd(t int64, d uint64) int64 {
	if d > uint64(math.MaxInt64-t) {
		return math.MaxInt64
	}
	return t + int64(d)
}
