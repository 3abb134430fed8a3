package redelivery

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stagedoor/once"
	"github.com/stagedoor/once/consume"
)

func TestPace(t *testing.T) {
	p := Policy{Adapter: "x", Backoff: time.Second, Limit: 10 * time.Second, MaxDeliveries: 3, ShutdownCap: 500 * time.Millisecond}
	live := context.Background()
	cancelled, cancel := context.WithCancel(live)
	cancel()
	expired, cancel2 := context.WithDeadline(live, time.Unix(0, 0))
	defer cancel2()
	retry := func(r consume.Reason, hint time.Duration, err error) consume.Decision {
		return consume.Decision{Action: consume.RetryLater, Reason: r, RetryAfter: hint, Err: err}
	}
	failed := errors.New("boom")

	require.Equal(t, consume.Decision{Action: consume.Ack}, p.Pace(live, consume.Decision{Action: consume.Ack}, 9), "only RetryLater is paced")
	require.Equal(t, time.Second, p.Pace(live, retry(consume.ReasonHandlerError, 0, failed), 1).RetryAfter)
	require.Equal(t, 2*time.Second, p.Pace(live, retry(consume.ReasonHandlerError, 0, failed), 2).RetryAfter)

	ex := p.Pace(live, retry(consume.ReasonHandlerError, 0, failed), 3)
	require.Equal(t, consume.DeadLetter, ex.Action)
	require.Equal(t, consume.ReasonExhausted, ex.Reason)
	require.ErrorIs(t, ex.Err, failed)
	require.Contains(t, ex.Err.Error(), "x: delivery 3 of at most 3, ")

	require.Equal(t, consume.DeadLetter, p.Pace(expired, retry(consume.ReasonCanceled, 0, context.DeadlineExceeded), 3).Action, "a timeout is a handler failure")
	sd := p.Pace(cancelled, retry(consume.ReasonCanceled, 0, context.Canceled), 9)
	require.Equal(t, consume.RetryLater, sd.Action, "a shutdown is never exhausted")
	require.Equal(t, 500*time.Millisecond, sd.RetryAfter, "the first backoff, at most ShutdownCap, whatever the count")
	require.Equal(t, 2*time.Second, p.Pace(expired, retry(consume.ReasonCanceled, 0, context.DeadlineExceeded), 2).RetryAfter, "a timeout is backed off as a failure")

	inProgress := retry(consume.ReasonInProgress, time.Second, &once.InProgressError{LeaseRemaining: 7 * time.Second})
	require.Equal(t, 7*time.Second, p.Pace(live, inProgress, 5).RetryAfter, "the owner's lease left, not the hint")
	inProgress.Err = &once.InProgressError{LeaseRemaining: time.Hour}
	require.Equal(t, 10*time.Second, p.Pace(live, inProgress, 5).RetryAfter, "at most Limit")

	require.Equal(t, 2*consume.StoreRetryAfter, p.Pace(live, retry(consume.ReasonStoreDown, 0, failed), 2).RetryAfter)
	require.Equal(t, 10*time.Second, p.Pace(live, retry(consume.ReasonMisconfigured, time.Hour, failed), 1).RetryAfter, "a hint, at most Limit")
	require.Equal(t, time.Duration(0), Policy{Backoff: time.Second, Limit: -1}.Pace(live, retry(consume.ReasonHandlerError, 0, failed), 1).RetryAfter, "a negative Limit never waits")
}

func TestHandlerFailed(t *testing.T) {
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	expired, cancel2 := context.WithDeadline(context.Background(), time.Unix(0, 0))
	defer cancel2()
	require.True(t, HandlerFailed(context.Background(), consume.Decision{Reason: consume.ReasonHandlerError}))
	require.True(t, HandlerFailed(expired, consume.Decision{Reason: consume.ReasonCanceled}))
	require.False(t, HandlerFailed(cancelled, consume.Decision{Reason: consume.ReasonCanceled}))
	require.False(t, HandlerFailed(context.Background(), consume.Decision{Reason: consume.ReasonStoreDown}))
}
