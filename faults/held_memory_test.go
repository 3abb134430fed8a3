package faults

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stagedoor/once"
	"github.com/stagedoor/once/backends"
	"github.com/stagedoor/once/backends/memory"
)

// memProvider is an in-process provider (see provider).
type memProvider struct {
	mu   sync.Mutex
	effs map[string]*effect
}

func (p *memProvider) provide(_ context.Context, key, value, worker string, pid int) (string, int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	e, ok := p.effs[key]
	if !ok {
		e = &effect{Key: key, Value: value, Worker: worker, Pid: pid}
		p.effs[key] = e
	}
	e.Attempts++
	return e.Value, e.Attempts, nil
}

func (p *memProvider) lookup(_ context.Context, key string) (string, bool, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if e, ok := p.effs[key]; ok {
		return e.Value, true, nil
	}
	return "", false, nil
}

func (p *memProvider) effects() map[string][]effect {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := map[string][]effect{}
	for k, e := range p.effs {
		out[k] = []effect{*e}
	}
	return out
}

// stallStore stalls the first call of Hold and of Resolve it is sent until
// the store's clock has passed lease + slack: the in-process form of a
// process stopped past its lease between fn's held error and the store,
// or between a verdict and its Resolve.
type stallStore struct {
	backends.Store
	wait         func()
	hold, resolv atomic.Bool
}

func (s *stallStore) Unwrap() backends.Store { return s.Store }

func (s *stallStore) Hold(ctx context.Context, p backends.HoldParams) (bool, error) {
	if s.hold.CompareAndSwap(false, true) {
		s.wait()
	}
	return s.Store.Hold(ctx, p)
}

func (s *stallStore) Resolve(ctx context.Context, p backends.ResolveParams) (backends.ResolveResult, error) {
	if s.resolv.CompareAndSwap(false, true) {
		s.wait()
	}
	return s.Store.Resolve(ctx, p)
}

// heldKeysInProcess is the held-key run on the memory store, whose
// records live and die with its process, so that kill -9 and restarts do
// not apply. Its owners and reconcilers are goroutines: one owner's Hold
// and one reconciler's Resolve stall past their lease (stale owners),
// another reconciler's passes are cut off by their context at random
// (the in-process form of a reconciler killed mid-pass: its leases lapse),
// and a third reconciler runs undisturbed.
func heldKeysInProcess(t *testing.T) {
	prof := currentProfile()
	lease, hold := prof.Lease, time.Second
	ctx := context.Background()
	store := memory.New(nil)
	wait := func() {
		if err := elapse(ctx, store, lease+prof.Slack); err != nil {
			t.Error(err)
		}
	}
	prov := &memProvider{effs: map[string]*effect{}}
	var mu sync.Mutex
	var acks, lost []event
	emit := func(e event) {
		mu.Lock()
		defer mu.Unlock()
		switch {
		case e.Ev == "ack":
			acks = append(acks, e)
		case e.Ev == "err" && e.Kind == "lease_lost":
			lost = append(lost, e)
		}
	}
	keys := make([]string, heldKeysPerRun)
	for i := range keys {
		keys[i] = fmt.Sprintf("k%05d", i)
	}
	opts := []once.Option{once.WithLease(lease), once.WithHoldFor(hold)}

	stop := make(chan struct{})
	var recs sync.WaitGroup
	for i := range 3 {
		recs.Add(1)
		go func() {
			defer recs.Done()
			id := fmt.Sprintf("r%d", i)
			var verdicts sync.Map
			var st backends.Store = store
			if i == 0 {
				st = &stallStore{Store: store, wait: wait}
			}
			hooked := hookedStore{Store: st, resolved: func(key string) {
				v, _ := verdicts.Load(key)
				emit(event{Ev: "ack", Key: key, Value: v.(string), Worker: id, Verdict: true})
			}}
			rec, err := newReconciler(once.New(hooked, opts...), lookupVerdict(prov, nil, &verdicts), "faults", lease)
			if err != nil {
				t.Error(err)
				return
			}
			for {
				select {
				case <-stop:
					return
				default:
				}
				pctx, cancel := context.WithCancel(ctx)
				if i == 1 {
					pctx, cancel = context.WithTimeout(ctx, time.Duration(rand.IntN(20))*time.Millisecond)
				}
				if _, err := rec.Pass(pctx); err != nil && pctx.Err() == nil {
					t.Errorf("%s: %v", id, err)
				}
				cancel()
				time.Sleep(5 * time.Millisecond)
			}
		}()
	}
	var owners sync.WaitGroup
	for i := range 3 {
		owners.Add(1)
		go func() {
			defer owners.Done()
			id := fmt.Sprintf("w%d", i)
			var st backends.Store = store
			if i == 0 {
				st = &stallStore{Store: store, wait: wait}
			}
			r := &runner{id: id, keys: keys, emit: emit, perCall: 5 * time.Second, deadline: time.Now().Add(prof.Deadline),
				call: heldCall(once.New(st, opts...).Scope("faults"), prov, nil, id, 0)}
			if left := r.run(); left > 0 {
				t.Errorf("%s: %d keys without an answer", id, left)
			}
		}()
	}
	owners.Wait()
	close(stop)
	recs.Wait()

	// Every key is answered: past hold + lease + slack none may be held
	// or in progress, and each replays its first answer.
	if err := elapse(ctx, store, hold+lease+prof.Slack); err != nil {
		t.Fatal(err)
	}
	scope := once.New(store, opts...).Scope("faults")
	rereads := map[string]reread{}
	var stuck []string
	for _, key := range keys {
		ran := false
		out, err := once.DoOutcome(ctx, scope, key, nil, func(context.Context) (string, error) { ran = true; return "re-read ran fn", nil })
		if errors.Is(err, once.ErrInProgress) {
			stuck = append(stuck, key)
		}
		rr := reread{Replayed: out.Status == once.Replayed && !ran, Value: out.Value}
		if err != nil {
			rr.Err = err.Error()
		}
		rereads[key] = rr
	}
	effects := prov.effects()
	v := check(observation{Mode: modeFenced, Keys: keys, Acks: acks, LeaseLost: lost, Effects: effects, Rereads: rereads, Stuck: stuck})
	v.Violations = append(v.Violations, checkHeld(keys, acks, effects, rereads)...)
	verdicts := 0
	for _, a := range acks {
		if a.Verdict {
			verdicts++
		}
	}
	summary.note("held keys on memory (in-process: 3 owners, 3 reconcilers, one owner's Hold and one reconciler's Resolve stalled past the lease, one reconciler's passes cut off by their context at random): %d keys, %d verdicts stored, %d lease losses reported, acknowledged outcomes lost %d, stuck keys %d, violations %d",
		len(keys), verdicts, len(lost), v.Lost, v.Stuck, len(v.Violations))
	for _, msg := range v.Violations {
		t.Errorf("violation: %s", msg)
	}
	if verdicts == 0 {
		t.Error("no verdict was stored: the reconcilers were not exercised")
	}
}
