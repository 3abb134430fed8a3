package once_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stagedoor/once"
)

// hammer calls Do from n goroutines released at once on one key, with an fn
// slow enough that they overlap, and returns fn's run count and the results.
func hammer(t *testing.T, scope once.Scope, n int) (int32, []string, []error) {
	t.Helper()
	var runs atomic.Int32
	values, errs := make([]string, n), make([]error, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			values[i], errs[i] = once.Do(context.Background(), scope, "hot", once.Fingerprint("fp"),
				func(context.Context) (string, error) {
					runs.Add(1)
					time.Sleep(100 * time.Millisecond)
					return "charged", nil
				})
		}()
	}
	close(start)
	wg.Wait()
	return runs.Load(), values, errs
}

func TestConcurrentDuplicatesRunFnOnce(t *testing.T) {
	runs, values, errs := hammer(t, once.New(nil).Scope("s"), 64)
	assert.Equal(t, int32(1), runs)
	got := 0
	for i := range values {
		if errs[i] == nil {
			assert.Equal(t, "charged", values[i])
			got++
			continue
		}
		assert.ErrorIs(t, errs[i], once.ErrInProgress, "caller %d", i)
	}
	assert.GreaterOrEqual(t, got, 1, "the owner gets the value")
}

func TestConcurrentDuplicatesWithWaitAllGetTheValue(t *testing.T) {
	runs, values, errs := hammer(t, once.New(nil, once.WithWait(10*time.Second)).Scope("s"), 64)
	assert.Equal(t, int32(1), runs)
	for i := range values {
		require.NoError(t, errs[i], "caller %d", i)
		assert.Equal(t, "charged", values[i])
	}
}
