// Package redelivery holds what the broker adapters share about pacing
// redeliveries of a message whose handler failed.
package redelivery

import (
	"math"
	"time"
)

// Backoff is base doubled for each delivery before the n-th (n counts
// from 1, the first delivery), at most limit; 0 when base or limit is not
// positive. It never overflows, whatever n.
func Backoff(base, limit time.Duration, n uint64) time.Duration {
	if base <= 0 || limit <= 0 {
		return 0
	}
	d := min(base, limit)
	for i := uint64(1); i < n && d < limit; i++ {
		if d > math.MaxInt64/2 {
			return limit
		}
		d = min(2*d, limit)
	}
	return d
}
