package reconcile_test

import (
	"bytes"
	"context"
	"encoding/gob"
	"errors"
	"sync"
	"time"

	"github.com/stagedoor/once"
)

// errResolveDown is the failure of a store whose Resolve is down.
var errResolveDown = errors.New("store down")

// fakeClock is a settable clock.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func newFakeClock() *fakeClock {
	return &fakeClock{now: time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// recorder is an observer that keeps the events it sees.
type recorder struct {
	mu     sync.Mutex
	events []once.Event
}

func (r *recorder) observe(_ context.Context, e once.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, e)
}

// kinds returns the kinds of the events seen so far, and forgets them.
func (r *recorder) kinds() []once.EventKind {
	r.mu.Lock()
	defer r.mu.Unlock()
	kinds := make([]once.EventKind, len(r.events))
	for i, e := range r.events {
		kinds[i] = e.Kind
	}
	r.events = nil
	return kinds
}

// gobCodec is a binary codec: its bytes are not UTF-8.
type gobCodec struct{}

func (gobCodec) Marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	err := gob.NewEncoder(&b).Encode(v)
	return b.Bytes(), err
}

func (gobCodec) Unmarshal(data []byte, v any) error {
	return gob.NewDecoder(bytes.NewReader(data)).Decode(v)
}
