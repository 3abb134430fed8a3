package main

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/stagedoor/once"
	"github.com/stagedoor/once/hashers"
)

// fault is what the fake provider does wrong on the first attempt of a
// charge.
type fault int

const (
	noFault fault = iota
	// dropResponse: the provider charges the card, then the connection drops
	// before the response reaches the client.
	dropResponse
	// slowCharge: the provider takes longer than the client's timeout.
	slowCharge
	// holdCharge: the provider holds the charge until release (at most
	// holdLimit), so that a second click arrives while it runs.
	holdCharge
	// chargeThenDown: the provider charges the card, then goes down before
	// it answers: the first request times out at the shop's client, and
	// every later request of the order is dropped unprocessed until back.
	chargeThenDown
	// downBeforeCharge: the provider is down from the start: every request
	// of the order is dropped unprocessed (it never reaches the ledger)
	// until back.
	downBeforeCharge
)

// holdLimit bounds a holdCharge, well within the shop's client timeout.
const holdLimit = 200 * time.Millisecond

type chargeRequest struct {
	OrderID string `json:"order_id"`
	Amount  int    `json:"amount"`
	Card    string `json:"card"`
}

type charge struct {
	ID      string `json:"id"`
	OrderID string `json:"order_id"`
	Amount  int    `json:"amount"`
}

type decline struct {
	Code string `json:"decline_code"`
}

func (d *decline) Error() string { return "card declined: " + d.Code }

// declinedCard is the test card number the provider always declines.
const declinedCard = "4000000000000002"

// provider is a fake payment provider ("Payrail"). Like a real one it
// deduplicates charges by the Idempotency-Key header — with once itself —
// so a retried charge returns the first answer instead of charging again.
type provider struct {
	keeper *once.Keeper
	faults map[string]fault // by order ID, first attempt only
	delay  time.Duration    // how long a slowCharge takes

	mu       sync.Mutex
	charges  map[string]int           // card charges per order
	attempts map[string]int           // requests per order that reached the ledger
	dropped  map[string]int           // requests per order dropped while down
	lookups  map[string]int           // lookups per order (GET /charges)
	byKey    map[string]charge        // the charges made, by Idempotency-Key
	down     map[string]bool          // orders whose requests are dropped
	charging map[string]chan struct{} // closed when a holdCharge starts
	released map[string]chan struct{} // closed by release
}

func newProvider(faults map[string]fault, delay time.Duration) *provider {
	p := &provider{
		keeper:   once.New(nil, once.RegisterError[*decline]("card_declined")),
		faults:   faults,
		delay:    delay,
		charges:  map[string]int{},
		attempts: map[string]int{},
		dropped:  map[string]int{},
		lookups:  map[string]int{},
		byKey:    map[string]charge{},
		down:     map[string]bool{},
		charging: map[string]chan struct{}{},
		released: map[string]chan struct{}{},
	}
	for id, f := range faults {
		if f == downBeforeCharge {
			p.down[id] = true
		}
	}
	return p
}

// back ends the outage of orderID's requests.
func (p *provider) back(orderID string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.down, orderID)
}

// hold returns the channels of a holdCharge of orderID.
func (p *provider) hold(orderID string) (charging, released chan struct{}) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.charging[orderID] == nil {
		p.charging[orderID], p.released[orderID] = make(chan struct{}), make(chan struct{})
	}
	return p.charging[orderID], p.released[orderID]
}

// waitCharging waits until the holdCharge of orderID is being charged, and
// reports whether it was within holdLimit.
func (p *provider) waitCharging(orderID string) bool {
	charging, _ := p.hold(orderID)
	select {
	case <-charging:
		return true
	case <-time.After(holdLimit):
		return false
	}
}

// release ends the holdCharge of orderID.
func (p *provider) release(orderID string) {
	_, released := p.hold(orderID)
	close(released)
}

// serve starts the provider on a loopback port and returns its base URL.
func (p *provider) serve(ctx context.Context) (string, error) {
	ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /charges", p.handleCharge)
	mux.HandleFunc("GET /charges", p.handleLookup)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	go func() {
		<-ctx.Done()
		_ = srv.Close()
	}()
	return "http://" + ln.Addr().String(), nil
}

func (p *provider) handleCharge(w http.ResponseWriter, r *http.Request) {
	key := r.Header.Get("Idempotency-Key")
	fp, err := hashers.RequestHasher{}.Hash(r)
	if key == "" || err != nil {
		http.Error(w, "idempotency key and a readable body required", http.StatusBadRequest)
		return
	}
	body, err := io.ReadAll(r.Body)
	var req chargeRequest
	if err != nil || json.Unmarshal(body, &req) != nil {
		http.Error(w, "bad charge request", http.StatusBadRequest)
		return
	}
	if p.dropWhileDown(w, req.OrderID) {
		return
	}
	attempt := p.countAttempt(req.OrderID)
	f := noFault
	if attempt == 1 {
		f = p.faults[req.OrderID]
	}

	out, err := once.DoOutcome(r.Context(), p.keeper.Scope("merchant-stagedoor"), key, fp, func(ctx context.Context) (charge, error) {
		switch f {
		case slowCharge:
			time.Sleep(p.delay)
		case holdCharge:
			charging, released := p.hold(req.OrderID)
			close(charging)
			select {
			case <-released:
			case <-time.After(holdLimit):
			}
		}
		if req.Card == declinedCard {
			return charge{}, once.Final(&decline{Code: "insufficient_funds"})
		}
		c := charge{ID: "ch_" + req.OrderID, OrderID: req.OrderID, Amount: req.Amount}
		p.mu.Lock()
		p.charges[req.OrderID]++
		p.byKey[key] = c
		p.mu.Unlock()
		return c, nil
	})
	if out.Status == once.Replayed {
		// Like Stripe's: this answer is the stored one, no new charge.
		w.Header().Set("Idempotent-Replayed", "true")
	}
	var d *decline
	switch {
	case errors.Is(err, once.ErrInProgress):
		w.Header().Set("Retry-After", "1")
		w.WriteHeader(http.StatusConflict)
		return
	case errors.As(err, &d):
		writeJSON(w, http.StatusPaymentRequired, d)
		return
	case err != nil:
		http.Error(w, "provider error", http.StatusServiceUnavailable)
		return
	}
	if f == chargeThenDown {
		// The charge is made and recorded; the provider goes down before it
		// answers, and the shop's client times out waiting.
		p.mu.Lock()
		p.down[req.OrderID] = true
		p.mu.Unlock()
		select {
		case <-r.Context().Done():
		case <-time.After(callTimeout):
		}
		return
	}
	if f == dropResponse {
		// The charge is made and recorded; the response never arrives.
		if hj, ok := w.(http.Hijacker); ok {
			if conn, _, err := hj.Hijack(); err == nil {
				_ = conn.Close()
				return
			}
		}
	}
	writeJSON(w, http.StatusCreated, out.Value)
}

// dropWhileDown drops the connection of a request of an order that is
// down, unprocessed, and reports whether it did.
func (p *provider) dropWhileDown(w http.ResponseWriter, orderID string) bool {
	p.mu.Lock()
	down := p.down[orderID]
	if down {
		p.dropped[orderID]++
	}
	p.mu.Unlock()
	if !down {
		return false
	}
	if hj, ok := w.(http.Hijacker); ok {
		if conn, _, err := hj.Hijack(); err == nil {
			_ = conn.Close()
			return true
		}
	}
	http.Error(w, "provider down", http.StatusServiceUnavailable)
	return true
}

// handleLookup answers GET /charges?idempotency_key=K: the charge made
// with that key (200), or 404 when none was made. It is how the shop's
// reconciler asks what became of a request it got no answer to. While the
// order is down it answers 503.
func (p *provider) handleLookup(w http.ResponseWriter, r *http.Request) {
	key := r.URL.Query().Get("idempotency_key")
	if key == "" {
		http.Error(w, "idempotency_key required", http.StatusBadRequest)
		return
	}
	p.mu.Lock()
	c, found := p.byKey[key]
	orderID := orderOfProviderKey(key)
	p.lookups[orderID]++
	down := p.down[orderID]
	p.mu.Unlock()
	switch {
	case down:
		http.Error(w, "provider down", http.StatusServiceUnavailable)
	case found:
		writeJSON(w, http.StatusOK, c)
	default:
		writeJSON(w, http.StatusNotFound, map[string]string{"error": "no_charge_with_this_key"})
	}
}

// ledger is what the provider did for one order.
type ledger struct {
	charges, requests, dropped, lookups int
}

func (p *provider) ledger(orderID string) ledger {
	p.mu.Lock()
	defer p.mu.Unlock()
	return ledger{charges: p.charges[orderID], requests: p.attempts[orderID], dropped: p.dropped[orderID], lookups: p.lookups[orderID]}
}

func (p *provider) countAttempt(orderID string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.attempts[orderID]++
	return p.attempts[orderID]
}

func (p *provider) counts(orderID string) (charges, attempts int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.charges[orderID], p.attempts[orderID]
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// chargeOf returns the charge the provider made with key, if any: the body
// of its 201.
func (p *provider) chargeOf(key string) (charge, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	c, ok := p.byKey[key]
	return c, ok
}
