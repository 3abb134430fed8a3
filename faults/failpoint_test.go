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
// executed fn for key and it is the At-th execution.
func (t *trigger) hit(point, key string) {
	if t == nil || t.fp.Point != point {
		return
	}
	t.mu.Lock()
	fire := !t.fired && t.executed && t.key == key && t.execs == t.fp.At
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

// hookedStore fires the completion failpoints inside Complete.
type hookedStore struct {
	backends.Store
	trig *trigger
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
