package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"github.com/stagedoor/once"
	"github.com/stagedoor/once/backends/postgres"
	"github.com/stagedoor/once/consume"
	"github.com/stagedoor/once/examples/internal/exstore"
	"github.com/stagedoor/once/hashers"
)

// worker is one consumer of the group, in its own process: it reads new
// entries with XREADGROUP, reclaims entries that another consumer left
// pending for longer than MinIdle with XAUTOCLAIM, bills each order once
// through once.Do and acknowledges the entry after Do returns.
type worker struct {
	spec
	client *redis.Client
	scope  once.Scope
	ledger ledger
	out    io.Writer
	pg     *postgres.Store // the transactional path, with -store postgres
	pool   *pgxpool.Pool
}

type tookOverKey struct{}

// runWorker runs the worker of s until ctx ends.
func runWorker(ctx context.Context, s spec, out io.Writer) error {
	client, err := exstore.OpenClient(ctx, s.Store.RedisAddr)
	if err != nil {
		return err
	}
	defer client.Close()
	store, closeStore, err := exstore.Open(ctx, s.Store)
	if err != nil {
		return err
	}
	defer closeStore()
	l, pool, err := openLedger(ctx, s.Store, client)
	if err != nil {
		return err
	}
	if pool != nil {
		defer pool.Close()
	}
	// The observer tells a takeover of a dead worker's claim from a first
	// claim, for the log line.
	k := once.New(store, once.WithLease(s.Lease), once.WithObserver(func(ctx context.Context, e once.Event) {
		if p, ok := ctx.Value(tookOverKey{}).(*bool); ok && e.Kind == once.EventClaimed && e.TookOver {
			*p = true
		}
	}))
	w := &worker{
		spec:   s,
		client: client,
		// A reclaimed entry whose key is still claimed by a dead worker
		// waits for the lease to end, then takes the key over.
		scope:  k.Scope(s.Group).With(once.WithWait(s.Lease + time.Second)),
		ledger: l,
		out:    out,
	}
	if pg, ok := store.(*postgres.Store); ok {
		w.pg, w.pool = pg, pool
	}
	fmt.Fprintf(out, "ready %s\n", s.Name)
	for ctx.Err() == nil {
		reclaimed, _, err := client.XAutoClaim(ctx, &redis.XAutoClaimArgs{
			Stream: s.Stream, Group: s.Group, Consumer: s.Name, MinIdle: s.MinIdle, Start: "0-0", Count: 10,
		}).Result()
		if err != nil && ctx.Err() == nil {
			return fmt.Errorf("xautoclaim: %w", err)
		}
		for _, m := range reclaimed {
			w.handle(ctx, m, true)
		}
		streams, err := client.XReadGroup(ctx, &redis.XReadGroupArgs{
			Group: s.Group, Consumer: s.Name, Streams: []string{s.Stream, ">"}, Count: 1, Block: 100 * time.Millisecond,
		}).Result()
		if err != nil && !errors.Is(err, redis.Nil) && ctx.Err() == nil {
			return fmt.Errorf("xreadgroup: %w", err)
		}
		for _, st := range streams {
			for _, m := range st.Messages {
				w.handle(ctx, m, false)
			}
		}
	}
	return nil
}

// handle bills the entry's order once and settles the entry as
// consume.Do decides: Ack → XACK; RetryLater → left pending, for
// XAUTOCLAIM to reclaim after MinIdle; DeadLetter → XADD to the
// dead-letter stream, then XACK. The key is the order's business id, not
// the entry ID, so the producer's duplicate XADD of an order is
// deduplicated too.
func (w *worker) handle(ctx context.Context, m redis.XMessage, reclaimed bool) {
	orderID, _ := m.Values["order"].(string)
	amount, _ := m.Values["amount"].(string)
	how := "delivered"
	if reclaimed {
		how = "reclaimed"
	}
	label := orderID
	if label == "" {
		label = "an entry without an order id"
	}
	var tookOver bool
	ctx = context.WithValue(ctx, tookOverKey{}, &tookOver)
	billedBy, d := w.consume(ctx, m, orderID, hashers.Strings(orderID, amount))
	if d.Action == consume.RetryLater {
		// Not acknowledged: the entry stays pending and is reclaimed later.
		fmt.Fprintf(w.out, "%s: %s %s (%s): %s, left pending: %v\n", w.Name, how, label, m.ID, d, d.Err)
		return
	}
	if w.Crash == crashBeforeAck && d.Reason == consume.ReasonDone {
		w.crash(ctx, m, orderID, "billed and recorded, XACK not sent")
	}
	if d.Action == consume.DeadLetter {
		if err := w.client.XAdd(ctx, &redis.XAddArgs{Stream: w.DeadLetters, Values: []any{
			"entry", m.ID, "order", orderID, "reason", string(d.Reason),
		}}).Err(); err != nil {
			fmt.Fprintf(w.out, "%s: %s %s (%s): dead-letter failed, left pending: %v\n", w.Name, how, label, m.ID, err)
			return
		}
	}
	if err := w.client.XAck(ctx, w.Stream, w.Group, m.ID).Err(); err != nil {
		fmt.Fprintf(w.out, "%s: %s %s (%s): ack failed: %v\n", w.Name, how, label, m.ID, err)
		return
	}
	what := "billed"
	switch {
	case d.Action == consume.DeadLetter:
		what = "dead-lettered (" + string(d.Reason) + ")"
	case d.Reason == consume.ReasonReplayed && d.Err == nil:
		what = "replayed (" + billedBy + "), not billed again"
	case d.Reason == consume.ReasonReplayed:
		what = "replayed final error (" + d.Err.Error() + "), not billed again"
	case d.Reason == consume.ReasonDone && d.Err != nil:
		what = "refused (" + d.Err.Error() + ")"
	case tookOver:
		what = "took over the dead worker's claim after its lease, billed"
	}
	fmt.Fprintf(w.out, "%s: %s %s (%s): %s; acked\n", w.Name, how, label, m.ID, what)
}

// consume runs the bill under consume.Do. With PostgreSQL the bill is
// written in the transaction of the claim (consume.ValueTx over the
// store's BeginTx, the mechanism of once.DoTx): a worker killed between the
// bill and the commit leaves neither, and the reclaimed entry bills once.
// With Redis the bill and the outcome are separate writes.
func (w *worker) consume(ctx context.Context, m redis.XMessage, orderID string, fp once.Fingerprint) (string, consume.Decision) {
	work := func(ctx context.Context) error {
		if w.Crash == crashInWork {
			w.crash(ctx, m, orderID, "claimed, working, nothing billed yet")
		}
		select {
		case <-time.After(w.Work):
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	if w.pg == nil {
		return consume.Value(ctx, w.scope, orderID, fp, func(ctx context.Context) (string, error) {
			if err := work(ctx); err != nil {
				return "", err
			}
			if err := w.ledger.bill(ctx, orderID); err != nil {
				return "", err
			}
			return "billed by " + w.Name, nil
		})
	}
	return consume.ValueTx(ctx, w.scope, orderID, fp, w.pg.BeginTx, func(ctx context.Context, tx pgx.Tx) (string, error) {
		if err := work(ctx); err != nil {
			return "", err
		}
		if err := w.ledger.(pgLedger).billTx(ctx, tx, orderID); err != nil {
			return "", err
		}
		if w.Crash == crashAfterBill {
			w.crash(ctx, m, orderID, "billed in the transaction, not committed")
		}
		return "billed by " + w.Name, nil
	})
}

// crash announces the crash point and hangs there until the coordinator
// kills the process with SIGKILL. If the worker is stopped instead (the
// coordinator gave up), it exits without another write.
func (w *worker) crash(ctx context.Context, m redis.XMessage, orderID, state string) {
	fmt.Fprintf(w.out, "crash %s: %s (%s) %s\n", w.Name, orderID, m.ID, state)
	<-ctx.Done()
	os.Exit(3)
}
