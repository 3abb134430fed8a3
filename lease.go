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
// the lease while fn runs and between the attempts at writing its outcome.
// It cancels fn's context with cause ErrLeaseLost when the store reports
// the claim lost, when renewals have failed for so long that the lease may
// lapse before the next attempt, or, whatever a renewal in flight does,
// when the proven lease is about to end: once fails closed rather than let
// fn run on a claim it may no longer hold.
//
// The proven lease ends Lease after the last proof of it (the claim or a
// renewal that succeeded) was sent, as measured on this process's
// monotonic clock: the store started that lease no earlier. A watchdog
// cancels fn's context a margin (leaseMargin) before that end, and each
// renewal attempt's context ends then too, so a renewal that hangs (a
// stalled connection, a driver that ignores its context, an observer that
// blocks) cannot keep fn's context live past the lease. The watchdog's
// timer is made by the first renewal: a call whose claim is settled
// before it costs nothing more.
//
// Nothing the renewer does holds back the owner's writes or Do's return.
// While a write of the owner runs (write) no renewal is sent, and a
// renewal in flight when it starts, or when stop is called, is cancelled
// and abandoned, never waited for: its result is discarded. The store
// fences the two (Renew writes nothing to a record that is completed,
// held, absent or another owner's), and the renewer's state only ever
// follows the write's result. A Renew that ignores its context may thus
// still run, on its timer's goroutine, after Do returned; when it returns
// it finds the renewal abandoned and does nothing more (no event, no
// cancellation, no state). Once stop or a write that settled the claim
// has returned, no renewal is sent again.
//
// Renewal events reach the observer outside r.mu, in order, from one
// goroutine at a time (a queue the first emitter drains), so a slow
// observer delays neither the next renewal, nor the watchdog, nor a write.
// A write or stop drops the events not yet handed to the observer: none
// reaches it after the outcome's write has started (though one the
// observer is handling then may still be running).
//
// It runs on timers (time.AfterFunc), so a short fn costs no goroutine.
// A panic in the observer or in the store's Renew on the timer is
// recovered: the event is dropped, the Renew counts as failed.
// A nil *renewer does nothing.
type renewer struct {
	ctx      context.Context // the call's: renewals and their events detach from it
	store    backends.Store
	cfg      *config
	params   backends.RenewParams
	interval time.Duration
	lost     fnCanceler

	mu      sync.Mutex
	timer   timer
	stopped bool
	// armed reports a pending fire of timer: set by each (re)arm, cleared
	// when a fire reaches renew or Stop cancels it. A renewer goes back to
	// the pool only when stopped, not armed, with no renewal in flight and
	// no event being emitted: nothing of its claim can then touch it once
	// the next claim has it.
	armed bool
	// dog is the watchdog's timer, made by the first renewal; dogArmed
	// reports a pending fire of it, as armed does for timer.
	dog      timer
	dogArmed bool
	// clk is the clock that made timer; a pooled renewer made on another
	// clock (a test swapped it) is not reused.
	clk *clockFuncs
	// lastOK is when the last proof of the lease (the claim or a renewal)
	// was sent: the lease runs at least until lastOK + Lease.
	lastOK time.Time
	// sending counts the renewals whose Renew has not returned, abandoned
	// ones included. round numbers the renewals that still count: a write
	// moves it on, so that one in flight then is abandoned.
	sending int
	round   uint64
	// abort cancels the latest renewal's context.
	abort context.CancelFunc
	// writing reports that write is running a write of the owner (fn has
	// returned): no renewal is sent meanwhile, and the watchdog only stops
	// renewal: the write's own result tells whether the claim was lost.
	writing bool

	// events waits for the observer, from head on; draining reports that a
	// goroutine is emitting them.
	events   []Event
	head     int
	draining bool
}

// leaseMargin is how long before the proven lease ends the watchdog
// cancels fn's context: a fifth of the lease, for fn to stop and for the
// timer and the two clocks to disagree. WithLease documents it.
func leaseMargin(lease time.Duration) time.Duration { return lease / 5 }

// renewers pools stopped renewers with their timers, so that a claim
// costs no renewer, closure or timer allocation in the steady state.
var renewers sync.Pool

// fnCanceler ends fn's context with a cause: the claim (its cancel), or a
// test's lostFunc.
type fnCanceler interface{ cancel(cause error) }

func startRenewer(ctx context.Context, store backends.Store, cfg *config, p backends.RenewParams, claimSent time.Time, lost fnCanceler) *renewer {
	clk := clock.Load()
	r, _ := renewers.Get().(*renewer)
	if r == nil || r.clk != clk {
		r = &renewer{clk: clk}
	}
	r.ctx, r.store, r.cfg, r.params, r.lost = ctx, store, cfg, p, lost
	r.interval = max(p.Lease/3, time.Millisecond) // MinLease keeps it above the floor; the floor only guards an unchecked lease
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
// and stop has returned. One whose timers may still fire, whose abandoned
// renewal has not returned, or whose events are still being emitted is
// left to the garbage collector: each finds it stopped and does nothing.
func (r *renewer) recycle() {
	if r == nil {
		return
	}
	r.mu.Lock()
	reusable := r.stopped && !r.writing && !r.armed && !r.dogArmed && r.sending == 0 && !r.draining
	r.ctx, r.store, r.cfg, r.lost, r.abort, r.params = nil, nil, nil, nil, nil, backends.RenewParams{}
	r.mu.Unlock()
	if reusable {
		renewers.Put(r)
	}
}

// left is how long the watchdog lets fn's context live: the proven lease
// less the margin. r.mu is held.
func (r *renewer) left() time.Duration {
	return r.params.Lease - leaseMargin(r.params.Lease) - now().Sub(r.lastOK)
}

// renew runs on the timer. It sends no renewal while a write of the owner
// runs (the write re-arms the timer when it leaves the claim unsettled),
// and discards the result of a renewal that a write or stop abandoned
// while it was in flight.
func (r *renewer) renew() {
	r.mu.Lock()
	r.armed = false
	if r.stopped || r.writing {
		r.mu.Unlock()
		return
	}
	e := Event{Scope: r.params.Scope, Key: r.params.Key, Op: "renew"}
	left := r.left()
	if left <= 0 { // the timer fired late: the lease is no longer proven
		r.fail(e)
		return
	}
	if !r.dogArmed { // armed, it re-arms itself for the end the renewals prove
		if r.dog == nil {
			r.dog = r.clk.afterFunc(left, r.expire)
		} else {
			r.dog.Reset(left)
		}
		r.dogArmed = true
	}
	ctx, abort := context.WithTimeout(context.WithoutCancel(r.ctx), min(r.interval, left))
	r.abort = abort
	r.sending++
	round, store, p := r.round, r.store, r.params
	r.mu.Unlock()
	sent := now()
	ok, err := sendRenew(ctx, store, p)
	abort()

	r.mu.Lock()
	r.sending--
	if r.stopped || r.round != round { // abandoned
		r.mu.Unlock()
		return
	}
	e.StoreTime = r.cfg.since(sent)
	switch {
	case err == nil && ok:
		r.lastOK = sent
		e.Kind = EventRenewed
	case err == nil:
		r.fail(e)
		return
	default:
		e.Kind, e.Err = EventStoreError, err
		if now().Sub(r.lastOK) >= r.params.Lease-r.interval {
			r.fail(e)
			return
		}
	}
	r.timer.Reset(r.interval)
	r.armed = true
	drain := r.queue(e)
	r.mu.Unlock()
	if drain {
		r.drain()
	}
}

// expire runs on the watchdog's timer: it cancels fn's context once the
// proven lease (less the margin) has ended, and otherwise waits again for
// the end that the renewals since proved.
func (r *renewer) expire() {
	r.mu.Lock()
	r.dogArmed = false
	if r.stopped {
		r.mu.Unlock()
		return
	}
	if left := r.left(); left > 0 {
		r.dog.Reset(left)
		r.dogArmed = true
		r.mu.Unlock()
		return
	}
	if r.writing {
		// fn has returned and its outcome's write is running, fenced by
		// the owner token: it, not a lease-lost event, reports whether
		// the claim was still this owner's. No renewal is sent any more.
		r.haltLocked()
		r.mu.Unlock()
		return
	}
	// A renewal in flight is cancelled, and finds the renewer stopped
	// when it returns.
	r.fail(Event{Scope: r.params.Scope, Key: r.params.Key, Op: "renew"})
}

// fail ends renewal as lost: it stops both timers, cancels the renewal in
// flight, cancels fn's context with cause ErrLeaseLost, then reports e (if
// it has a kind) and EventLeaseLost. It runs with r.mu held, and unlocks
// it.
func (r *renewer) fail(e Event) {
	r.haltLocked()
	drain := false
	if e.Kind != 0 {
		drain = r.queue(e)
	}
	e.Kind, e.Err = EventLeaseLost, ErrLeaseLost
	drain = r.queue(e) || drain
	lost := r.lost
	r.mu.Unlock()
	lost.cancel(ErrLeaseLost)
	if drain {
		r.drain()
	}
}

// queue adds e to the events for the observer, if there is one, and
// reports whether the caller must drain them: no other goroutine is
// emitting. r.mu is held.
func (r *renewer) queue(e Event) (drain bool) {
	if r.cfg.observer == nil {
		return false
	}
	r.events = append(r.events, e)
	if r.draining {
		return false
	}
	r.draining = true
	return true
}

// drain emits the queued events, in order, until none is left (a write or
// stop may drop the rest; see dropEvents).
func (r *renewer) drain() {
	r.mu.Lock()
	for r.head < len(r.events) {
		e, cfg, ctx := r.events[r.head], r.cfg, r.ctx
		r.head++
		r.mu.Unlock()
		emitRenewal(context.WithoutCancel(ctx), cfg, e)
		r.mu.Lock()
	}
	clear(r.events)
	r.events, r.head, r.draining = r.events[:0], 0, false
	r.mu.Unlock()
}

// dropEvents drops the events not yet handed to the observer. r.mu is
// held.
func (r *renewer) dropEvents() {
	clear(r.events[r.head:])
	r.events = r.events[:r.head]
}

// sendRenew is the store's Renew. A panic in it (a user's store wrapper) is
// recovered and reported as the renewal's error, since nothing on the
// timer's goroutine could handle it: the renewer then fails closed as for
// any failing renewal.
func sendRenew(ctx context.Context, store backends.Store, p backends.RenewParams) (ok bool, err error) {
	defer func() {
		if v := recover(); v != nil {
			ok, err = false, fmt.Errorf("once: store Renew panicked: %v", v)
		}
	}()
	return store.Renew(ctx, p)
}

// emitRenewal reports a renewal event; a panic in the observer is
// recovered, since nothing on the timer's goroutine could handle it.
func emitRenewal(ctx context.Context, cfg *config, e Event) {
	defer func() { _ = recover() }()
	cfg.emit(ctx, e)
}

// write runs one store write of the claim's owner (fn has returned),
// never waiting for a renewal: one in flight is cancelled and abandoned,
// its result discarded, and none is sent until f returns; the renewal
// events not yet handed to the observer are dropped. f gets the timeout
// to use: writeTimeout, cut so that the write ends a renewal interval
// before the proven lease does, leaving a renewal time to extend it
// (never less than one interval: a write past the proven lease is still
// fenced by the owner token). If f reports the claim settled, no renewal
// is sent after write returns; otherwise renewal resumes at once if the
// write held one off. The watchdog firing during f only stops renewal
// (see expire).
func (r *renewer) write(f func(timeout time.Duration) (settled bool)) {
	if r == nil {
		f(writeTimeout)
		return
	}
	r.mu.Lock()
	r.writing = true
	r.round++
	if r.abort != nil {
		r.abort()
	}
	r.dropEvents()
	left := r.params.Lease - now().Sub(r.lastOK)
	r.mu.Unlock()
	returned := false
	defer func() {
		if !returned { // f panicked: the write is over; stop is still to come
			r.mu.Lock()
			r.writing = false
			r.mu.Unlock()
		}
	}()
	settled := f(min(writeTimeout, max(left-r.interval, r.interval)))
	returned = true
	r.mu.Lock()
	r.writing = false
	switch {
	case settled:
		r.haltLocked()
	case !r.stopped && !r.armed: // a renewal was skipped or abandoned
		r.timer.Reset(0)
		r.armed = true
	}
	r.mu.Unlock()
}

// haltLocked stops renewal: both timers, and the renewal in flight, which
// is cancelled and no longer counts. r.mu is held.
func (r *renewer) haltLocked() {
	r.stopped = true
	if r.timer.Stop() {
		r.armed = false
	}
	if r.dog != nil && r.dog.Stop() {
		r.dogArmed = false
	}
	if r.abort != nil {
		r.abort()
	}
}

// stop ends renewal without waiting for anything: a renewal in flight is
// cancelled and abandoned (its result discarded), and the renewal events
// not yet handed to the observer are dropped, so that no renewal is sent
// and no renewal event handed to the observer after stop returns.
func (r *renewer) stop() {
	if r == nil {
		return
	}
	r.mu.Lock()
	r.haltLocked()
	r.dropEvents()
	r.mu.Unlock()
}
