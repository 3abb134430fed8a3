// Command payments is the main demo of once: a shop charges orders through a
// fake payment provider that loses responses, answers slowly, gets a
// double click and is called again after the shop restarts, and still every
// order is charged exactly once; a declined card is replayed as the same
// decline. The shop calls the provider through oncehttp.Transport, which
// resends a charge that got no answer with the same Idempotency-Key,
// once.DerivedKey("order", id); each resend is printed. Each answer the
// buyer gets says whether it was a replay (Idempotent-Replayed) and which
// layer deduplicated it: the shop's once.Do on the buyer's key, or the
// provider's own deduplication of the DerivedKey the shop sends it.
//
// Then the held payments (see held.go): the provider goes down while the
// shop charges, so the charge's outcome is unknown. The shop holds the
// buyer's key (once.Hold); the buyer's retries, over HTTP, get 409 with a
// Retry-After of the hold left; the shop's reconcile.Job asks the
// provider by the DerivedKey what it did and resolves the key with the
// charge it finds, so the next retry gets the 201, replayed; when the
// provider made no charge, the key stays held and the retry after the hold
// charges once.
//
// Then the steps (see steps.go): the order is three steps, the stock hold
// and the charge as once.Step (each with its DerivedKey) and the order row
// as once.StepTx, committed with its checkpoint. The shop runs in a
// process of its own, which the demo kills with SIGKILL mid-order and
// starts again for the buyer's retry. Killed after the charge's
// checkpoint, the new shop replays the hold and the charge and only
// writes the row: the provider is not called again. Killed after the
// provider charged but before the checkpoint, the new shop sends the
// charge again and the provider replays it by its DerivedKey. A table
// counts each step's runs, replays and effects: one hold, one charge, one
// row per order. A killed process keeps nothing in memory, so this part
// runs on SQLite unless -store names a durable store; on Redis, which has
// no SQL table for a StepTx, the row is a once.Step into a table in the
// shop's process.
//
//	go run ./examples/payments
//	go run ./examples/payments -held             # the held payments only
//	go run ./examples/payments -steps            # the steps only
//
//	go run ./examples/payments -store postgres   # or redis, sqlite, mysql
//
// By default the shop's records live in the embedded in-memory store, so a
// restart forgets the buyer's key and only the provider's deduplication (by
// once.DerivedKey("order", id), the same on every attempt of every retry of
// every restart) saves the order. With -store postgres, redis, sqlite or
// mysql a restarted shop is a new Keeper over the same durable store: it
// keeps the key and replays the charge without calling the provider again.
// The held payments run on every store: each keeps the held state and
// lists it for the reconcile.Job (backends.Lister).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/stagedoor/once"
	"github.com/stagedoor/once/backends"
	"github.com/stagedoor/once/backends/memory"
	"github.com/stagedoor/once/examples/internal/exstore"
	"github.com/stagedoor/once/oncehttp"
)

func main() {
	if job := os.Getenv(shopEnv); job != "" {
		os.Exit(shopMain(job)) // a shop process of the steps part
	}
	cfg := exstore.RegisterFlags(flag.CommandLine, exstore.Memory)
	heldOnly := flag.Bool("held", false, "play the held payments only")
	stepsOnly := flag.Bool("steps", false, "play the steps (a shop process killed mid-order) only")
	flag.Parse()
	cfg.Name, cfg.Drop = exstore.Unique("payments"), true
	play := run
	switch {
	case *heldOnly:
		play = runHeld
	case *stepsOnly:
		play = func(ctx context.Context, w io.Writer, cfg exstore.Config) error {
			_, err := runSteps(ctx, w, cfg)
			return err
		}
	}
	if err := play(context.Background(), os.Stdout, *cfg); err != nil {
		fmt.Fprintln(os.Stderr, "payments:", err)
		os.Exit(1)
	}
}

// restart says when the shop restarts during an order; the zero value: never.
type restart int

const (
	// restartMidRetry: the shop shuts down (a deploy) while its client
	// waits to resend a charge that got no answer, and restarts.
	restartMidRetry restart = iota + 1
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
	{id: "9b1e4d3a", card: "4242424242424242", fault: dropResponse, story: "the provider charges, then its response is lost"},
	{id: "5c2f7e10", card: "4242424242424242", fault: slowCharge, story: "the provider is slower than the shop's timeout"},
	{id: "c4a19e07", card: "4242424242424242", fault: holdCharge, story: "the buyer double-clicks: a second request while the first is being charged"},
	{id: "e8a0b6c4", card: "4242424242424242", fault: dropResponse, restart: restartMidRetry, story: "the response is lost and the shop restarts before its client resends the charge"},
	{id: "3d6f2b90", card: "4242424242424242", restart: restartAfterPaid, story: "paid, but the shop restarts before the buyer sees the answer; the browser retries"},
	{id: "71d3f9a2", card: declinedCard, story: "the card is declined; the buyer retries anyway"},
}

// buyerKeyOf is the Idempotency-Key the buyer's browser makes for an order
// at the click and sends with every retry.
func buyerKeyOf(orderID string) string { return "checkout-" + orderID }

// run plays every order against the shop on the store of cfg, then the
// held payments (see playHeld), then the steps (see runSteps), and checks
// the provider's charges.
func run(ctx context.Context, w io.Writer, cfg exstore.Config) error {
	if err := runOrders(ctx, w, cfg); err != nil {
		return err
	}
	_, err := runSteps(ctx, w, cfg)
	return err
}

// runOrders plays every order, then the held payments.
func runOrders(ctx context.Context, w io.Writer, cfg exstore.Config) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	d, err := openDemo(ctx, w, cfg)
	if err != nil {
		return err
	}
	defer d.close()
	if err := d.playOrders(ctx); err != nil {
		return err
	}
	_, err = d.playHeld(ctx)
	return err
}

// runHeld plays the held payments alone on the store of cfg.
func runHeld(ctx context.Context, w io.Writer, cfg exstore.Config) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	d, err := openDemo(ctx, w, cfg)
	if err != nil {
		return err
	}
	defer d.close()
	_, err = d.playHeld(ctx)
	return err
}

// demo is the shop's world: its store, the provider, and the hooks that
// print the shop's client's resends.
type demo struct {
	w     io.Writer
	cfg   exstore.Config
	store backends.Store
	close func()
	prov  *provider
	url   string // the provider's

	mu       sync.Mutex
	resends  map[string]int     // by provider key
	shutdown context.CancelFunc // when set, the shop's shutdown during the next resend
}

// openDemo opens the store of cfg and starts the provider, until ctx
// ends; close closes the store.
func openDemo(ctx context.Context, w io.Writer, cfg exstore.Config) (*demo, error) {
	store, closeStore, err := exstore.Open(ctx, cfg)
	if err != nil {
		return nil, err
	}
	fmt.Fprintln(w, "shop's store:", cfg)
	faults := map[string]fault{}
	for _, o := range orders {
		faults[o.id] = o.fault
	}
	for _, o := range heldOrders {
		faults[o.id] = o.fault
	}
	prov := newProvider(faults, 900*time.Millisecond)
	url, err := prov.serve(ctx)
	if err != nil {
		closeStore()
		return nil, err
	}
	return &demo{w: w, cfg: cfg, store: store, close: closeStore, prov: prov, url: url, resends: map[string]int{}}, nil
}

// newKeeper returns the Keeper of a (re)started shop. Over a durable store
// it sees the keys of the shop before it; over memory it starts empty, as a
// real process would.
func (d *demo) newKeeper() *once.Keeper {
	s := d.store
	if !d.cfg.Durable() {
		s = memory.New(nil)
	}
	return once.New(s, once.RegisterError[*decline]("card_declined"), once.WithHoldFor(holdFor))
}

// onRetry hears of each retry of the shop's oncehttp.Transport: it prints
// and counts it, and shuts the shop down when d.shutdown is set.
func (d *demo) onRetry(r oncehttp.Retry) {
	d.mu.Lock()
	d.resends[r.Key]++
	stop := d.shutdown
	d.shutdown = nil
	d.mu.Unlock()
	fmt.Fprintf(d.w, "  the shop's client: %s; it resends the charge with the same Idempotency-Key %s\n", retryReason(r), r.Key)
	if stop != nil {
		fmt.Fprintln(d.w, "  the shop shuts down (a deploy) before the resend: once.Do releases "+buyerKeyOfKey(r.Key))
		stop()
	}
}

func (d *demo) resent(providerKey string) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.resends[providerKey]
}

// playOrders plays every order of orders against the shop and checks the
// provider's charges.
func (d *demo) playOrders(ctx context.Context) error {
	w, prov := d.w, d.prov
	shop := newService(d.newKeeper(), d.url, d.onRetry)
	restartShop := func(why string) {
		fmt.Fprintln(w, "  "+why)
		shop = newService(d.newKeeper(), d.url, d.onRetry)
	}

	tallies := map[string]*tally{}
	for _, o := range orders {
		t := &tally{}
		tallies[o.id] = t
		fmt.Fprintf(w, "\norder %s: %s\n", o.id, o.story)
		req := chargeRequest{OrderID: o.id, Amount: 4200, Card: o.card}
		pay := func(ctx context.Context, n int) answer {
			a := shop.pay(ctx, "buyer-42", buyerKeyOf(o.id), req)
			fmt.Fprintln(w, a.describe(n, o))
			t.add(a)
			return a
		}
		n := 1
		if o.fault == holdCharge {
			n = doubleClick(ctx, w, shop, prov, o, req, t)
		}
		for settled := false; n <= 12; n++ {
			callCtx, stop := context.WithCancel(ctx)
			if o.restart == restartMidRetry && n == 1 {
				d.mu.Lock()
				d.shutdown = stop
				d.mu.Unlock()
			}
			a := pay(callCtx, n)
			stop()
			if settled {
				break // the re-send after the final answer
			}
			var dec *decline
			switch {
			case a.Err == nil && o.restart == restartAfterPaid && n == 1:
				restartShop("the shop restarts before its answer reaches the buyer; the browser retries")
			case a.Err == nil:
				settled = true
				fmt.Fprintln(w, "  the buyer's browser sends the order once more (a reload)")
			case errors.As(a.Err, &dec):
				settled = true
			default:
				if o.restart == restartMidRetry && n == 1 {
					restartShop("the shop restarts")
				}
				time.Sleep(250 * time.Millisecond)
			}
		}
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	return report(w, prov, tallies, d.resends)
}

// buyerKeyOfKey is the buyer's key of the order whose provider key is
// providerKey.
func buyerKeyOfKey(providerKey string) string {
	if id := orderOfProviderKey(providerKey); id != "" {
		return buyerKeyOf(id)
	}
	return "?"
}

// orderOfProviderKey is the order whose provider key is providerKey, of
// orders and heldOrders; empty for none.
func orderOfProviderKey(providerKey string) string {
	for _, o := range orders {
		if once.DerivedKey("order", o.id) == providerKey {
			return o.id
		}
	}
	for _, o := range heldOrders {
		if once.DerivedKey("order", o.id) == providerKey {
			return o.id
		}
	}
	return ""
}

// doubleClick sends the first click's request and, while the provider is
// charging it, the second click's: the shop's once.Do answers the second
// one 409 in progress. It returns the number of the next attempt.
func doubleClick(ctx context.Context, w io.Writer, shop *service, prov *provider, o order, req chargeRequest, t *tally) int {
	first := make(chan answer, 1)
	go func() { first <- shop.pay(ctx, "buyer-42", buyerKeyOf(o.id), req) }()
	entered := prov.waitCharging(o.id)
	second := shop.pay(ctx, "buyer-42", buyerKeyOf(o.id), req)
	prov.release(o.id)
	a := <-first
	fmt.Fprintln(w, a.describe(1, o))
	t.add(a)
	if entered {
		fmt.Fprintln(w, "  (attempt 2 was sent while attempt 1 was at the provider)")
	}
	fmt.Fprintln(w, second.describe(2, o))
	t.add(second)
	fmt.Fprintln(w, "  the buyer's browser retries the second click")
	return 3
}

// report prints the charges and answers per order and fails unless every
// paid order was charged once and the declined card never.
func report(w io.Writer, prov *provider, tallies map[string]*tally, resends map[string]int) error {
	fmt.Fprintf(w, "\n%-10s %-8s %-18s %-15s %-8s %-20s %s\n", "order", "charges", "provider requests", "client resends", "answers", "deduped by the shop", "deduped by the provider")
	bad, paid, charges, byShop, byProvider, resent := 0, 0, 0, 0, 0, 0
	for _, o := range orders {
		c, requests := prov.counts(o.id)
		t := tallies[o.id]
		r := resends[once.DerivedKey("order", o.id)]
		fmt.Fprintf(w, "%-10s %-8d %-18d %-15d %-8d %-20d %d\n", o.id, c, requests, r, t.answers, t.byShop, t.byProvider)
		resent += r
		want := 1
		if o.card == declinedCard {
			want = 0
		} else {
			paid++
		}
		if c != want {
			bad++
		}
		charges += c
		byShop += t.byShop
		byProvider += t.byProvider
	}
	if bad > 0 {
		return fmt.Errorf("%d orders charged the wrong number of times", bad)
	}
	fmt.Fprintf(w, "charges made: %d for %d paid orders (1 per order); the declined card: 0\n", charges, paid)
	fmt.Fprintf(w, "answers deduplicated: %d by the shop's once.Do (buyer's key), %d by the provider (DerivedKey)\n", byShop, byProvider)
	fmt.Fprintf(w, "charges resent by the shop's oncehttp.Transport, with the same key: %d\n", resent)
	return nil
}
