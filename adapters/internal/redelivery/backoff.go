// Package redelivery holds what the broker adapters share about pacing
// redeliveries of a message whose handler failed.
package redelivery

import (
	"errors"
	"math"
	"time"

	"github.com/stagedoor/once"
	"github.com/stagedoor/once/consume"
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

// InProgressWait is the wait before the redelivery of a message whose key
// is in progress (consume.ReasonInProgress): for a running claim the time
// left on the owner's lease (the core's hint is capped at one second, which
// a broker that counts every redelivery cannot afford), for a held key the
// decision's hint (the hold left, at most consume.HeldRedelivery). It is the
// decision's own RetryAfter when the error carries no lease.
func InProgressWait(d consume.Decision) time.Duration {
	var ip *once.InProgressError
	if errors.As(d.Err, &ip) && !ip.Held && ip.LeaseRemaining > d.RetryAfter {
		return ip.LeaseRemaining
	}
	return d.RetryAfter
}
