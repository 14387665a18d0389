package attack

// Int80 makes a 32-bit (i386 ABI) system call with `int $0x80`, number nr
// and no arguments, and returns the raw result (a negative errno on
// failure). Under the lockdown's architecture check it never returns.
func Int80(nr uintptr) uintptr
