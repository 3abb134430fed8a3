package redelivery

import (
	"errors"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stagedoor/once"
	"github.com/stagedoor/once/consume"
)

func TestBackoffDoublesUpToTheCapWithoutOverflow(t *testing.T) {
	require.Equal(t, time.Second, Backoff(time.Second, time.Minute, 0), "n below 1 is the first delivery")
	require.Equal(t, time.Second, Backoff(time.Second, time.Minute, 1))
	require.Equal(t, 8*time.Second, Backoff(time.Second, time.Minute, 4))
	require.Equal(t, time.Minute, Backoff(time.Second, time.Minute, 7))
	require.Equal(t, time.Minute, Backoff(time.Second, time.Minute, math.MaxUint64))
	require.Equal(t, time.Duration(math.MaxInt64), Backoff(1, math.MaxInt64, math.MaxUint64))
	require.Equal(t, time.Millisecond, Backoff(time.Hour, time.Millisecond, 3), "the cap bounds the base too")
	require.Zero(t, Backoff(-1, time.Minute, 3), "a negative base redelivers at once")
	require.Zero(t, Backoff(time.Second, 0, 3), "a zero limit redelivers at once")
}

func TestInProgressWaitIsTheLeaseLeftOrTheHold(t *testing.T) {
	running := consume.Decision{Reason: consume.ReasonInProgress, RetryAfter: time.Second,
		Err: &once.InProgressError{RetryAfter: time.Second, LeaseRemaining: 25 * time.Second}}
	require.Equal(t, 25*time.Second, InProgressWait(running), "the lease left, not the 1s hint")
	held := consume.Decision{Reason: consume.ReasonInProgress, RetryAfter: consume.HeldRedelivery,
		Err: &once.InProgressError{RetryAfter: time.Hour, LeaseRemaining: 10 * time.Second, Held: true, HoldRemaining: time.Hour}}
	require.Equal(t, consume.HeldRedelivery, InProgressWait(held), "a held key keeps the decision's hint")
	bare := consume.Decision{Reason: consume.ReasonInProgress, RetryAfter: 300 * time.Millisecond, Err: errors.New("wrapped elsewhere")}
	require.Equal(t, 300*time.Millisecond, InProgressWait(bare))
}
