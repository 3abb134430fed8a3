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

// ageFromMicros converts an age the server reported (how long ago a record
// was claimed or held) to a duration, never negative. A statement reads
// UTC_TIMESTAMP(6) when it starts, before InnoDB gives it its read view, so
// it may see a claim that committed in between as made after its "now";
// that claim is zero old, not in the future.
func ageFromMicros(us int64) time.Duration { return fromMicros(max(us, 0)) }
