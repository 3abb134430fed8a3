package natsonce

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestBackoffDoublesUpToTheCapWithoutOverflow(t *testing.T) {
	require.Equal(t, time.Second, backoff(time.Second, time.Minute, 0))
	require.Equal(t, time.Second, backoff(time.Second, time.Minute, 1))
	require.Equal(t, 8*time.Second, backoff(time.Second, time.Minute, 4))
	require.Equal(t, time.Minute, backoff(time.Second, time.Minute, 7))
	require.Equal(t, time.Minute, backoff(time.Second, time.Minute, math.MaxUint64))
	require.Equal(t, time.Duration(math.MaxInt64), backoff(1, math.MaxInt64, math.MaxUint64))
	require.Equal(t, time.Millisecond, backoff(time.Hour, time.Millisecond, 3), "the cap bounds the base too")
	require.Zero(t, backoff(-1, time.Minute, 3), "a negative base Naks at once")
}
