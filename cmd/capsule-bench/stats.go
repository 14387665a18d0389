package main

import (
	"fmt"
	"math"
	"slices"
	"time"
)

// percentile returns the p-th percentile (0 < p <= 100) of xs by the
// nearest-rank method; NaN for no samples.
func percentile(xs []float64, p float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	rank := int(math.Ceil(p / 100 * float64(len(s))))
	rank = min(max(rank, 1), len(s))
	return s[rank-1]
}

// median is the 50th percentile.
func median(xs []float64) float64 { return percentile(xs, 50) }

// ms converts a duration to milliseconds.
func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// fmtMS formats milliseconds with a precision that suits their size.
func fmtMS(v float64) string {
	switch {
	case math.IsNaN(v):
		return "n/a"
	case v < 10:
		return fmt.Sprintf("%.2f ms", v)
	case v < 100:
		return fmt.Sprintf("%.1f ms", v)
	default:
		return fmt.Sprintf("%.0f ms", v)
	}
}

// fmtMiB formats KiB as MiB.
func fmtMiB(kib int64) string {
	return fmt.Sprintf("%.1f MiB", float64(kib)/1024)
}

// fmtRatio formats a/b as a factor.
func fmtRatio(a, b float64) string {
	if math.IsNaN(a) || math.IsNaN(b) || b <= 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.2f×", a/b)
}

// verdict says whether a measured value meets its target.
func verdict(ok bool) string {
	if ok {
		return "met"
	}
	return "**missed**"
}
