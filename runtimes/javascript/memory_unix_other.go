//go:build unix && !linux

package javascript

// mapNoReserve is Linux's MAP_NORESERVE; elsewhere plain anonymous mappings
// are already reserved lazily.
const mapNoReserve = 0
