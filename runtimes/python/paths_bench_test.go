package python

import (
	"testing"

	"capsule/runtimes/internal/runtimetest"
)

// BenchmarkPathOps measures what every path operation costs: 1,000 stats
// and opens of a standard library file, and 1,000 of a scratch file, the
// path operations that imports and scripts make most. It compares the file
// system layouts (issue 32: every path now goes through rootFS).
func BenchmarkPathOps(b *testing.B) {
	code := `import os
open('/tmp/s.txt', 'w').write('x')
for _ in range(1000):
    os.stat('/usr/local/lib/python3.11/os.py'); open('/usr/local/lib/python3.11/os.py', 'rb').close()
    os.stat('s.txt'); open('/tmp/s.txt').close()
1`
	runtimetest.BenchmarkRun(b, engineWithLimit(b, defaultLimit), code, "1")
}
