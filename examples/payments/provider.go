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
	attempts map[string]int           // requests per order
	charging map[string]chan struct{} // closed when a holdCharge starts
	released map[string]chan struct{} // closed by release
}

func newProvider(faults map[string]fault, delay time.Duration) *provider {
	return &provider{
		keeper:   once.New(nil, once.RegisterError[*decline]("card_declined")),
		faults:   faults,
		delay:    delay,
		charges:  map[string]int{},
		attempts: map[string]int{},
		charging: map[string]chan struct{}{},
		released: map[string]chan struct{}{},
	}
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
	srv := &http.Server{Handler: http.HandlerFunc(p.handleCharge), ReadHeaderTimeout: 5 * time.Second}
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
		p.mu.Lock()
		p.charges[req.OrderID]++
		p.mu.Unlock()
		return charge{ID: "ch_" + req.OrderID, OrderID: req.OrderID, Amount: req.Amount}, nil
	})
	if out.Replayed {
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
