package runtimes

import (
	"testing"
	"time"
)

func TestFormatBytes(t *testing.T) {
	for n, want := range map[int64]string{
		256 << 20: "256MiB", 1 << 30: "1GiB", 512 << 10: "512KiB", 1000: "1000B", 1536 << 10: "1536KiB", 0: "0B",
	} {
		if got := FormatBytes(n); got != want {
			t.Errorf("FormatBytes(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestTimeoutOutcome(t *testing.T) {
	o := TimeoutOutcome(30 * time.Second)
	if o.Limit != LimitTimeout || o.Error.Message != "timeout: execution exceeded 30s" {
		t.Fatalf("%+v %+v", o, o.Error)
	}
}

// TestWorkerBounds: a Python worker's backstops allow its scratch on top
// of the memory limit and the overhead (W5: with --scratch 256MiB and
// --memory 64MiB, filling /tmp was killed at 193 MiB as a memory limit);
// a JavaScript worker, which has no scratch, gets none.
func TestWorkerBounds(t *testing.T) {
	const mib = 1 << 20
	tests := []struct {
		language        string
		memory, scratch int64
		want            Bounds
	}{
		{Python, 64 * mib, 256 * mib, Bounds{RSS: (64 + 256 + 128) * mib, Data: (64 + 256 + 256) * mib}},
		{Python, 256 * mib, 0, Bounds{RSS: (256 + 128) * mib, Data: (256 + 256) * mib}},
		{JavaScript, 64 * mib, 256 * mib, Bounds{RSS: (64 + 128) * mib, Data: (64 + 256) * mib}},
	}
	for _, tt := range tests {
		if got := WorkerBounds(tt.language, tt.memory, tt.scratch); got != tt.want {
			t.Errorf("WorkerBounds(%s, %d, %d) = %+v, want %+v", tt.language, tt.memory, tt.scratch, got, tt.want)
		}
	}
}
