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
