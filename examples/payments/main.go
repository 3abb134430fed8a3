// Command payments is the main demo of once: a shop charges orders through a
// fake payment provider that loses responses, answers slowly and is called
// again after the shop restarts, and still every order is charged exactly
// once; a declined card is replayed as the same decline.
//
//	go run ./examples/payments
//
//	go run ./examples/payments -store postgres   # or -store redis
//
// By default the shop's records live in the embedded in-memory store, so a
// restart forgets the buyer's key and only the provider's deduplication (by
// once.DerivedKey("order", id), the same on every attempt of every retry of
// every restart) saves the order. With -store postgres or -store redis a
// restarted shop is a new Keeper over the same durable store: it keeps the
// key and replays the charge without calling the provider again.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/stagedoor/once"
	"github.com/stagedoor/once/backends/memory"
	"github.com/stagedoor/once/examples/internal/exstore"
)

func main() {
	cfg := exstore.RegisterFlags(flag.CommandLine, exstore.Memory)
	flag.Parse()
	cfg.Name, cfg.Drop = exstore.Unique("payments"), true
	if err := run(context.Background(), os.Stdout, *cfg); err != nil {
		fmt.Fprintln(os.Stderr, "payments:", err)
		os.Exit(1)
	}
}

// restart says when the shop restarts during an order.
type restart int

const (
	noRestart restart = iota
	// restartAfterFailure: after a first attempt that got no answer.
	restartAfterFailure
	// restartAfterPaid: after a first attempt that paid, whose response to
	// the buyer was lost; the buyer's browser retries with the same key.
	restartAfterPaid
)

type order struct {
	id      string
	card    string
	fault   fault
	restart restart
	story   string
}

var orders = []order{
	{id: "9b1e4d3a", card: "4242424242424242", fault: dropResponse, story: "the provider charges, then the response is lost"},
	{id: "5c2f7e10", card: "4242424242424242", fault: slowCharge, story: "the provider is slower than the shop's timeout"},
	{id: "e8a0b6c4", card: "4242424242424242", fault: dropResponse, restart: restartAfterFailure, story: "the response is lost and the shop restarts before retrying"},
	{id: "3d6f2b90", card: "4242424242424242", restart: restartAfterPaid, story: "paid, but the shop restarts before the buyer sees the answer; the browser retries"},
	{id: "71d3f9a2", card: declinedCard, story: "the card is declined; the buyer retries anyway"},
}

// run plays every order against the shop on the store of cfg and checks
// the provider's charges.
func run(ctx context.Context, w io.Writer, cfg exstore.Config) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	store, closeStore, err := exstore.Open(ctx, cfg)
	if err != nil {
		return err
	}
	defer closeStore()
	fmt.Fprintln(w, "shop's store:", cfg)
	faults := map[string]fault{}
	for _, o := range orders {
		faults[o.id] = o.fault
	}
	prov := newProvider(faults, 900*time.Millisecond)
	url, err := prov.serve(ctx)
	if err != nil {
		return err
	}
	// A restarted shop is a new Keeper. Over a durable store it sees the
	// keys of the shop before it; over memory it starts empty, as a real
	// process would.
	newKeeper := func() *once.Keeper {
		s := store
		if !cfg.Durable() {
			s = memory.New(nil)
		}
		return once.New(s, once.RegisterError[*decline]("card_declined"))
	}
	shop := newService(newKeeper(), url)
	restartShop := func(why string) {
		fmt.Fprintln(w, "  "+why)
		shop = newService(newKeeper(), url)
	}

	for _, o := range orders {
		fmt.Fprintf(w, "\norder %s: %s\n", o.id, o.story)
		buyerKey := "checkout-" + o.id // made by the buyer's browser at the click
		req := chargeRequest{OrderID: o.id, Amount: 4200, Card: o.card}
		for attempt := 1; attempt <= 10; attempt++ {
			out, err := shop.pay(ctx, "buyer-42", buyerKey, req)
			var d *decline
			switch {
			case err == nil:
				fmt.Fprintf(w, "  attempt %d: paid, charge %s (replayed=%v)\n", attempt, out.Value.ID, out.Replayed)
				if o.restart == restartAfterPaid && attempt == 1 {
					restartShop("the shop restarts before its answer reaches the buyer; the browser retries")
					continue
				}
				if o.restart == restartAfterPaid && !out.Replayed {
					fmt.Fprintf(w, "  the restarted shop forgot the key (memory store); the provider deduplicated %s\n",
						once.DerivedKey("order", o.id))
				}
			case errors.As(err, &d):
				fmt.Fprintf(w, "  attempt %d: declined (%s) (replayed=%v)\n", attempt, d.Code, out.Replayed)
				if !out.Replayed {
					continue // the buyer retries; the decline is replayed, not re-attempted
				}
			default:
				fmt.Fprintf(w, "  attempt %d: %s; retrying\n", attempt, describe(err))
				if o.restart == restartAfterFailure && attempt == 1 {
					restartShop("the shop restarts")
				}
				time.Sleep(250 * time.Millisecond)
				continue
			}
			break
		}
	}

	fmt.Fprintf(w, "\n%-10s %-8s %s\n", "order", "charges", "provider requests")
	bad := 0
	for _, o := range orders {
		charges, attempts := prov.counts(o.id)
		fmt.Fprintf(w, "%-10s %-8d %d\n", o.id, charges, attempts)
		want := 1
		if o.card == declinedCard {
			want = 0
		}
		if charges != want {
			bad++
		}
	}
	if bad > 0 {
		return fmt.Errorf("%d orders charged the wrong number of times", bad)
	}
	fmt.Fprintln(w, "every order charged exactly once; the declined card never")
	return nil
}

func describe(err error) string {
	var inProgress *once.InProgressError
	switch {
	case errors.As(err, &inProgress):
		return "409 in progress at the shop"
	case errors.Is(err, errProviderBusy):
		return "provider says 409 in progress"
	case errors.Is(err, context.DeadlineExceeded) || os.IsTimeout(err):
		return "timed out waiting for the provider"
	default:
		return "no response from the provider (" + shortErr(err) + ")"
	}
}

func shortErr(err error) string {
	s := err.Error()
	if len(s) > 60 {
		s = s[len(s)-60:]
	}
	return s
}
