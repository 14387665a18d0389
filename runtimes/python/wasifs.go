package python

import (
	"context"
	"fmt"
	"sync/atomic"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	experimentalsys "github.com/tetratelabs/wazero/experimental/sys"
	"github.com/tetratelabs/wazero/experimental/sysfs"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
	"golang.org/x/sys/unix"

	"capsule/runtimes"
)

// WASI errno values that wazero's file layer has no name for: its own
// functions turn them into EIO, so the host functions below put them back.
const (
	errnoMfile = 33 // too many open files
	errnoNospc = 51 // no space left on device
	errnoXdev  = 75 // a rename or link across two file systems
)

// maxOpenFiles bounds the files and directories one guest has open at
// once, across all its file systems. Every open file holds host memory (a
// descriptor in wazero's table, a reader), so without a bound a guest that
// opens without closing grows the worker without limit; past it, opens
// fail with EMFILE, as under the usual `ulimit -n` of 1024.
const maxOpenFiles = 1024

// guestFiles is one guest's file bookkeeping, shared by its file systems
// and the WASI host functions.
type guestFiles struct {
	open atomic.Int32
	// pending is the errno the file systems failed the current call with,
	// when wazero cannot carry it (see withFileErrno).
	pending atomic.Uint32
	// scratchFull records that a write found the scratch directory full.
	scratchFull atomic.Bool
}

// acquire takes an open-file slot, or fails with EMFILE.
func (g *guestFiles) acquire() experimentalsys.Errno {
	if g.open.Add(1) > maxOpenFiles {
		g.open.Add(-1)
		return g.fail(errnoMfile)
	}
	return 0
}

// release gives back an open-file slot.
func (g *guestFiles) release() { g.open.Add(-1) }

// fail records errno as the reason the current WASI call fails and returns
// what the file system hands wazero in its place.
func (g *guestFiles) fail(errno uint32) experimentalsys.Errno {
	g.pending.Store(errno)
	if errno == errnoNospc {
		g.scratchFull.Store(true)
	}
	return experimentalsys.EIO
}

// fileErrnoFunctions are the WASI functions through which a file system can
// fail with EMFILE or ENOSPC.
var fileErrnoFunctions = []string{
	"path_open", "fd_pwrite", "fd_filestat_set_size", "fd_allocate",
	"path_create_directory", "path_rename", "path_link",
}

// exportHostFunctions adds to b, the WASI host module, wazero's functions
// with capsule's replacements:
//
//   - fd_write carries the result channel (see fdWrite);
//   - poll_oneoff supports absolute clock subscriptions (see pollOneoff);
//   - clock_time_get and clock_res_get serve the CPU-time clocks (see
//     cpuClock);
//   - the file functions report EMFILE and ENOSPC (see withFileErrno).
//
// The replacements reach wazero's own implementations through a compiled
// copy of its module: a host function definition gives its Go function.
func exportHostFunctions(ctx context.Context, rt wazero.Runtime, b wazero.HostModuleBuilder) error {
	wasi_snapshot_preview1.NewFunctionExporter().ExportFunctions(b)

	ob := rt.NewHostModuleBuilder(wasi_snapshot_preview1.ModuleName)
	wasi_snapshot_preview1.NewFunctionExporter().ExportFunctions(ob)
	compiled, err := ob.Compile(ctx)
	if err != nil {
		return err
	}
	defer compiled.Close(ctx)
	defs := compiled.ExportedFunctions()
	wazeroFunc := func(name string) (api.GoModuleFunction, api.FunctionDefinition, error) {
		def, ok := defs[name]
		if !ok {
			return nil, nil, fmt.Errorf("wazero has no WASI function %s", name)
		}
		fn, ok := def.GoFunction().(api.GoModuleFunction)
		if !ok {
			return nil, nil, fmt.Errorf("wazero's WASI function %s is not a Go module function", name)
		}
		return fn, def, nil
	}
	export := func(name string, fn api.GoModuleFunction, def api.FunctionDefinition) {
		b.NewFunctionBuilder().
			WithGoModuleFunction(fn, def.ParamTypes(), def.ResultTypes()).
			WithParameterNames(def.ParamNames()...).
			WithResultNames(def.ResultNames()...).
			Export(name)
	}

	for _, name := range fileErrnoFunctions {
		fn, def, err := wazeroFunc(name)
		if err != nil {
			return err
		}
		export(name, withFileErrno(fn), def)
	}
	write, def, err := wazeroFunc("fd_write")
	if err != nil {
		return err
	}
	export("fd_write", fdWrite(withFileErrno(write)), def)
	_, def, err = wazeroFunc("poll_oneoff")
	if err != nil {
		return err
	}
	export("poll_oneoff", api.GoModuleFunc(pollOneoff), def)
	for _, name := range []string{"clock_time_get", "clock_res_get"} {
		fn, def, err := wazeroFunc(name)
		if err != nil {
			return err
		}
		export(name, cpuClock(fn, name == "clock_res_get"), def)
	}
	return nil
}

// withFileErrno wraps one of wazero's WASI functions: when a file system
// failed the call with an errno wazero cannot name, the guest gets that
// errno instead of wazero's EIO.
func withFileErrno(fn api.GoModuleFunction) api.GoModuleFunction {
	return api.GoModuleFunc(func(ctx context.Context, mod api.Module, stack []uint64) {
		in := instanceFrom(ctx)
		if in == nil {
			fn.Call(ctx, mod, stack)
			return
		}
		in.files.pending.Store(0)
		fn.Call(ctx, mod, stack)
		if errno := in.files.pending.Swap(0); errno != 0 && stack[0] != errnoSuccess {
			stack[0] = uint64(errno)
		}
	})
}

// WASI clock ids beyond wazero's realtime and monotonic.
const (
	clockProcessCPUTime = 2
	clockThreadCPUTime  = 3
)

// cpuClock wraps wazero's clock_time_get (or clock_res_get) to serve the
// process and thread CPU-time clocks too, which wazero refuses (CPython's
// time.process_time then falls back to a clock that is not CPU time).
// Both are the worker's process CPU time: the worker runs one guest, whose
// single thread of execution moves between OS threads, so the OS thread's
// clock would jump; the process's counts it all.
func cpuClock(fn api.GoModuleFunction, resolution bool) api.GoModuleFunction {
	return api.GoModuleFunc(func(ctx context.Context, mod api.Module, stack []uint64) {
		id := uint32(stack[0])
		if id != clockProcessCPUTime && id != clockThreadCPUTime {
			fn.Call(ctx, mod, stack)
			return
		}
		var result uint32
		var value uint64
		if resolution {
			result, value = uint32(stack[1]), 1 // clock_gettime's CPU clocks count nanoseconds
		} else {
			result = uint32(stack[2])
			var ts unix.Timespec
			if err := unix.ClockGettime(unix.CLOCK_PROCESS_CPUTIME_ID, &ts); err != nil {
				stack[0] = errnoInval
				return
			}
			value = uint64(ts.Nano())
		}
		if !mod.Memory().WriteUint64Le(result, value) {
			stack[0] = errnoFault
			return
		}
		stack[0] = errnoSuccess
	})
}

// fsConfig is everything one guest sees of a file system: the standard
// library, the time zones, the bundled packages and the operator's
// packages, read-only, and its own scratch directory (nil: none), each at
// its mount point under one root (see rootFS), the only preopened
// directory. Every file it opens counts in files.
//
// One preopen at "/" rather than one per mount: wasi-libc hands a path to
// the preopen with the longest matching prefix, relative to it, and
// wazero refuses a relative path that climbs out of its preopen, so with a
// preopen per mount "/tmp/../dev/null" failed with EPERM; through the one
// root, ".." leads where it does on Linux. A snapshot holds wasi-libc's
// table of preopens, so fsLayout, in the snapshot's identity, names it.
func (e *engine) fsConfig(files *guestFiles, scratch *scratchFS) wazero.FSConfig {
	mounts := map[string]experimentalsys.FS{
		stdlibDir:   &sysfs.AdaptFS{FS: e.stdlib.view(files)},
		zoneinfoDir: &sysfs.AdaptFS{FS: e.zoneinfo.view(files)},
	}
	if e.bundleFS != nil {
		mounts[BundleDir] = &sysfs.AdaptFS{FS: e.bundleFS.view(files)}
	}
	if e.packagesFS != nil {
		mounts[PackagesDir] = &sysfs.AdaptFS{FS: e.packagesFS.view(files)}
	}
	if scratch != nil {
		mounts[ScratchDir] = scratch
	}
	return wazero.NewFSConfig().(sysfs.FSConfig).WithSysFSMount(newRootFS(mounts, files), "/")
}

// fsLayout describes fsConfig's preopens, for the snapshot's identity:
// change it whenever they change, so that no snapshot made with others is
// used.
const fsLayout = "preopens: / (rootFS, with every mount below it)"

// scratchOutcome names the scratch limit in the answer of a run that
// failed after its scratch directory filled up.
func (in *instance) scratchOutcome(out runtimes.Outcome) runtimes.Outcome {
	if out.Error == nil || out.Limit != "" || !in.files.scratchFull.Load() {
		return out
	}
	e := *out.Error
	e.Message = fmt.Sprintf("scratch: limit of %s reached (%s and the working directory are full): %s",
		runtimes.FormatBytes(in.engine.scratch), ScratchDir, e.Message)
	out.Error = &e
	out.Limit = runtimes.LimitScratch
	return out
}
