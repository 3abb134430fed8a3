package oncegrpc

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/stagedoor/once"
)

func withRetryInfo(t *testing.T, code codes.Code, delay time.Duration) error {
	t.Helper()
	st, err := status.New(code, "later").WithDetails(&errdetails.RetryInfo{RetryDelay: durationpb.New(delay)})
	require.NoError(t, err)
	return st.Err()
}

// TestRetryDelayHonoursRetryInfo: the server's RetryInfo delay is waited
// in full up to MaxRetryDelay, past MaxBackoff; a longer one, and a held
// key, are not retried.
func TestRetryDelayHonoursRetryInfo(t *testing.T) {
	c := ClientConfig{BaseBackoff: time.Millisecond, MaxBackoff: 2 * time.Millisecond, MaxRetryDelay: 10 * time.Second}
	for _, code := range []codes.Code{codes.ResourceExhausted, codes.Unavailable, codes.Aborted} {
		delay, retry := c.retryDelay(withRetryInfo(t, code, 5*time.Second), 1)
		require.True(t, retry, "%v", code)
		require.Equal(t, 5*time.Second, delay, "%v: the server's delay, not MaxBackoff", code)
		_, retry = c.retryDelay(withRetryInfo(t, code, 11*time.Second), 1)
		require.False(t, retry, "%v: longer than MaxRetryDelay", code)
	}
	delay, retry := c.retryDelay(status.Error(codes.Unavailable, "down"), 3)
	require.True(t, retry)
	require.LessOrEqual(t, delay, c.MaxBackoff)

	delay, retry = c.retryDelay(inProgressStatus(&once.InProgressError{RetryAfter: time.Second}), 1)
	require.True(t, retry, "a duplicate in progress")
	require.Equal(t, time.Second, delay)
	_, retry = c.retryDelay(inProgressStatus(&once.InProgressError{RetryAfter: time.Second, Held: true}), 1)
	require.False(t, retry, "a held key: its outcome is unknown")
}

// TestRetryDelayAtTheLargestBackoff: a MaxBackoff of math.MaxInt64, which
// ClientInterceptor accepts, overflowed the jitter's bound and made
// rand.Int64N panic on the first retry.
func TestRetryDelayAtTheLargestBackoff(t *testing.T) {
	c := ClientConfig{BaseBackoff: math.MaxInt64, MaxBackoff: math.MaxInt64, MaxRetryDelay: DefaultMaxRetryDelay}
	for attempt := 1; attempt <= 3; attempt++ {
		require.NotPanics(t, func() {
			delay, retry := c.retryDelay(status.Error(codes.Unavailable, "down"), attempt)
			require.True(t, retry)
			require.GreaterOrEqual(t, delay, time.Duration(0))
		})
	}
}
