package once

import (
	"context"
	"errors"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A write context that ended before its deadline reports Canceled, and
// keeps reporting it (the Context contract: Err's first non-nil error is
// its last), even when a store that kept it looks at Done or its cause
// after the deadline passed.
func TestWriteContextErrStableAfterDeadline(t *testing.T) {
	c := newWriteContext(context.Background(), 20*time.Millisecond)
	c.end()
	require.ErrorIs(t, c.Err(), context.Canceled)
	for time.Now().Before(c.deadline) { // poll the clock until the deadline passed
		runtime.Gosched()
	}
	<-c.Done()
	require.ErrorIs(t, c.Err(), context.Canceled, "Err changed after it reported Canceled")
	require.ErrorIs(t, context.Cause(c), context.Canceled)
}

// opaqueCtx is a caller's context of its own type: its Done is not a
// cancelCtx's, so a child of it is watched by a goroutine.
type opaqueCtx struct {
	done chan struct{}
	err  error
}

func (o *opaqueCtx) Deadline() (time.Time, bool) { return time.Time{}, false }
func (o *opaqueCtx) Done() <-chan struct{}       { return o.done }
func (o *opaqueCtx) Err() error {
	select {
	case <-o.done:
		return o.err
	default:
		return nil
	}
}
func (o *opaqueCtx) Value(key any) any { return nil }

// fn's context over a caller's context of its own type: armed during fn,
// it ends with the lease's loss or Do's return, and the goroutine the
// context package starts to watch the caller's context is released;
// armed after, it is ended at once and starts none.
func TestFnContextOpaqueParent(t *testing.T) {
	before := runtime.NumGoroutine()
	for _, cause := range []error{ErrLeaseLost, nil} {
		p := &opaqueCtx{done: make(chan struct{}), err: context.Canceled}
		f := &fnContext{parent: p, claim: &claim{}}
		child, cancel := context.WithTimeout(f, time.Hour)
		f.end(cause)
		<-child.Done()
		want := cause
		if want == nil {
			want = context.Canceled
		}
		require.True(t, errors.Is(context.Cause(child), want), "cause %v", context.Cause(child))
		cancel()
		late := &fnContext{parent: p, claim: &claim{}}
		late.end(cause)
		<-late.Done()
		require.True(t, errors.Is(context.Cause(late), want))
		close(p.done)
	}
	for runtime.NumGoroutine() > before {
		runtime.Gosched()
	}
}

// The caller's cancellation before fn's first look, and fn's first look
// through context.AfterFunc: the function runs, with the caller's cause.
func TestFnContextAfterFuncAfterCallerCancel(t *testing.T) {
	gaveUp := errors.New("gave up")
	parent, cancel := context.WithCancelCause(context.Background())
	f := &fnContext{parent: parent, claim: &claim{}}
	cancel(gaveUp)
	ran := make(chan struct{})
	context.AfterFunc(f, func() { close(ran) })
	<-ran
	require.Equal(t, gaveUp, context.Cause(f))
	f.end(ErrLeaseLost)
	f.end(nil)
	require.Equal(t, gaveUp, context.Cause(f))
	require.Same(t, f.claim, context.WithoutCancel(f).Value(claimKey{}))
}
