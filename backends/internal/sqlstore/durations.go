package sqlstore

import (
	"math"
	"time"
)

// Micros converts a lease, hold or retention to whole microseconds,
// rounding a positive remainder up so that no positive duration becomes
// 0. A non-positive one (the core never passes one) becomes the smallest
// positive one: the lease or the record ends at once, never "forever".
func Micros(d time.Duration) int64 {
	if d <= 0 {
		return 1
	}
	us := int64(d / time.Microsecond)
	if d%time.Microsecond != 0 {
		us++
	}
	return us
}

// AgeMicros converts a List age (ListParams.OlderThan) to whole
// microseconds as Micros does, except that a non-positive age is 0: every
// record, one created in this very microsecond included.
func AgeMicros(d time.Duration) int64 {
	if d <= 0 {
		return 0
	}
	return Micros(d)
}

// FromMicros converts microseconds read back to a duration, saturating at
// the range of time.Duration.
func FromMicros(us int64) time.Duration {
	switch {
	case us > math.MaxInt64/int64(time.Microsecond):
		return math.MaxInt64
	case us < math.MinInt64/int64(time.Microsecond):
		return math.MinInt64
	}
	return time.Duration(us) * time.Microsecond
}
