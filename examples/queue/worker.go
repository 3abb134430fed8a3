package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/stagedoor/once"
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

// handle bills the entry's order once and acknowledges the entry. The key
// is the order's business id, not the entry ID, so the producer's duplicate
// XADD of an order is deduplicated too.
func (w *worker) handle(ctx context.Context, m redis.XMessage, reclaimed bool) {
	orderID, _ := m.Values["order"].(string)
	amount, _ := m.Values["amount"].(string)
	how := "delivered"
	if reclaimed {
		how = "reclaimed"
	}
	var tookOver bool
	out, err := once.DoOutcome(context.WithValue(ctx, tookOverKey{}, &tookOver), w.scope, orderID,
		hashers.Strings(orderID, amount), func(ctx context.Context) (string, error) {
			if w.Crash == crashInWork {
				w.crash(ctx, m, orderID, "claimed, working, nothing billed yet")
			}
			select {
			case <-time.After(w.Work):
			case <-ctx.Done():
				return "", ctx.Err()
			}
			if err := w.ledger.bill(ctx, orderID); err != nil {
				return "", err
			}
			return "billed by " + w.Name, nil
		})
	if err != nil {
		// Not acknowledged: the entry stays pending and is reclaimed later.
		fmt.Fprintf(w.out, "%s: %s %s (%s): not acked, left pending: %v\n", w.Name, how, orderID, m.ID, err)
		return
	}
	if w.Crash == crashBeforeAck {
		w.crash(ctx, m, orderID, "billed and recorded, XACK not sent")
	}
	if err := w.client.XAck(ctx, w.Stream, w.Group, m.ID).Err(); err != nil {
		fmt.Fprintf(w.out, "%s: %s %s (%s): ack failed: %v\n", w.Name, how, orderID, m.ID, err)
		return
	}
	what := "billed"
	switch {
	case out.Replayed:
		what = "replayed (" + out.Value + "), not billed again"
	case tookOver:
		what = "took over the dead worker's claim after its lease, billed"
	}
	fmt.Fprintf(w.out, "%s: %s %s (%s): %s; acked\n", w.Name, how, orderID, m.ID, what)
}

// crash announces the crash point and hangs there until the coordinator
// kills the process with SIGKILL. If the worker is stopped instead (the
// coordinator gave up), it exits without another write.
func (w *worker) crash(ctx context.Context, m redis.XMessage, orderID, state string) {
	fmt.Fprintf(w.out, "crash %s: %s (%s) %s\n", w.Name, orderID, m.ID, state)
	<-ctx.Done()
	os.Exit(3)
}
