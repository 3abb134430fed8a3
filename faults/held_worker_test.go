package faults

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/stagedoor/once"
	"github.com/stagedoor/once/reconcile"
)

// Worker roles of the held-key scenarios.
const (
	// roleHeldOwner calls Do with heldFn: the provider's first answer for
	// a key is lost, so fn returns a held error and the key is held.
	roleHeldOwner = "held-owner"
	// roleReconciler runs a reconcile.Job over the held keys until SIGTERM,
	// asking the provider (the ledger) what happened.
	roleReconciler = "reconciler"
)

// verdictPrefix starts the value a reconciler stores: "verdict:" and the
// provider's value, so that the checker can tell a verdict from a
// completion by Do.
const verdictPrefix = "verdict:"

// errNoAnswer is heldFn's held error: the provider's answer was lost.
var errNoAnswer = errors.New("provider: no answer")

// provider is the downstream service of held owners: it keeps the first
// value per key (a fenced effect) and answers a reconciler's question.
type provider interface {
	// provide makes the effect for key and returns the first value made
	// for it with the number of calls it got for key, this one included.
	provide(ctx context.Context, key, value, worker string, pid int) (got string, calls int, err error)
	// lookup returns the value of the effect made for key, if any.
	lookup(ctx context.Context, key string) (value string, ok bool, err error)
}

// heldFn is fn of a held owner. It calls the fenced provider (the ledger,
// deduplicating by key); on the provider's first call for the key it
// returns a held error, as fn does when its request left but the answer
// did not come back; on a later call (after the hold ended, or a takeover)
// it returns the provider's answer.
func heldFn(l provider, trig *trigger, self string, pid int, seq *atomic.Int64, key string) func(context.Context) (string, error) {
	return func(ctx context.Context) (string, error) {
		trig.exec()
		trig.hit(pointAfterClaim, key)
		value := fmt.Sprintf("%s/%d", self, seq.Add(1))
		got, calls, err := l.provide(ctx, key, value, self, pid)
		if err != nil {
			return "", err
		}
		if calls == 1 {
			return "", once.Hold(fmt.Errorf("%w to %s", errNoAnswer, value))
		}
		return got, nil
	}
}

// heldCall is once.DoOutcome with heldFn.
func heldCall(scope once.Scope, l provider, trig *trigger, self string, pid int) callFunc {
	var seq atomic.Int64
	return func(ctx context.Context, key string) (string, bool, error) {
		out, err := once.DoOutcome(ctx, scope, key, nil, heldFn(l, trig, self, pid, &seq, key))
		return out.Value, out.Status == once.Replayed, err
	}
}

// reconcilerMain is a reconciler process: Pass after Pass over the held
// keys until SIGTERM, a store error followed by a short pause and the next
// Pass. Each verdict it stores is logged as an "ack" with Verdict set.
func reconcilerMain(cfg workerConfig, hooked hookedStore, opts []once.Option, l provider, emit func(event), pid int) int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	var verdicts sync.Map // key -> the value of the verdict asked for it
	hooked.resolved = func(key string) {
		v, _ := verdicts.Load(key)
		value, _ := v.(string)
		emit(event{Ev: "ack", Key: key, Value: value, Worker: cfg.ID, Pid: pid, Verdict: true})
	}
	rec, err := newReconciler(once.New(hooked, opts...), lookupVerdict(l, hooked.trig, &verdicts), cfg.Scope, time.Duration(cfg.ReconcileLeaseMS)*time.Millisecond)
	if err != nil {
		fmt.Fprintln(os.Stderr, "reconciler:", err)
		return 2
	}
	for ctx.Err() == nil {
		rep, err := rec.Pass(ctx)
		switch {
		case err != nil && ctx.Err() == nil:
			emit(event{Ev: "err", Kind: errKind(err), Worker: cfg.ID, Pid: pid})
			sleepCtx(ctx, 50*time.Millisecond)
		case rep.Done && rep.Examined == 0:
			sleepCtx(ctx, 10*time.Millisecond)
		}
	}
	emit(event{Ev: "done", Worker: cfg.ID, Pid: pid})
	return 0
}

// lookupVerdict is a reconciler's Check: it asks the provider and
// settles the key with verdictPrefix and the provider's value, noted in
// verdicts, when the provider made the effect, or leaves it held.
func lookupVerdict(l provider, trig *trigger, verdicts *sync.Map) reconcile.Check[string] {
	return func(ctx context.Context, k reconcile.HeldKey) (reconcile.Verdict[string], error) {
		trig.begin(k.Key)
		trig.exec()
		trig.hit(pointLookup, k.Key)
		v, ok, err := l.lookup(ctx, k.Key)
		if err != nil || !ok {
			return reconcile.Verdict[string]{}, err
		}
		verdicts.Store(k.Key, verdictPrefix+v)
		return reconcile.Verdict[string]{Settled: true, Value: verdictPrefix + v}, nil
	}
}

// newReconciler is the one place that builds a reconcile.Job.
func newReconciler(k *once.Keeper, check reconcile.Check[string], scope string, lease time.Duration) (*reconcile.Job[string], error) {
	return reconcile.New(k, check, reconcile.Config{Scope: scope, Lease: lease, Batch: 25})
}
