package once

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/stagedoor/once/backends"
)

// clockFuncs are the renewer's clock and timers. Tests of package once swap
// them for fake ones to drive renewals deterministically; the swap is atomic,
// so a goroutine still running from an earlier test never races with it.
type clockFuncs struct {
	now       func() time.Time
	afterFunc func(d time.Duration, f func()) timer
}

var clock atomic.Pointer[clockFuncs]

func init() {
	clock.Store(&clockFuncs{
		now:       time.Now,
		afterFunc: func(d time.Duration, f func()) timer { return time.AfterFunc(d, f) },
	})
}

func now() time.Time { return clock.Load().now() }

// timer is the part of *time.Timer the renewer uses.
type timer interface {
	Stop() bool
	Reset(d time.Duration) bool
}

// renewer keeps a claim's lease alive from the claim until the claim is
// settled — completed, released or held — renewing it about every third of
// the lease, through fn's run and the whole write-back of its outcome. It
// cancels fn's context with cause ErrLeaseLost when the store reports the
// claim lost, or when renewals have failed for so long that the lease may
// lapse before the next attempt: once fails closed rather than let fn run
// on a claim it may no longer hold.
//
// Renewals and the owner's completion attempts never overlap (write holds
// the same lock), so a renewal never races the completion that settles the
// claim, and once stop or a successful write has returned, no renewal is
// ever sent again.
//
// It runs on a timer (time.AfterFunc), so a short fn costs no goroutine.
// A panic in the observer or in the store's Renew on the timer is
// recovered: the event is dropped, the Renew counts as failed.
// A nil *renewer does nothing.
type renewer struct {
	ctx      context.Context
	store    backends.Store
	cfg      *config
	params   backends.RenewParams
	interval time.Duration
	lost     context.CancelCauseFunc

	// flight is held across each store write of the owner: a renewal or a
	// completion attempt.
	flight sync.Mutex

	mu      sync.Mutex
	timer   timer
	stopped bool
	// armed reports a pending fire of timer: set by each (re)arm, cleared
	// when a fire reaches renew or Stop cancels it. A renewer goes back to
	// the pool only when stopped and not armed: no fire of its timer can
	// then run for the next claim that gets it.
	armed bool
	// clk is the clock that made timer; a pooled renewer made on another
	// clock (a test swapped it) is not reused.
	clk *clockFuncs
	// lastOK is when the last proof of the lease (the claim or a renewal)
	// was sent: the lease runs at least until lastOK + Lease.
	lastOK time.Time
	// abort cancels the renewal in flight, if any.
	abort context.CancelFunc
}

// renewers pools stopped renewers with their timer, so that a claim
// costs no renewer, closure or timer allocation in the steady state.
var renewers sync.Pool

func startRenewer(ctx context.Context, store backends.Store, cfg *config, p backends.RenewParams, claimSent time.Time, lost context.CancelCauseFunc) *renewer {
	clk := clock.Load()
	r, _ := renewers.Get().(*renewer)
	if r == nil || r.clk != clk {
		r = &renewer{clk: clk}
	}
	r.ctx, r.store, r.cfg, r.params, r.lost = ctx, store, cfg, p, lost
	r.interval = max(p.Lease/3, time.Millisecond)
	r.lastOK, r.stopped, r.abort = claimSent, false, nil
	r.mu.Lock()
	if r.timer == nil {
		r.timer = clk.afterFunc(r.interval, r.renew)
	} else {
		r.timer.Reset(r.interval)
	}
	r.armed = true
	r.mu.Unlock()
	return r
}

// recycle returns a stopped renewer to the pool, once the claim is settled
// and stop has returned. One whose timer may still fire is left to the
// garbage collector: that fire finds it stopped and does nothing.
func (r *renewer) recycle() {
	if r == nil {
		return
	}
	r.mu.Lock()
	reusable := r.stopped && !r.armed
	r.ctx, r.store, r.cfg, r.lost, r.abort, r.params = nil, nil, nil, nil, nil, backends.RenewParams{}
	r.mu.Unlock()
	if reusable {
		renewers.Put(r)
	}
}

// renew runs on the timer. It holds flight until its events are emitted,
// so that stop, which waits for flight, returns after them: no event of a
// claim reaches the observer after its call returned.
func (r *renewer) renew() {
	r.flight.Lock()
	defer r.flight.Unlock()
	r.mu.Lock()
	r.armed = false
	if r.stopped {
		r.mu.Unlock()
		return
	}
	ctx, abort := context.WithTimeout(r.ctx, r.interval)
	r.abort = abort
	r.mu.Unlock()
	sent := now()
	ok, err := r.send(ctx)
	abort()

	r.mu.Lock()
	if r.stopped {
		r.mu.Unlock()
		return
	}
	e := Event{Scope: r.params.Scope, Key: r.params.Key, Op: "renew", StoreTime: r.cfg.since(sent)}
	lose := false
	switch {
	case err == nil && ok:
		r.lastOK = sent
		e.Kind = EventRenewed
	case err == nil:
		lose = true
	default:
		e.Kind, e.Err = EventStoreError, err
		lose = now().Sub(r.lastOK) >= r.params.Lease-r.interval
	}
	if lose {
		r.stopped = true
	} else {
		r.timer.Reset(r.interval)
		r.armed = true
	}
	r.mu.Unlock()

	if e.Kind != 0 {
		r.emit(e)
	}
	if lose {
		e.Kind, e.Err = EventLeaseLost, ErrLeaseLost
		r.emit(e)
		r.lost(ErrLeaseLost)
	}
}

// send is the store's Renew. A panic in it (a user's store wrapper) is
// recovered and reported as the renewal's error, since nothing on the
// timer's goroutine could handle it: the renewer then fails closed as for
// any failing renewal.
func (r *renewer) send(ctx context.Context) (ok bool, err error) {
	defer func() {
		if p := recover(); p != nil {
			ok, err = false, fmt.Errorf("once: store Renew panicked: %v", p)
		}
	}()
	return r.store.Renew(ctx, r.params)
}

// emit reports a renewal event; a panic in the observer is recovered, since
// nothing on the timer's goroutine could handle it.
func (r *renewer) emit(e Event) {
	defer func() { _ = recover() }()
	r.cfg.emit(r.ctx, e)
}

// write runs one store write of the claim's owner with no renewal in
// flight. f gets the timeout to use: writeTimeout, cut so that the write
// ends a renewal interval before the proven lease does, leaving a renewal
// time to extend it (never less than one interval). If f reports the claim
// settled, no renewal is sent after write returns.
func (r *renewer) write(f func(timeout time.Duration) (settled bool)) {
	if r == nil {
		f(writeTimeout)
		return
	}
	r.flight.Lock()
	defer r.flight.Unlock()
	r.mu.Lock()
	left := r.params.Lease - now().Sub(r.lastOK)
	r.mu.Unlock()
	if f(min(writeTimeout, max(left-r.interval, r.interval))) {
		r.halt()
	}
}

// halt stops renewal without waiting for a renewal in flight.
func (r *renewer) halt() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.stopped = true
	if r.timer.Stop() {
		r.armed = false
	}
	if r.abort != nil {
		r.abort()
	}
}

// stop ends renewal: a renewal in flight is cancelled and waited for, so no
// renewal is sent after stop returns.
func (r *renewer) stop() {
	if r == nil {
		return
	}
	r.halt()
	r.flight.Lock()
	//lint:ignore SA2001 the empty critical section waits for the renewal in flight
	r.flight.Unlock()
}
