package bench

import (
	"cmp"
	"math"
	"slices"
	"time"
)

// Percentile is the nearest-rank p-th percentile (0 < p ≤ 100) of sorted,
// ascending values: the smallest value with at least p% of the values at
// or below it. It is the zero value for no values.
func Percentile[T cmp.Ordered](sorted []T, p float64) T {
	var zero T
	if len(sorted) == 0 {
		return zero
	}
	rank := int(math.Ceil(p / 100 * float64(len(sorted))))
	return sorted[max(0, min(rank-1, len(sorted)-1))]
}

// sorted returns a sorted copy.
func sorted[T cmp.Ordered](v []T) []T {
	s := slices.Clone(v)
	slices.Sort(s)
	return s
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// msAll converts durations to milliseconds.
func msAll(ds []time.Duration) []float64 {
	out := make([]float64, len(ds))
	for i, d := range ds {
		out[i] = ms(d)
	}
	return out
}
