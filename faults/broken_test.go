package faults

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stagedoor/once"
	"github.com/stagedoor/once/backends"
	"github.com/stagedoor/once/backends/memory"
)

// naiveStore is a deliberately broken store: a map whose Claim reads, waits
// and then writes (Get-then-Put), so two concurrent claims of one key can
// both win. lossy makes Complete report success without storing anything.
// The suite must catch both.
type naiveStore struct {
	mu    sync.Mutex
	recs  map[string]*naiveRec
	lossy bool
}

type naiveRec struct {
	completed bool
	owner     string
	outcome   []byte
	leaseEnd  time.Time
}

func newNaiveStore(lossy bool) *naiveStore {
	return &naiveStore{recs: map[string]*naiveRec{}, lossy: lossy}
}

func nkey(scope, key string) string { return fmt.Sprintf("%d:%s:%s", len(scope), scope, key) }

func (s *naiveStore) get(k string) (naiveRec, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.recs[k]
	if !ok {
		return naiveRec{}, false
	}
	return *r, true
}

func (s *naiveStore) put(k string, r naiveRec) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.recs[k] = &r
}

func (s *naiveStore) Claim(_ context.Context, p backends.ClaimParams) (backends.ClaimResult, error) {
	k := nkey(p.Scope, p.Key)
	if r, ok := s.get(k); ok && (r.completed || time.Now().Before(r.leaseEnd)) {
		st, left := backends.StatePending, time.Until(r.leaseEnd)
		if r.completed {
			st, left = backends.StateCompleted, 0
		}
		return backends.ClaimResult{Existing: backends.Record{State: st, Outcome: r.outcome, LeaseRemaining: left}}, nil
	}
	time.Sleep(time.Millisecond) // the window between the read and the write
	s.put(k, naiveRec{owner: p.Owner, leaseEnd: time.Now().Add(p.Lease)})
	return backends.ClaimResult{Claimed: true}, nil
}

func (s *naiveStore) Complete(_ context.Context, p backends.CompleteParams) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.recs[nkey(p.Scope, p.Key)]
	if !ok || r.completed || r.owner != p.Owner {
		return false, nil
	}
	if !s.lossy {
		r.completed, r.outcome, r.owner = true, append([]byte(nil), p.Outcome...), ""
	}
	return true, nil
}

func (s *naiveStore) Renew(_ context.Context, p backends.RenewParams) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.recs[nkey(p.Scope, p.Key)]
	if !ok || r.completed || r.owner != p.Owner {
		return false, nil
	}
	r.leaseEnd = time.Now().Add(p.Lease)
	return true, nil
}

func (s *naiveStore) Release(_ context.Context, p backends.ReleaseParams) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := nkey(p.Scope, p.Key)
	r, ok := s.recs[k]
	if !ok || r.completed || r.owner != p.Owner {
		return false, nil
	}
	delete(s.recs, k)
	return true, nil
}

func (s *naiveStore) Resolve(context.Context, backends.ResolveParams) (backends.ResolveResult, error) {
	return backends.ResolveResult{}, nil
}

// Hold and LeaseHeld never apply: the suite's functions never hold, and
// a claim that cannot be held stays pending until its lease ends.
func (s *naiveStore) Hold(context.Context, backends.HoldParams) (bool, error) { return false, nil }

func (s *naiveStore) LeaseHeld(context.Context, backends.LeaseHeldParams) (backends.LeaseHeldResult, error) {
	return backends.LeaseHeldResult{}, nil
}

// Checkpoint never applies: the suite's functions run no steps.
func (s *naiveStore) Checkpoint(context.Context, backends.CheckpointParams) (bool, error) {
	return false, nil
}

// runInProcess runs workers goroutines over store with a raw in-memory
// ledger, re-reads every key and returns the checker's verdict.
func runInProcess(t *testing.T, store backends.Store, workers, nkeys int) verdict {
	t.Helper()
	l := newMemLedger()
	scope := once.New(store, once.WithLease(time.Second)).Scope("inproc")
	keys := make([]string, nkeys)
	for i := range keys {
		keys[i] = fmt.Sprintf("k%04d", i)
	}
	var mu sync.Mutex
	var acks []event
	emit := func(e event) {
		if e.Ev == "ack" {
			mu.Lock()
			acks = append(acks, e)
			mu.Unlock()
		}
	}
	var wg sync.WaitGroup
	for w := range workers {
		id := fmt.Sprintf("g%d", w)
		r := &runner{id: id, keys: keys, call: plainCall(scope, l, nil, id, 0), emit: emit,
			perCall: time.Second, deadline: time.Now().Add(10 * time.Second)}
		wg.Go(func() { r.run() })
	}
	wg.Wait()
	rereads := map[string]reread{}
	for _, key := range keys {
		ran := false
		cctx, cancel := context.WithTimeout(context.Background(), time.Second)
		out, err := once.DoOutcome(cctx, scope, key, nil, func(context.Context) (string, error) { ran = true; return "", nil })
		cancel()
		rr := reread{Replayed: out.Status == once.Replayed && !ran, Value: out.Value}
		if err != nil {
			rr.Err = err.Error()
		}
		rereads[key] = rr
	}
	effects, _ := l.effects(context.Background())
	return check(observation{Mode: modeRaw, Keys: keys, Acks: acks, Effects: effects, Rereads: rereads})
}

// The checker is only worth something if it fails a broken store. These
// stores break the two guarantees; the same harness over the real memory
// store finds nothing.
func TestCheckerCatchesBrokenStores(t *testing.T) {
	t.Run("control: memory store", func(t *testing.T) {
		v := runInProcess(t, memory.New(nil), 4, 100)
		if len(v.Violations) != 0 {
			t.Errorf("violations on a correct store: %v", v.Violations)
		}
		summary.note("checker control (memory store, 4 goroutines × 100 keys, raw effect): %d violations", len(v.Violations))
	})
	t.Run("non-atomic claim", func(t *testing.T) {
		v := runInProcess(t, newNaiveStore(false), 4, 100)
		if v.DupKeys == 0 || len(v.Violations) == 0 {
			t.Fatalf("a Get-then-Put claim went unnoticed: %+v", v)
		}
		t.Logf("caught: %d keys with duplicate effects, e.g. %s", v.DupKeys, v.Violations[0])
		summary.note("checker on a Get-then-Put claim (deliberately broken): %d violations, %d keys with duplicate effects — caught", len(v.Violations), v.DupKeys)
	})
	t.Run("lossy complete", func(t *testing.T) {
		v := runInProcess(t, newNaiveStore(true), 2, 20)
		if v.Lost == 0 {
			t.Fatalf("a Complete that stores nothing went unnoticed: %+v", v)
		}
		t.Logf("caught: %d acknowledged outcomes lost, e.g. %s", v.Lost, v.Violations[0])
		summary.note("checker on a Complete that stores nothing (deliberately broken): %d acknowledged outcomes lost — caught", v.Lost)
	})
}
