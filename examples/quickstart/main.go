// Command quickstart shows the double charge and its fix: the buyer's
// browser sends POST /orders twice with one Idempotency-Key, a third time
// while the first is still running, and once with the same key on another
// order. The card is charged once.
//
//	go run ./examples/quickstart                    # embedded memory store
//	go run ./examples/quickstart -store postgres    # or -store redis
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"sync/atomic"
	"time"

	"github.com/stagedoor/once"
	"github.com/stagedoor/once/examples/internal/exstore"
)

type receipt struct {
	OrderID string `json:"order_id"`
	Amount  int    `json:"amount"`
}

func main() {
	cfg := exstore.RegisterFlags(flag.CommandLine, exstore.Memory)
	flag.Parse()
	cfg.Name, cfg.Drop = exstore.Unique("quickstart"), true
	if err := run(context.Background(), os.Stdout, *cfg); err != nil {
		fmt.Fprintln(os.Stderr, "quickstart:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, w io.Writer, cfg exstore.Config) error {
	store, closeStore, err := exstore.Open(ctx, cfg)
	if err != nil {
		return err
	}
	defer closeStore()
	fmt.Fprintln(w, "store:", cfg)
	k := once.New(store)
	buyer := k.Scope("buyer-42")
	var charges atomic.Int32

	calling := make(chan struct{})
	placeOrder := func(ctx context.Context) (receipt, error) {
		if charges.Add(1) == 1 {
			close(calling)
		}
		time.Sleep(200 * time.Millisecond) // the call to the payment provider
		return receipt{OrderID: "9b1e4d3a", Amount: 4200}, nil
	}
	const key = "7f3a9c2e-5b1d-4e8a-9f60-2c4d8e1b7a05"
	request := once.Fingerprint("POST /orders {hold_ids:[88211,88212]}")

	type result struct {
		out once.Outcome[receipt]
		err error
	}
	first := make(chan result, 1)
	go func() {
		out, err := once.DoOutcome(ctx, buyer, key, request, placeOrder)
		first <- result{out, err}
	}()

	<-calling // request 1 is at the payment provider
	_, err = once.Do(ctx, buyer, key, request, placeOrder)
	var inProgress *once.InProgressError
	if !errors.As(err, &inProgress) {
		return fmt.Errorf("request 2: want in progress, got %v", err)
	}
	fmt.Fprintf(w, "request 2 (while 1 runs): 409 Conflict, Retry-After %s\n", inProgress.RetryAfter)

	r := <-first
	if r.err != nil {
		return r.err
	}
	fmt.Fprintf(w, "request 1: 201 Created, order %s, replayed=%v\n", r.out.Value.OrderID, r.out.Status == once.Replayed)

	out, err := once.DoOutcome(ctx, buyer, key, request, placeOrder)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "request 3 (browser retry): 201 Created, order %s, replayed=%v\n", out.Value.OrderID, out.Status == once.Replayed)

	_, err = once.Do(ctx, buyer, key, once.Fingerprint("POST /orders {hold_ids:[99999]}"), placeOrder)
	if !errors.Is(err, once.ErrKeyReused) {
		return fmt.Errorf("request 4: want key reused, got %v", err)
	}
	fmt.Fprintln(w, "request 4 (same key, other order): 422 Unprocessable Content")

	fmt.Fprintf(w, "payment provider calls for order 9b1e4d3a: %d\n", charges.Load())
	fmt.Fprintf(w, "key sent to the provider: %s\n", once.DerivedKey("order", "9b1e4d3a"))
	if charges.Load() != 1 {
		return fmt.Errorf("charged %d times", charges.Load())
	}
	return nil
}
