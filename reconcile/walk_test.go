package reconcile_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stagedoor/once"
	"github.com/stagedoor/once/backends"
	"github.com/stagedoor/once/reconcile"
)

// listCounter is a reconcileFaults that counts the Lists made and the
// records they returned since the last reset.
type listCounter struct {
	*reconcileFaults

	mu             sync.Mutex
	lists, records int
}

func (c *listCounter) List(ctx context.Context, p backends.ListParams) (backends.ListPage, error) {
	page, err := c.reconcileFaults.List(ctx, p)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.lists++
	c.records += len(page.Records)
	return page, err
}

// reset returns the Lists and records counted, and starts again at 0.
func (c *listCounter) reset() (lists, records int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	lists, records = c.lists, c.records
	c.lists, c.records = 0, 0
	return lists, records
}

// TestReconcilerResumesWithOneListOfWhatItExamines: the Pass after one
// that a store error ended lists its page again with one List of the
// examined keys still held and Batch keys more (not the examined keys
// it resolved, which the store lists no more), leaves out the examined
// ones, and leaves nothing over: each later Pass of the walk makes one
// List of at most Batch keys, and every key is asked once in the walk.
// Before, the resumed Pass listed the resolved keys' room too, more
// keys than it examined, and the rest left over had every later Pass
// list the page again, more of it each time.
func TestReconcilerResumesWithOneListOfWhatItExamines(t *testing.T) {
	const n, batch = 40, 10
	f := newReconcileFaults()
	holdKeys(t, f, n)
	first, err := f.List(t.Context(), backends.ListParams{State: backends.StateHeld, Limit: batch})
	require.NoError(t, err)
	// Of the first page, the keys at even places are left held, the
	// others settled; the Resolve of the one at place 5 fails.
	leftHeld := map[string]bool{}
	for i, l := range first.Records {
		if i%2 == 0 {
			leftHeld[l.Key] = true
		}
	}
	failing := first.Records[5].Key
	f.failResolve(errResolveDown, failing)
	c := &listCounter{reconcileFaults: f}
	asked := map[string]int{}
	rc, err := reconcile.New(once.New(c), func(_ context.Context, k reconcile.HeldKey) (reconcile.Verdict[string], error) {
		asked[k.Key]++
		return reconcile.Verdict[string]{Settled: !leftHeld[k.Key], Value: "charge-" + k.Key}, nil
	}, reconcile.Config{Batch: batch})
	require.NoError(t, err)
	now := time.Now()
	reconcile.WithClock(rc, func() time.Time { return now }) // the failing key stays backed off

	rep, err := rc.Pass(t.Context())
	require.ErrorIs(t, err, errResolveDown)
	require.Equal(t, 6, rep.Examined)
	require.Equal(t, 2, rep.Resolved, "the keys at places 1 and 3")
	examined := rep.Examined
	c.reset()

	rep, err = rc.Pass(t.Context())
	require.NoError(t, err)
	lists, records := c.reset()
	require.Equal(t, 1, lists, "one List covers the examined keys still held and Batch keys more")
	require.Equal(t, 4+batch, records, "the 4 examined keys still held (places 0, 2, 4 and the failing 5) and Batch keys more")
	require.Equal(t, batch, rep.Examined, "none of the examined keys again")
	require.Zero(t, rep.Skipped, "the failing key, backed off, is not examined again")
	examined += rep.Examined

	for !rep.Done {
		rep, err = rc.Pass(t.Context())
		require.NoError(t, err)
		lists, records = c.reset()
		require.Equal(t, 1, lists, "nothing left over to list again")
		require.LessOrEqual(t, records, batch)
		examined += rep.Examined
	}
	require.Equal(t, n, examined, "every key examined once in the walk")
	require.Len(t, asked, n)
	for key, times := range asked {
		require.Equal(t, 1, times, "%s asked once in the walk", key)
	}
}
