package once

import (
	"context"
	"sync"
	"time"
)

// writeContext is the context of one store write made after fn returned:
// the call's context (parent) detached from its cancellation, with a
// deadline. It carries parent's values, and is done at its deadline or
// when end is called, never before; Err and context.Cause report which
// (DeadlineExceeded, Canceled).
//
// It arms a timer (a context.WithDeadline on a never-done root, which
// the writeContext answers for) only when the store asks for Done or a
// value, as a network driver does; a store that only reads Err and
// Deadline (the memory store) costs one small allocation per write
// instead of a timer and a cancel context. Err then reports the deadline
// by the clock. The timed context is a *context.cancelCtx that Value
// hands out under the context package's own key, so a context.AfterFunc
// or a child context of a writeContext (the driver's way to watch a
// write) registers with it directly, without a goroutine or a wrapper.
type writeContext struct {
	parent   context.Context
	deadline time.Time

	mu     sync.Mutex
	inner  context.Context // armed by Done or Value
	cancel context.CancelFunc
	err    error // set by end when inner was never armed
}

// newWriteContext returns a context for one write, detached from parent's
// cancellation, that ends timeout from now; call its end when the write
// returned.
func newWriteContext(parent context.Context, timeout time.Duration) *writeContext {
	c := &writeContext{}
	c.init(parent, timeout)
	return c
}

// init readies a zero writeContext, as newWriteContext does.
func (c *writeContext) init(parent context.Context, timeout time.Duration) {
	c.parent, c.deadline = parent, time.Now().Add(timeout)
}

func (c *writeContext) Deadline() (time.Time, bool) { return c.deadline, true }

func (c *writeContext) Done() <-chan struct{} { return c.arm().Done() }

// Value returns parent's value for key, except under the context
// package's own key (which context.Cause and the registration of a child
// look up), where the timed context answers: parent's cancellation is not
// this context's.
func (c *writeContext) Value(key any) any {
	if v := c.arm().Value(key); v != nil {
		return v
	}
	return c.parent.Value(key)
}

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

// arm returns the timed context, making it on first use: a
// context.WithDeadline on the same deadline over a never-done root,
// cancelled at once if the write already ended (a cancelled
// context.WithCancel if it ended before its deadline, so that Err keeps
// the error it first reported).
func (c *writeContext) arm() context.Context {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.inner == nil {
		if c.err == context.Canceled {
			// ended before its deadline: Err stays Canceled, even if the
			// deadline has passed since
			c.inner, c.cancel = context.WithCancel(context.Background())
			c.cancel()
		} else {
			c.inner, c.cancel = context.WithDeadline(context.Background(), c.deadline)
			if c.err != nil {
				c.cancel()
			}
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
