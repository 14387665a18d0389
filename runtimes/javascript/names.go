package javascript

import (
	"fmt"
	"sort"
	"strings"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
)

// The emscripten build minifies every import and export name, and the
// letters change from one build to the next. This table is our own copy of
// the map for the pinned package version (names_test.go checks it against
// the package's emscripten-module.cjs), and verify checks it against the
// compiled module at start-up, so that a different build fails loudly in
// Compile instead of calling the wrong function.

// hostModule is the module name the wasm imports all its functions from.
const hostModule = "a"

// memoryExport is the name under which the build-time rewrite
// (internal/ownmemory) exports the module's own memory.
const memoryExport = "memory"

const (
	i32 = api.ValueTypeI32
	i64 = api.ValueTypeI64
	f64 = api.ValueTypeF64
)

// signature is a function type.
type signature struct {
	params, results []api.ValueType
}

func sig(params []api.ValueType, results ...api.ValueType) signature {
	return signature{params: params, results: results}
}

func types(t ...api.ValueType) []api.ValueType { return t }

func (s signature) String() string {
	name := func(ts []api.ValueType) string {
		parts := make([]string, len(ts))
		for i, t := range ts {
			parts[i] = api.ValueTypeName(t)
		}
		return "(" + strings.Join(parts, ",") + ")"
	}
	if len(s.results) == 1 {
		return name(s.params) + "->" + api.ValueTypeName(s.results[0])
	}
	return name(s.params) + "->" + name(s.results)
}

func (s signature) equal(o signature) bool {
	eq := func(a, b []api.ValueType) bool {
		if len(a) != len(b) {
			return false
		}
		for i := range a {
			if a[i] != b[i] {
				return false
			}
		}
		return true
	}
	return eq(s.params, o.params) && eq(s.results, o.results)
}

// name is one minified name and what it stands for.
type name struct {
	real, min string
	sig       signature
}

// Imports, in the order of the field names. host.go implements each.
var (
	impAssertFail       = name{"__assert_fail", "b", sig(types(i32, i32, i32, i32))}
	impFdWrite          = name{"fd_write", "c", sig(types(i32, i32, i32, i32), i32)}
	impFdClose          = name{"fd_close", "d", sig(types(i32), i32)}
	impEnvironGet       = name{"environ_get", "e", sig(types(i32, i32), i32)}
	impEnvironSizesGet  = name{"environ_sizes_get", "f", sig(types(i32, i32), i32)}
	impNormalizeModule  = name{"normalizeModule", "g", sig(types(i32, i32, i32, i32), i32)}
	impLoadModuleSource = name{"loadModuleSource", "h", sig(types(i32, i32, i32), i32)}
	impShouldInterrupt  = name{"shouldInterrupt", "i", sig(types(i32), i32)}
	impSetitimer        = name{"_setitimer_js", "j", sig(types(i32, f64), i32)}
	impResizeHeap       = name{"emscripten_resize_heap", "k", sig(types(i32), i32)}
	impKeepaliveClear   = name{"_emscripten_runtime_keepalive_clear", "l", sig(nil)}
	impLocaltime        = name{"_localtime_js", "m", sig(types(i64, i32))}
	impTzset            = name{"_tzset_js", "n", sig(types(i32, i32, i32, i32))}
	impFdSeek           = name{"fd_seek", "o", sig(types(i32, i64, i32, i32), i32)}
	impDateNow          = name{"emscripten_date_now", "p", sig(nil, f64)}
	impClockTimeGet     = name{"clock_time_get", "q", sig(types(i32, i64, i32), i32)}
	impAbort            = name{"abort", "r", sig(nil)}
	impProcExit         = name{"proc_exit", "s", sig(types(i32))}
	impCallFunction     = name{"callFunction", "t", sig(types(i32, i32, i32, i32, i32), i32)}
	impFreeHostRef      = name{"freeHostRef", "u", sig(types(i32, i32))}
	importNames         = []name{impAssertFail, impFdWrite, impFdClose, impEnvironGet, impEnvironSizesGet, impNormalizeModule, impLoadModuleSource, impShouldInterrupt, impSetitimer, impResizeHeap, impKeepaliveClear, impLocaltime, impTzset, impFdSeek, impDateNow, impClockTimeGet, impAbort, impProcExit, impCallFunction, impFreeHostRef}
)

// Exports we call. exports.go binds them by these names.
var (
	expCallCtors         = name{"__wasm_call_ctors", "v", sig(nil)}
	expMalloc            = name{"malloc", "w", sig(types(i32), i32)}
	expFree              = name{"free", "N", sig(types(i32))}
	expNewRuntime        = name{"QTS_NewRuntime", "L", sig(nil, i32)}
	expNewContext        = name{"QTS_NewContext", "O", sig(types(i32, i32), i32)}
	expSetMaxStackSize   = name{"QTS_RuntimeSetMaxStackSize", "E", sig(types(i32, i32))}
	expEnableInterrupt   = name{"QTS_RuntimeEnableInterruptHandler", "Ga", sig(types(i32))}
	expNewObject         = name{"QTS_NewObject", "V", sig(types(i32), i32)}
	expNewFunction       = name{"QTS_NewFunction", "Ea", sig(types(i32, i32, i32, i32, i32), i32)}
	expNewString         = name{"QTS_NewString", "$", sig(types(i32, i32), i32)}
	expGetString         = name{"QTS_GetString", "aa", sig(types(i32, i32), i32)}
	expFreeCString       = name{"QTS_FreeCString", "T", sig(types(i32, i32))}
	expFreeValuePointer  = name{"QTS_FreeValuePointer", "Q", sig(types(i32, i32))}
	expGetFloat64        = name{"QTS_GetFloat64", "_", sig(types(i32, i32), f64)}
	expNewFloat64        = name{"QTS_NewFloat64", "Z", sig(types(i32, f64), i32)}
	expSetProp           = name{"QTS_SetProp", "ka", sig(types(i32, i32, i32, i32))}
	expGetProp           = name{"QTS_GetProp", "ia", sig(types(i32, i32, i32), i32)}
	expArgvGetPointer    = name{"QTS_ArgvGetJSValueConstPointer", "Fa", sig(types(i32, i32), i32)}
	expCall              = name{"QTS_Call", "na", sig(types(i32, i32, i32, i32, i32), i32)}
	expEval              = name{"QTS_Eval", "qa", sig(types(i32, i32, i32, i32, i32, i32), i32)}
	expResolveException  = name{"QTS_ResolveException", "oa", sig(types(i32, i32), i32)}
	expTypeof            = name{"QTS_Typeof", "sa", sig(types(i32, i32), i32)}
	expPromiseState      = name{"QTS_PromiseState", "xa", sig(types(i32, i32), i32)}
	expPromiseResult     = name{"QTS_PromiseResult", "ya", sig(types(i32, i32), i32)}
	expIsJobPending      = name{"QTS_IsJobPending", "ga", sig(types(i32), i32)}
	expExecutePendingJob = name{"QTS_ExecutePendingJob", "ha", sig(types(i32, i32, i32), i32)}
	expNewArrayBuffer    = name{"QTS_NewArrayBuffer", "Y", sig(types(i32, i32, i32), i32)}
	expGetArrayBuffer    = name{"QTS_GetArrayBuffer", "ba", sig(types(i32, i32), i32)}
	expGetArrayBufferLen = name{"QTS_GetArrayBufferLength", "ca", sig(types(i32, i32), i32)}
	expBJSONDecode       = name{"QTS_bjson_decode", "La", sig(types(i32, i32), i32)}
	exportNames          = []name{expCallCtors, expMalloc, expFree, expNewRuntime, expNewContext, expSetMaxStackSize, expEnableInterrupt, expNewObject, expNewFunction, expNewString, expGetString, expFreeCString, expFreeValuePointer, expGetFloat64, expNewFloat64, expSetProp, expGetProp, expArgvGetPointer, expCall, expEval, expResolveException, expTypeof, expPromiseState, expPromiseResult, expIsJobPending, expExecutePendingJob, expNewArrayBuffer, expGetArrayBuffer, expGetArrayBufferLen, expBJSONDecode}
)

// moduleShape is what verify needs to know about a compiled module: its
// function imports keyed "module.field", its function exports, and whether
// it defines (rather than imports) a memory exported as memoryExport.
type moduleShape struct {
	imports       map[string]signature
	exports       map[string]signature
	ownsMemory    bool
	importsMemory bool
}

func shapeOf(cm wazero.CompiledModule) moduleShape {
	s := moduleShape{imports: map[string]signature{}, exports: map[string]signature{}}
	for _, f := range cm.ImportedFunctions() {
		mod, field, _ := f.Import()
		s.imports[mod+"."+field] = signature{f.ParamTypes(), f.ResultTypes()}
	}
	for n, f := range cm.ExportedFunctions() {
		s.exports[n] = signature{f.ParamTypes(), f.ResultTypes()}
	}
	_, s.ownsMemory = cm.ExportedMemories()[memoryExport]
	s.importsMemory = len(cm.ImportedMemories()) > 0
	return s
}

// verify reports every difference between the module and our name table:
// a missing or retyped import or export, an import we do not implement, or
// a memory that is imported instead of defined (a module that was not
// rewritten by internal/ownmemory).
func verify(s moduleShape) error {
	var problems []string
	if s.importsMemory || !s.ownsMemory {
		problems = append(problems, fmt.Sprintf("the module must define and export its memory as %q (run runtimes/javascript/fetch.sh)", memoryExport))
	}
	known := map[string]bool{}
	for _, n := range importNames {
		key := hostModule + "." + n.min
		known[key] = true
		got, ok := s.imports[key]
		switch {
		case !ok:
			problems = append(problems, fmt.Sprintf("import %s (minified %q) missing", n.real, key))
		case !got.equal(n.sig):
			problems = append(problems, fmt.Sprintf("import %s (minified %q) has signature %s, want %s", n.real, key, got, n.sig))
		}
	}
	var unknown []string
	for key := range s.imports {
		if !known[key] {
			unknown = append(unknown, key)
		}
	}
	sort.Strings(unknown)
	for _, key := range unknown {
		problems = append(problems, fmt.Sprintf("import %q is unknown: capsule provides no function for it", key))
	}
	for _, n := range exportNames {
		got, ok := s.exports[n.min]
		switch {
		case !ok:
			problems = append(problems, fmt.Sprintf("export %s (minified %q) missing", n.real, n.min))
		case !got.equal(n.sig):
			problems = append(problems, fmt.Sprintf("export %s (minified %q) has signature %s, want %s", n.real, n.min, got, n.sig))
		}
	}
	if len(problems) == 0 {
		return nil
	}
	return fmt.Errorf("javascript: %s", strings.Join(problems, "; javascript: "))
}
