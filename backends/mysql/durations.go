package mysqlstore

import (
	"math"
	"time"
)

// micros converts a duration to the whole microseconds sent to the server,
// rounding a positive remainder up so that no positive duration becomes 0.
// A non-positive duration (the core never passes one) becomes the smallest
// positive one: the lease or the record ends at once, never "forever".
func micros(d time.Duration) int64 {
	if d <= 0 {
		return 1
	}
	us := int64(d / time.Microsecond)
	if d%time.Microsecond != 0 {
		us++
	}
	return us
}

// fromMicros converts microseconds reported by the server back to a
// duration, saturating at the longest time.Duration.
func fromMicros(us int64) time.Duration {
	switch {
	case us > math.MaxInt64/int64(time.Microsecond):
		return math.MaxInt64
	case us < math.MinInt64/int64(time.Microsecond):
		return math.MinInt64
	}
	return time.Duration(us) * time.Microsecond
}
