package sqlitestore

import (
	"math"
	"time"

	"github.com/stagedoor/once/backends/internal/sqlstore"
)

// deadline is now plus d in microseconds, saturating at the largest int64.
func deadline(now int64, d time.Duration) int64 {
	us := sqlstore.Micros(d)
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
	return sqlstore.FromMicros(diff)
}

// age is how long before now, in microseconds, t was: a record's age,
// never negative. A read may see a claim made after the now it read (Count
// reads its clock before its query's snapshot, and a write by another
// connection may commit in between), or a clock that stepped back (the
// wall clock, corrected): such a record is zero old, not in the future.
func age(t, now int64) time.Duration { return max(remaining(t, now), 0) }
