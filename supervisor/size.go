package supervisor

import (
	"fmt"
	"strconv"
	"strings"

	"capsule/runtimes"
)

// Size is a byte count that parses and prints in the units people write on
// command lines: 256MiB, 1GiB, 512KiB, 1MB, or plain bytes.
type Size int64

var sizeUnits = []struct {
	suffix string
	factor int64
}{
	// Longest suffixes first so "MiB" is not read as "B".
	{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30},
	{"KB", 1000}, {"MB", 1000 * 1000}, {"GB", 1000 * 1000 * 1000},
	{"B", 1},
}

// ParseSize parses a size such as "256MiB". A bare number is bytes.
func ParseSize(s string) (Size, error) {
	t := strings.TrimSpace(s)
	factor := int64(1)
	for _, u := range sizeUnits {
		if strings.HasSuffix(t, u.suffix) {
			t, factor = strings.TrimSpace(strings.TrimSuffix(t, u.suffix)), u.factor
			break
		}
	}
	n, err := strconv.ParseInt(t, 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("invalid size %q: want a whole number with an optional unit (B, KiB, MiB, GiB, KB, MB, GB)", s)
	}
	if n > (1<<62)/factor {
		return 0, fmt.Errorf("invalid size %q: too large", s)
	}
	return Size(n * factor), nil
}

// String prints the size the way limits are written ("256MiB").
func (s Size) String() string { return runtimes.FormatBytes(int64(s)) }

// Set implements flag.Value.
func (s *Size) Set(v string) error {
	n, err := ParseSize(v)
	if err != nil {
		return err
	}
	*s = n
	return nil
}
