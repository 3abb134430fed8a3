package redelivery

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
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
