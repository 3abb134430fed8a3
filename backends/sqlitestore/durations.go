package sqlitestore

import (
	"math"
	"time"
)

// micros converts a duration to whole microseconds, rounding a positive
// remainder up so that no positive duration becomes 0; a non-positive one
// (the core never passes one) becomes the smallest positive one, so the
// lease or the record ends at once, never "forever".
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

// ageMicros converts a List age (OlderThan) to whole microseconds as
// micros does, except that a non-positive age is 0: every record, one
// created in this very microsecond included.
func ageMicros(d time.Duration) int64 {
	if d <= 0 {
		return 0
	}
	return micros(d)
}

// deadline is now plus d in microseconds, saturating at the largest int64.
func deadline(now int64, d time.Duration) int64 {
	us := micros(d)
	if now > math.MaxInt64-us {
		return math.MaxInt64
	}
	return now + us
}

// remaining converts the microseconds from now to t into a duration,
// saturating at the bounds of time.Duration.
func remaining(now, t int64) time.Duration {
	diff := t - now
	if (t >= 0) != (now >= 0) && (diff >= 0) != (t >= now) {
		// t - now overflowed int64; only a corrupt file gets here.
		if t > now {
			return math.MaxInt64
		}
		return math.MinInt64
	}
	switch {
	case diff > math.MaxInt64/int64(time.Microsecond):
		return math.MaxInt64
	case diff < math.MinInt64/int64(time.Microsecond):
		return math.MinInt64
	}
	return time.Duration(diff) * time.Microsecond
}

// age is how long before now, in microseconds, t was: a record's age,
// never negative. A read may see a claim made after the now it read (Count
// reads its clock before its query's snapshot, and a write by another
// connection may commit in between), or a clock that stepped back (the
// wall clock, corrected): such a record is zero old, not in the future.
func age(t, now int64) time.Duration { return max(remaining(t, now), 0) }
