//go:build !unix

package javascript

import "github.com/tetratelabs/wazero/experimental"

// memoryAllocator is wazero's default (growth by copying) where there is no
// mmap.
var memoryAllocator experimental.MemoryAllocator
