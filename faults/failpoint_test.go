package faults

import (
	"context"
	"os"
	"sync"
	"syscall"

	"github.com/jackc/pgx/v5"

	"github.com/stagedoor/once/backends"
	"github.com/stagedoor/once/backends/postgres"
)

// Failpoints, in the order a first execution passes them.
const (
	pointAfterClaim     = "after-claim"     // fn has started: the claim is held
	pointBeforeEffect   = "before-effect"   // just before the side effect
	pointAfterEffect    = "after-effect"    // the effect is done, fn has not returned
	pointCompleteBefore = "complete-before" // inside Complete (DoTx: Commit), before the store call
	pointCompleteAfter  = "complete-after"  // inside Complete (DoTx: Commit), after it succeeded

	// Held keys: an owner whose fn returned a held error, a reconciler
	// asking about a held key.
	pointHoldBefore    = "hold-before"               // inside Hold, before the store call
	pointHoldAfter     = "hold-after"                // inside Hold, after it applied: Do has not returned
	pointLookup        = "reconciler-lookup"         // in the reconcile.Check: the reconciler's lease is taken
	pointResolveBefore = "reconciler-resolve-before" // inside the verdict's Resolve, before the store call
	pointResolveAfter  = "reconciler-resolve-after"  // inside the verdict's Resolve, after it applied
)

// allPoints lists every failpoint.
var allPoints = []string{pointAfterClaim, pointBeforeEffect, pointAfterEffect, pointCompleteBefore, pointCompleteAfter}

// crashWindow holds the points between the effect and the recorded outcome:
// a worker that dies there leaves the effect done and the key claimed, so in
// raw mode the key's next owner repeats the effect.
var crashWindow = map[string]bool{pointAfterEffect: true, pointCompleteBefore: true}

// Failpoint actions.
const (
	actionKill = "kill" // SIGKILL to itself: kill -9
	actionStop = "stop" // SIGSTOP to itself; the driver sends SIGCONT later
)

// failpoint fires Action at Point during the At-th execution of fn in one
// worker process.
type failpoint struct {
	Point  string `json:"point,omitempty"`
	Action string `json:"action,omitempty"`
	At     int    `json:"at,omitempty"`
}

// trigger tracks a worker's executions and fires its failpoint once. A nil
// trigger never fires.
type trigger struct {
	fp   failpoint
	emit func(event)
	self string

	mu       sync.Mutex
	execs    int
	key      string
	executed bool
	fired    bool
}

// begin marks the start of a Do call for key.
func (t *trigger) begin(key string) {
	if t == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.key, t.executed = key, false
}

// exec marks the start of fn for the current key.
func (t *trigger) exec() {
	if t == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.execs++
	t.executed = true
}

// hit fires the failpoint if point is the configured one, the current call
// executed fn for key and it is at least the At-th execution (a point that
// not every execution passes, such as the hold of a held owner, fires at
// the first pass from the At-th execution on).
func (t *trigger) hit(point, key string) {
	if t == nil || t.fp.Point != point {
		return
	}
	t.mu.Lock()
	fire := !t.fired && t.executed && t.key == key && t.execs >= t.fp.At
	if fire {
		t.fired = true
	}
	t.mu.Unlock()
	if !fire {
		return
	}
	t.emit(event{Ev: "fault", Key: key, Point: point, Action: t.fp.Action, Worker: t.self, Pid: os.Getpid()})
	switch t.fp.Action {
	case actionKill:
		_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {} // never returns
	case actionStop:
		_ = syscall.Kill(os.Getpid(), syscall.SIGSTOP) // returns after SIGCONT
	}
}

// hookedStore fires the completion, hold and resolve failpoints inside
// the store calls. resolved, when set, is told of every Resolve that
// applied.
type hookedStore struct {
	backends.Store
	trig     *trigger
	resolved func(key string)
}

// Unwrap makes hookedStore a decorator, so that backends.As finds the
// store's Lister (a reconcile.Job needs it).
func (s hookedStore) Unwrap() backends.Store { return s.Store }

func (s hookedStore) Hold(ctx context.Context, p backends.HoldParams) (bool, error) {
	s.trig.hit(pointHoldBefore, p.Key)
	ok, err := s.Store.Hold(ctx, p)
	if err == nil && ok {
		s.trig.hit(pointHoldAfter, p.Key)
	}
	return ok, err
}

func (s hookedStore) Resolve(ctx context.Context, p backends.ResolveParams) (backends.ResolveResult, error) {
	s.trig.hit(pointResolveBefore, p.Key)
	r, err := s.Store.Resolve(ctx, p)
	if err == nil && r.Resolved {
		if s.resolved != nil {
			s.resolved(p.Key)
		}
		s.trig.hit(pointResolveAfter, p.Key)
	}
	return r, err
}

func (s hookedStore) Complete(ctx context.Context, p backends.CompleteParams) (bool, error) {
	s.trig.hit(pointCompleteBefore, p.Key)
	ok, err := s.Store.Complete(ctx, p)
	if err == nil && ok {
		s.trig.hit(pointCompleteAfter, p.Key)
	}
	return ok, err
}

// hookedBegin is store.BeginTx with the completion failpoints fired
// around the Commit of the once.DoTx transaction, where the outcome
// becomes durable.
func hookedBegin(store *postgres.Store, trig *trigger, key string) func(context.Context) (pgx.Tx, backends.Store, error) {
	return func(ctx context.Context) (pgx.Tx, backends.Store, error) {
		tx, bound, err := store.BeginTx(ctx)
		if err != nil {
			return nil, nil, err
		}
		return hookedTx{Tx: tx, trig: trig, key: key}, bound, nil
	}
}

type hookedTx struct {
	pgx.Tx
	trig *trigger
	key  string
}

func (t hookedTx) Commit(ctx context.Context) error {
	t.trig.hit(pointCompleteBefore, t.key)
	err := t.Tx.Commit(ctx)
	if err == nil {
		t.trig.hit(pointCompleteAfter, t.key)
	}
	return err
}
