package once

import (
	"context"
	"sync"
	"time"

	"github.com/stagedoor/once/backends"
	"github.com/stagedoor/once/internal/checkpoints"
)

// claimKey is the context key under which fn's context carries its claim.
type claimKey struct{}

// stepLog is a claim's checkpoints: those it claimed with, parsed on the
// first Step, and those its steps wrote since. Its writes are serialized:
// each sends the whole list, so that the last one written holds every
// step.
type stepLog struct {
	mu     sync.Mutex
	stored []byte // the claim's checkpoints, as the store returned them
	parsed bool
	steps  []checkpoints.Step
	used   map[string]bool // the names this execution's steps used
	// broken is why no step may run any more: the claim was lost, a write
	// may or may not have landed (so the list written next could drop a
	// step), or fn returned.
	broken error
}

// errIntentEnded is the error of a Step called after its intent's fn
// returned (from a goroutine fn left behind).
var errIntentEnded = &InvalidInputError{Field: "ctx", Reason: "its intent has ended: fn returned"}

// load parses the claimed checkpoints, once. l.mu is held.
func (l *stepLog) load() error {
	if l.parsed {
		return nil
	}
	steps, err := checkpoints.Parse(l.stored)
	if err != nil {
		return &undecodable{err}
	}
	l.steps, l.parsed, l.stored = steps, true, nil
	return nil
}

// begin starts the step named name: it refuses a name this execution
// used already, and returns the step's checkpoint, if any (the zero Step
// otherwise).
func (l *stepLog) begin(name string) (checkpoints.Step, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.broken != nil {
		return checkpoints.Step{}, l.broken
	}
	if err := l.load(); err != nil {
		return checkpoints.Step{}, err
	}
	if l.used[name] {
		return checkpoints.Step{}, &InvalidInputError{Field: "step", Reason: "name used twice in one execution"}
	}
	if l.used == nil {
		l.used = make(map[string]bool)
	}
	l.used[name] = true
	if i := checkpoints.Index(l.steps, name); i >= 0 {
		return l.steps[i], nil
	}
	return checkpoints.Step{}, nil
}

// write stores the list with s in place of the step of its name (or
// without it, when remove), one fenced Checkpoint retried as a completion
// is, on a context detached from the caller's: the step acted, and its
// outcome must be kept. It does not involve the renewer: a checkpoint
// leaves the lease alone. A lost claim cancels fn's context; a write that
// failed, whose result is unknown, stops every later step of the
// execution.
func (c *claim) writeStep(s checkpoints.Step, remove bool) error {
	l, cfg := &c.steps, c.scope.cfg
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.broken != nil {
		return l.broken
	}
	next := checkpoints.Without(l.steps, s.Name)
	if !remove {
		next = checkpoints.With(l.steps, s)
	}
	p := backends.CheckpointParams{Scope: c.scope.name, Key: c.key, Owner: c.owner, Steps: checkpoints.Encode(next)}
	var applied bool
	var err error
	var start time.Time
	for attempt := range completeAttempts {
		if attempt > 0 {
			time.Sleep(completeBackoff << (attempt - 1))
		}
		start = cfg.clock()
		wctx := newWriteContext(c.callCtx, writeTimeout)
		applied, err = c.scope.store.Checkpoint(wctx, p)
		wctx.end()
		if err == nil {
			break
		}
		c.emit(Event{Kind: EventStoreError, Scope: c.scope.name, Key: c.key, Op: "checkpoint", Step: s.Name, StoreTime: cfg.since(start), Err: err})
	}
	switch {
	case err != nil:
		l.broken = &UnrecordedError{Err: &StoreError{Op: "checkpoint", Err: err}}
		return l.broken
	case !applied:
		l.lost(c)
		c.emit(Event{Kind: EventLeaseLost, Scope: c.scope.name, Key: c.key, Op: "checkpoint", Step: s.Name, StoreTime: cfg.since(start), Err: ErrLeaseLost})
		return ErrLeaseLost
	}
	l.steps = next
	return nil
}

// writeStepTx stores the list with s added in tx, through store (bound to
// tx), and commits tx: the step's writes and its checkpoint commit
// together or not at all. l.mu is held throughout, so that no other
// write of the list lands between this one and the commit.
func (c *claim) writeStepTx(s checkpoints.Step, store backends.Store, commit func(context.Context) error) error {
	l, cfg := &c.steps, c.scope.cfg
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.broken != nil {
		return l.broken
	}
	next := checkpoints.With(l.steps, s)
	start := cfg.clock()
	wctx := newWriteContext(c.callCtx, writeTimeout)
	defer wctx.end()
	applied, err := store.Checkpoint(wctx, backends.CheckpointParams{Scope: c.scope.name, Key: c.key, Owner: c.owner, Steps: checkpoints.Encode(next)})
	switch {
	case err != nil: // rolled back: nothing happened
		c.emit(Event{Kind: EventStoreError, Scope: c.scope.name, Key: c.key, Op: "checkpoint", Step: s.Name, StoreTime: cfg.since(start), Err: err})
		return &StoreError{Op: "checkpoint", Err: err}
	case !applied:
		l.lost(c)
		c.emit(Event{Kind: EventLeaseLost, Scope: c.scope.name, Key: c.key, Op: "checkpoint", Step: s.Name, StoreTime: cfg.since(start), Err: ErrLeaseLost})
		return ErrLeaseLost
	}
	if err := commit(wctx); err != nil {
		// Committed or not: the list written next could drop the step.
		l.broken = &UnrecordedError{Err: &StoreError{Op: "commit", Err: err}}
		return l.broken
	}
	l.steps = next
	return nil
}

// lost records that the claim was taken over: no step runs any more, and
// fn's context ends with ErrLeaseLost. l.mu is held.
func (l *stepLog) lost(c *claim) {
	l.broken = ErrLeaseLost
	c.cancel(ErrLeaseLost)
}

// close ends the log, if endSteps has not: no step runs once fn has
// returned or panicked.
func (l *stepLog) close() {
	l.mu.Lock()
	l.broken = errIntentEnded
	l.mu.Unlock()
}

// endSteps closes the log when fn has returned, and reports each
// checkpoint no step of this execution used (EventStepUnmatched): it is
// kept, never applied to another step.
func (c *claim) endSteps() {
	l := &c.steps
	l.mu.Lock()
	defer l.mu.Unlock()
	l.broken = errIntentEnded
	if l.load() != nil {
		return // corrupt: the first Step reported it
	}
	for _, s := range l.steps {
		if !l.used[s.Name] {
			c.emit(Event{Kind: EventStepUnmatched, Scope: c.scope.name, Key: c.key, Step: s.Name})
		}
	}
}
