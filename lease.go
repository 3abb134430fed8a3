package once

import (
	"context"
	"sync"
	"time"

	"github.com/stagedoor/once/backends"
)

// renewer keeps a claim's lease alive while fn runs, renewing it about
// every third of the lease. It cancels fn's context with cause ErrLeaseLost
// when the store reports the claim lost, or when renewals have failed for
// so long that the lease may lapse before the next attempt: once fails
// closed rather than let fn run on a claim it may no longer hold.
//
// It runs on a timer (time.AfterFunc), so a short fn costs no goroutine.
// A nil *renewer does nothing.
type renewer struct {
	ctx      context.Context
	store    backends.Store
	cfg      *config
	params   backends.RenewParams
	interval time.Duration
	cancel   context.CancelCauseFunc

	mu      sync.Mutex
	timer   *time.Timer
	stopped bool
	lastOK  time.Time
}

func startRenewer(ctx context.Context, store backends.Store, cfg *config, p backends.RenewParams, cancel context.CancelCauseFunc) *renewer {
	r := &renewer{
		ctx: ctx, store: store, cfg: cfg, params: p, cancel: cancel,
		interval: max(p.Lease/3, time.Millisecond),
		lastOK:   time.Now(),
	}
	r.mu.Lock()
	r.timer = time.AfterFunc(r.interval, r.renew)
	r.mu.Unlock()
	return r
}

func (r *renewer) renew() {
	r.mu.Lock()
	if r.stopped {
		r.mu.Unlock()
		return
	}
	r.mu.Unlock()

	sent := time.Now()
	ctx, done := context.WithTimeout(r.ctx, r.interval)
	ok, err := r.store.Renew(ctx, r.params)
	done()

	r.mu.Lock()
	defer r.mu.Unlock()
	if r.stopped {
		return
	}
	e := Event{Scope: r.params.Scope, Key: r.params.Key, Duration: r.cfg.since(sent)}
	switch {
	case err == nil && ok:
		r.lastOK = sent
		e.Kind = EventRenewed
		r.cfg.emit(r.ctx, e)
	case err == nil && !ok:
		r.lose(e)
		return
	default:
		e.Kind, e.Op, e.Err = EventStoreError, "renew", err
		r.cfg.emit(r.ctx, e)
		if time.Since(r.lastOK) >= r.params.Lease-r.interval {
			r.lose(e)
			return
		}
	}
	r.timer.Reset(r.interval)
}

// lose stops renewal and cancels fn. The caller holds r.mu.
func (r *renewer) lose(e Event) {
	r.stopped = true
	r.cancel(ErrLeaseLost)
	e.Kind, e.Op, e.Err = EventLeaseLost, "", ErrLeaseLost
	r.cfg.emit(r.ctx, e)
}

// stop ends renewal; an attempt in flight finishes without effect on fn.
func (r *renewer) stop() {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.stopped = true
	r.timer.Stop()
}
