package wazevo

import (
	"unsafe"

	"github.com/tetratelabs/wazero/internal/engine/wazevo/wazevoapi"
	"github.com/tetratelabs/wazero/internal/guardpage"
)

// The guard-page fault handler (internal/guardpage, on linux/amd64 only)
// writes these fields of an executionContext by offset, and this exit code:
// an index out of range here means its constants must change too.
var (
	_ = [1]struct{}{}[unsafe.Offsetof(executionContext{}.exitCode)-guardpage.ExecCtxOffsetExitCode]
	_ = [1]struct{}{}[unsafe.Offsetof(executionContext{}.originalFramePointer)-guardpage.ExecCtxOffsetOriginalFramePointer]
	_ = [1]struct{}{}[unsafe.Offsetof(executionContext{}.originalStackPointer)-guardpage.ExecCtxOffsetOriginalStackPointer]
	_ = [1]struct{}{}[unsafe.Offsetof(executionContext{}.goCallReturnAddress)-guardpage.ExecCtxOffsetGoCallReturnAddress]
	_ = [1]struct{}{}[unsafe.Offsetof(executionContext{}.stackPointerBeforeGoCall)-guardpage.ExecCtxOffsetStackPointerBeforeGoCall]
	_ = [1]struct{}{}[unsafe.Offsetof(executionContext{}.framePointerBeforeGoCall)-guardpage.ExecCtxOffsetFramePointerBeforeGoCall]
	_ = [1]struct{}{}[wazevoapi.ExitCodeMemoryOutOfBounds-guardpage.ExitCodeMemoryOutOfBounds]
	_ = [1]struct{}{}[guardpage.ExitCodeMemoryOutOfBounds-wazevoapi.ExitCodeMemoryOutOfBounds]
)
