package faults

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/stagedoor/once"
	"github.com/stagedoor/once/backends/postgres"
)

// callFunc makes one Do call for key and reports its answer.
type callFunc func(ctx context.Context, key string) (value string, replayed bool, err error)

// runner is a client: it calls Do for each of its keys, in random order,
// until every key got an answer, and logs each acknowledged answer. A key
// that gets an error (in progress, store failure, lease lost, outcome
// unrecorded) goes to the back of the queue: the client retries it.
type runner struct {
	id       string
	keys     []string
	call     callFunc
	trig     *trigger
	emit     func(event)
	perCall  time.Duration
	deadline time.Time
	pid      int
}

// run returns the number of keys left without an answer at the deadline.
func (r *runner) run() int {
	queue := append([]string(nil), r.keys...)
	rand.Shuffle(len(queue), func(i, j int) { queue[i], queue[j] = queue[j], queue[i] })
	for len(queue) > 0 && time.Now().Before(r.deadline) {
		key := queue[0]
		queue = queue[1:]
		r.trig.begin(key)
		ctx, cancel := context.WithTimeout(context.Background(), r.perCall)
		v, replayed, err := r.call(ctx, key)
		cancel()
		if err == nil {
			r.emit(event{Ev: "ack", Key: key, Value: v, Worker: r.id, Pid: r.pid, Replayed: replayed})
			continue
		}
		queue = append(queue, key)
		kind := errKind(err)
		if kind == "in_progress" {
			time.Sleep(5 * time.Millisecond)
			continue
		}
		r.emit(event{Ev: "err", Key: key, Kind: kind, Worker: r.id, Pid: r.pid})
		if kind == "held" {
			continue // the next key, as a client told "held" does
		}
		time.Sleep(20 * time.Millisecond)
	}
	r.emit(event{Ev: "done", Worker: r.id, Pid: r.pid, Left: len(queue)})
	return len(queue)
}

// errKind names the class of a Do error for the summary.
func errKind(err error) string {
	var pgErr *postgres.Error
	switch {
	case errors.Is(err, once.ErrInProgress):
		return "in_progress"
	case errors.Is(err, errNoAnswer):
		return "held" // fn's own held error (see heldFn)
	case errors.Is(err, once.ErrLeaseLost):
		return "lease_lost"
	case errors.Is(err, once.ErrOutcomeUnrecorded):
		return "unrecorded"
	case errors.As(err, new(*once.StoreError)):
		return "store"
	case errors.As(err, &pgErr):
		return "pg_" + pgErr.Op
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return "timeout"
	default:
		return "fn" // the effect itself failed (its connection was cut)
	}
}

// effectFn is fn: it passes the failpoints and makes the effect through q
// (nil: the ledger's own pool). Its value names the execution.
func effectFn(l ledger, trig *trigger, self string, pid int, seq *atomic.Int64, key string, q querier) func(context.Context) (string, error) {
	return func(ctx context.Context) (string, error) {
		trig.exec()
		trig.hit(pointAfterClaim, key)
		value := fmt.Sprintf("%s/%d", self, seq.Add(1))
		trig.hit(pointBeforeEffect, key)
		if err := ctx.Err(); err != nil {
			return "", err
		}
		got, err := l.apply(ctx, q, key, value, self, pid)
		if err != nil {
			return "", err
		}
		trig.hit(pointAfterEffect, key)
		return got, nil
	}
}

// plainCall is once.DoOutcome with the effect in fn.
func plainCall(scope once.Scope, l ledger, trig *trigger, self string, pid int) callFunc {
	var seq atomic.Int64
	return func(ctx context.Context, key string) (string, bool, error) {
		out, err := once.DoOutcome(ctx, scope, key, nil, effectFn(l, trig, self, pid, &seq, key, nil))
		return out.Value, out.Status == once.Replayed, err
	}
}

// txCall is once.DoTx with the effect in the transaction.
func txCall(store *postgres.Store, scope once.Scope, l *pgLedger, trig *trigger, self string, pid int) callFunc {
	var seq atomic.Int64
	return func(ctx context.Context, key string) (string, bool, error) {
		v, err := once.DoTx(ctx, scope, key, nil, hookedBegin(store, trig, key),
			func(ctx context.Context, tx pgx.Tx) (string, error) {
				return effectFn(l, trig, self, pid, &seq, key, tx)(ctx)
			})
		return v, false, err
	}
}
