package once

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

type ctxKey struct{}

// A write context behaves as context.WithTimeout on the detached call
// context, whether the store waits on Done, registers an AfterFunc, derives
// a child, or only reads Err.
func TestWriteContextIsATimeout(t *testing.T) {
	parent := context.WithoutCancel(context.WithValue(context.Background(), ctxKey{}, "v"))

	t.Run("Err only", func(t *testing.T) {
		c := newWriteContext(parent, 20*time.Millisecond)
		defer c.end()
		require.NoError(t, c.Err())
		d, ok := c.Deadline()
		require.True(t, ok)
		time.Sleep(time.Until(d))
		require.ErrorIs(t, c.Err(), context.DeadlineExceeded)
		select {
		case <-c.Done(): // armed after the deadline: closed at once
		case <-time.After(5 * time.Second):
			t.Fatal("Done not closed after the deadline")
		}
	})
	t.Run("Done", func(t *testing.T) {
		c := newWriteContext(parent, 20*time.Millisecond)
		defer c.end()
		select {
		case <-c.Done():
		case <-time.After(5 * time.Second):
			t.Fatal("Done not closed at the deadline")
		}
		require.ErrorIs(t, c.Err(), context.DeadlineExceeded)
	})
	t.Run("child and AfterFunc", func(t *testing.T) {
		c := newWriteContext(parent, 20*time.Millisecond)
		defer c.end()
		child, cancel := context.WithCancel(c)
		defer cancel()
		fired := make(chan struct{})
		context.AfterFunc(c, func() { close(fired) })
		<-child.Done()
		<-fired
		require.ErrorIs(t, child.Err(), context.DeadlineExceeded)
		require.Equal(t, "v", child.Value(ctxKey{}))
	})
	t.Run("Value and Cause", func(t *testing.T) {
		cancelled, cancel := context.WithCancelCause(context.WithValue(context.Background(), ctxKey{}, "v"))
		cause := errors.New("the caller gave up")
		cancel(cause)
		c := newWriteContext(cancelled, time.Hour)
		require.Equal(t, "v", c.Value(ctxKey{}), "the call's values")
		require.NoError(t, c.Err(), "not the call's cancellation")
		require.NoError(t, context.Cause(c))
		select {
		case <-c.Done():
			t.Fatal("done with the call's context")
		default:
		}
		c.end()
		require.ErrorIs(t, context.Cause(c), context.Canceled)
	})
	t.Run("end", func(t *testing.T) {
		c := newWriteContext(parent, time.Hour)
		c.end()
		require.ErrorIs(t, c.Err(), context.Canceled)
		<-c.Done() // armed after the end: closed at once
		armed := newWriteContext(parent, time.Hour)
		done := armed.Done()
		armed.end()
		<-done
		require.ErrorIs(t, armed.Err(), context.Canceled)
	})
}
