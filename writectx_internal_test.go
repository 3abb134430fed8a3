package once

import (
	"context"
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
		require.Equal(t, "v", c.Value(ctxKey{}))
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
