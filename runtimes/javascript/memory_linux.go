package javascript

import "syscall"

// mapNoReserve keeps the kernel's overcommit heuristics from refusing a
// large mapping that the guest will mostly never touch.
const mapNoReserve = syscall.MAP_NORESERVE
