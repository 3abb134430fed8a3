package once

import (
	"context"
	"sync"
	"time"
)

// writeContext is the context of one store write made after fn returned:
// the call's context detached from its cancellation (parent, never done),
// with a deadline. It arms a timer (a context.WithDeadline) only when the
// store asks for Done or registers an AfterFunc, as a network driver that
// waits on it does; a store that only reads Err and Deadline (the memory
// store) costs one small allocation per write instead of a timer and a
// cancel context. Err reports the deadline by the clock either way.
type writeContext struct {
	parent   context.Context
	deadline time.Time

	mu     sync.Mutex
	inner  context.Context // armed by Done or AfterFunc
	cancel context.CancelFunc
	err    error // set by end when inner was never armed
}

// newWriteContext returns a context for one write that ends timeout from
// now; call its end when the write returned.
func newWriteContext(parent context.Context, timeout time.Duration) *writeContext {
	return &writeContext{parent: parent, deadline: time.Now().Add(timeout)}
}

func (c *writeContext) Deadline() (time.Time, bool) { return c.deadline, true }

func (c *writeContext) Value(key any) any { return c.parent.Value(key) }

func (c *writeContext) Done() <-chan struct{} { return c.arm().Done() }

// AfterFunc lets context.AfterFunc and a child context of this one wait
// for its end without a goroutine (the context package looks for it).
func (c *writeContext) AfterFunc(f func()) (stop func() bool) { return context.AfterFunc(c.arm(), f) }

func (c *writeContext) Err() error {
	c.mu.Lock()
	inner, err := c.inner, c.err
	c.mu.Unlock()
	switch {
	case inner != nil:
		return inner.Err()
	case err != nil:
		return err
	case !time.Now().Before(c.deadline):
		return context.DeadlineExceeded
	}
	return nil
}

func (c *writeContext) String() string { return "once.writeContext" }

// arm returns the timed context, making it on first use: a context.WithDeadline
// on the same deadline, cancelled at once if the write already ended.
func (c *writeContext) arm() context.Context {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.inner == nil {
		c.inner, c.cancel = context.WithDeadline(c.parent, c.deadline)
		if c.err != nil {
			c.cancel()
		}
	}
	return c.inner
}

// end ends the context: its timer, if armed, is stopped; Err reports
// context.Canceled from then on, or DeadlineExceeded if the deadline had
// passed.
func (c *writeContext) end() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cancel != nil {
		c.cancel()
		return
	}
	if c.err == nil {
		c.err = context.Canceled
		if !time.Now().Before(c.deadline) {
			c.err = context.DeadlineExceeded
		}
	}
}
