package expctxkeys

// MemoryGuardPagesKey is a context.Context Value key. Its presence makes
// Runtime.CompileModule compile the module for a guard-page memory.
type MemoryGuardPagesKey struct{}
