package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/stagedoor/once"
	"github.com/stagedoor/once/oncehttp"
	"github.com/stagedoor/once/reconcile"
)

// The held payments: the provider goes down while the shop charges, so
// the shop's client gets no answer after its request left and cannot tell
// whether the card was charged. The shop holds the buyer's key
// (once.Hold, WithHoldFor(holdFor)): the buyer's retries get 409 with a
// Retry-After of the hold left instead of a second charge attempt, and the
// shop's reconciler (reconcile.New) asks the provider, by the same
// DerivedKey the charge carried, what it did.
//
//   - The provider charged (chargeThenDown): the reconciler learns the
//     charge and resolves the key with it; the buyer's next retry gets the
//     201 the first request would have got, replayed. One charge.
//   - The provider did not charge (downBeforeCharge): the reconciler learns
//     "no charge with this key" and leaves the key held, on purpose. "No
//     charge" is what the provider knows now, not a final answer: the
//     first request may still be in flight to it (a provider may process a
//     request after its client gave up). Resolving the key as a final
//     error would tell the buyer "not paid" while that request may still
//     charge the card: a charge without an order. Leaving it held costs
//     the buyer the rest of the hold, which the 409's Retry-After told
//     them; then their retry runs the charge again with the same
//     DerivedKey: it charges once, or, had the late request landed, gets
//     that charge replayed by the provider. One charge either way, and
//     nobody is told a false "not paid". (Releasing the key at once would
//     be as safe, thanks to the DerivedKey, but a reconcile.Job only settles
//     or leaves a key held, and the hold is short.)
type heldOrder struct {
	id    string
	fault fault
	story string
}

var heldOrders = []heldOrder{
	{id: "a7c3e5f1", fault: chargeThenDown, story: "the provider charges the card, then goes down before it answers"},
	{id: "f0b8d2c6", fault: downBeforeCharge, story: "the provider is down: the charge request never reaches its ledger"},
}

// reply is one answer of the shop to the buyer.
type reply struct {
	Status     int
	Type       string // Content-Type
	RetryAfter string // the Retry-After header, empty when absent
	Replayed   string // the Idempotent-Replayed header, empty when absent
	Body       string
	// Busy is the shop's once.InProgressError behind a 409: the hold the
	// store reported.
	Busy *once.InProgressError
	// At is when the reply arrived.
	At time.Time
}

// heldResult is what playHeld saw for one held order.
type heldResult struct {
	Order   string
	Replies []reply
	Passes  []reconcile.Report
	// BusyPasses counts the passes made again because they found the key
	// still leased by the pass before (see playHeld).
	BusyPasses int
	Ledger     ledger
	Resends    int
	// Clicked is when the buyer sent the first request: the hold began
	// after it.
	Clicked time.Time
	// Charge is the provider's record of the charge made with the order's
	// DerivedKey (the body of its 201), when it made one.
	Charge *charge
}

// playHeld plays the held orders against the shop's HTTP endpoint and its
// reconciler, and fails unless each was charged once.
func (d *demo) playHeld(ctx context.Context) ([]heldResult, error) {
	w := d.w
	shop := newService(d.newKeeper(), d.url, d.onRetry)
	var mu sync.Mutex
	var busy *once.InProgressError
	shopURL, err := serveShop(ctx, shop.checkout(func(e *once.InProgressError) {
		mu.Lock()
		busy = e
		mu.Unlock()
	}))
	if err != nil {
		return nil, err
	}
	rec, err := reconcile.New(shop.keeper, d.askProvider(shop.payrail), reconcile.Config{})
	if err != nil {
		return nil, fmt.Errorf("the held payments need a store that keeps the held state: %w", err)
	}
	buyer := &http.Client{Timeout: 2 * callTimeout}
	fmt.Fprintf(w, "\nheld payments: the shop holds a key whose charge got no answer (once.Hold, hold %v), and its reconciler asks the provider\n", holdFor)

	var results []heldResult
	for _, o := range heldOrders {
		res := heldResult{Order: o.id}
		buyerKey, providerKey := buyerKeyOf(o.id), once.DerivedKey("order", o.id)
		fmt.Fprintf(w, "\norder %s: %s\n", o.id, o.story)
		body, _ := json.Marshal(chargeRequest{OrderID: o.id, Amount: 4200, Card: "4242424242424242"})
		send := func(why string) (reply, error) {
			fmt.Fprintf(w, "  buyer: POST /pay, Idempotency-Key: %s (%s)\n", buyerKey, why)
			mu.Lock()
			busy = nil
			mu.Unlock()
			r, err := post(ctx, buyer, shopURL+"/pay", buyerKey, body)
			if err != nil {
				return r, err
			}
			mu.Lock()
			r.Busy = busy
			mu.Unlock()
			fmt.Fprintln(w, "  shop:  "+r.line())
			switch {
			case r.Status == http.StatusGatewayTimeout:
				fmt.Fprintf(w, "         the charge left but got no answer: once.Hold holds %s for %v\n", buyerKey, holdFor)
			case r.Busy != nil && r.Busy.Held:
				fmt.Fprintf(w, "         %s is held, %v left by the store's clock; the provider was not called\n", buyerKey, r.Busy.HoldRemaining.Round(time.Millisecond))
			case r.Status == http.StatusCreated && r.Replayed != "":
				fmt.Fprintf(w, "         once.Do replayed the charge stored for %s; the provider was not called\n", buyerKey)
			case r.Status == http.StatusCreated:
				fmt.Fprintf(w, "         the hold has ended: once.Do ran the charge again, with the same Idempotency-Key %s\n", providerKey)
			}
			res.Replies = append(res.Replies, r)
			return r, nil
		}
		pass := func(when string) error {
			// A pass that left a key held ends its lease on the key with the
			// shortest lease the store can keep (1 ns, rounded up to the
			// store's clock precision: a millisecond on Redis); a pass in
			// that instant finds the key leased (Busy) and is made again.
			var rep reconcile.Report
			for n := 0; n < 100; n++ {
				var err error
				if rep, err = rec.Pass(ctx); err != nil {
					return err
				}
				if rep.Busy == 0 {
					break
				}
				res.BusyPasses++
				time.Sleep(10 * time.Millisecond)
			}
			res.Passes = append(res.Passes, rep)
			fmt.Fprintf(w, "  reconciler pass%s: examined %d, resolved %d, left held %d (failed %d), busy %d\n",
				when, rep.Examined, rep.Resolved, rep.LeftHeld, rep.Failed, rep.Busy)
			return nil
		}
		clicked := time.Now()
		if _, err := send("the click"); err != nil {
			return nil, err
		}
		res.Clicked = clicked
		if _, err := send("a retry at once"); err != nil {
			return nil, err
		}
		if o.fault == chargeThenDown {
			if err := pass(" (the provider is still down)"); err != nil {
				return nil, err
			}
		}
		d.prov.back(o.id)
		fmt.Fprintln(w, "  the provider is back")
		if err := pass(""); err != nil {
			return nil, err
		}
		// The buyer retries, waiting as long as each 409's Retry-After says.
		r, err := send("a retry")
		for n := 0; err == nil && r.Status == http.StatusConflict && n < 3; n++ {
			wait, _ := strconv.Atoi(r.RetryAfter)
			fmt.Fprintf(w, "  buyer: waits the Retry-After, %ds\n", wait)
			time.Sleep(time.Duration(wait) * time.Second)
			r, err = send("after the Retry-After")
		}
		if err != nil {
			return nil, err
		}
		if r.Status == http.StatusCreated && r.Replayed == "" {
			if _, err := send("a reload"); err != nil {
				return nil, err
			}
		}
		res.Ledger, res.Resends = d.prov.ledger(o.id), d.resent(providerKey)
		if c, ok := d.prov.chargeOf(providerKey); ok {
			res.Charge = &c
		}
		fmt.Fprintf(w, "  the provider's ledger for order %s: %d charge; requests: %d reached the ledger, %d dropped while down; lookups by the reconciler: %d\n",
			o.id, res.Ledger.charges, res.Ledger.requests, res.Ledger.dropped, res.Ledger.lookups)
		results = append(results, res)
	}
	bad := 0
	for _, r := range results {
		if r.Ledger.charges != 1 {
			bad++
		}
	}
	if bad > 0 {
		return results, fmt.Errorf("%d held orders charged the wrong number of times", bad)
	}
	fmt.Fprintf(w, "held orders charged: %d, 1 per order\n", len(results))
	return results, nil
}

// askProvider is the reconcile.Check: it asks the provider
// which charge it made with the held order's DerivedKey. A charge settles
// the key with it; "no charge" leaves the key held (see heldOrder), as
// does a failed lookup (the reconciler counts it and asks again on its
// next pass).
func (d *demo) askProvider(p *payrail) reconcile.Check[charge] {
	return func(ctx context.Context, k reconcile.HeldKey) (reconcile.Verdict[charge], error) {
		id, _ := strings.CutPrefix(k.Key, "checkout-")
		providerKey := once.DerivedKey("order", id)
		c, found, err := p.lookup(ctx, providerKey)
		switch {
		case err != nil:
			fmt.Fprintf(d.w, "  reconciler: asks the provider about %s: %v; leaves %s held\n", providerKey, err, k.Key)
			return reconcile.Verdict[charge]{}, err
		case found:
			fmt.Fprintf(d.w, "  reconciler: asks the provider about %s: charged, %s; resolves %s with it\n", providerKey, c.ID, k.Key)
			return reconcile.Verdict[charge]{Settled: true, Value: c}, nil
		default:
			fmt.Fprintf(d.w, "  reconciler: asks the provider about %s: no charge with this key; leaves %s held until its hold ends\n", providerKey, k.Key)
			return reconcile.Verdict[charge]{}, nil
		}
	}
}

// post sends the buyer's POST with key and body.
func post(ctx context.Context, c *http.Client, url, key string, body []byte) (reply, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return reply{}, err
	}
	req.Header.Set("Authorization", "Bearer buyer-42")
	req.Header.Set("Idempotency-Key", key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.Do(req)
	if err != nil {
		return reply{}, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return reply{
		At:     time.Now(),
		Status: resp.StatusCode, Type: resp.Header.Get("Content-Type"),
		RetryAfter: resp.Header.Get("Retry-After"), Replayed: resp.Header.Get(oncehttp.ReplayedHeader),
		Body: string(b),
	}, err
}

// line describes r: status, the headers that matter, and the charge.
func (r reply) line() string {
	s := fmt.Sprintf("%d %s, %s", r.Status, http.StatusText(r.Status), r.Type)
	if r.RetryAfter != "" {
		s += ", Retry-After: " + r.RetryAfter
	}
	if r.Replayed != "" {
		s += ", Idempotent-Replayed: " + r.Replayed
	} else {
		s += ", no Idempotent-Replayed"
	}
	if r.Status < 300 {
		s += ", " + strings.TrimSpace(r.Body)
	}
	return s
}
