// Command payments is the main demo of once: a shop charges orders through a
// fake payment provider that loses responses, answers slowly and is called
// again after the shop restarts, and still every order is charged exactly
// once; a declined card is replayed as the same decline.
//
//	go run ./examples/payments
//
// It runs on the embedded in-memory store. The provider deduplicates by the
// key the shop sends, once.DerivedKey("order", id), which is the same on
// every attempt of every retry of every restart.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/stagedoor/once"
)

func main() {
	if err := run(context.Background(), os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "payments:", err)
		os.Exit(1)
	}
}

type order struct {
	id      string
	card    string
	fault   fault
	restart bool // the shop restarts after the first attempt
	story   string
}

var orders = []order{
	{id: "9b1e4d3a", card: "4242424242424242", fault: dropResponse, story: "the provider charges, then the response is lost"},
	{id: "5c2f7e10", card: "4242424242424242", fault: slowCharge, story: "the provider is slower than the shop's timeout"},
	{id: "e8a0b6c4", card: "4242424242424242", fault: dropResponse, restart: true, story: "the response is lost and the shop restarts before retrying"},
	{id: "71d3f9a2", card: declinedCard, story: "the card is declined; the buyer retries anyway"},
}

func run(ctx context.Context, w io.Writer) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	faults := map[string]fault{}
	for _, o := range orders {
		faults[o.id] = o.fault
	}
	prov := newProvider(faults, 900*time.Millisecond)
	url, err := prov.serve(ctx)
	if err != nil {
		return err
	}
	newKeeper := func() *once.Keeper { return once.New(nil, once.RegisterError[*decline]("card_declined")) }
	shop := newService(newKeeper(), url)

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
			case errors.As(err, &d):
				fmt.Fprintf(w, "  attempt %d: declined (%s) (replayed=%v)\n", attempt, d.Code, out.Replayed)
				if !out.Replayed {
					continue // the buyer retries; the decline is replayed, not re-attempted
				}
			default:
				fmt.Fprintf(w, "  attempt %d: %s; retrying\n", attempt, describe(err))
				if o.restart && attempt == 1 {
					fmt.Fprintln(w, "  the shop restarts")
					shop = newService(newKeeper(), url)
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
