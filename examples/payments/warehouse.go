package main

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"sync"
)

// warehouse is a fake stock service: POST /holds?order=ID holds the
// order's stock, once per Idempotency-Key however often the request is
// sent, like the provider's charges.
type warehouse struct {
	mu       sync.Mutex
	keys     map[string]bool // the keys of the holds made
	holds    map[string]int  // holds made per order
	requests map[string]int  // requests per order
}

func newWarehouse() *warehouse {
	return &warehouse{keys: map[string]bool{}, holds: map[string]int{}, requests: map[string]int{}}
}

func (h *warehouse) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	key, orderID := r.Header.Get("Idempotency-Key"), r.URL.Query().Get("order")
	if r.Method != http.MethodPost || key == "" || orderID == "" {
		http.Error(w, "POST /holds?order=ID with an Idempotency-Key", http.StatusBadRequest)
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.requests[orderID]++
	if !h.keys[key] {
		h.keys[key] = true
		h.holds[orderID]++
	}
	w.WriteHeader(http.StatusCreated)
}

// counts returns the holds made for orderID and the requests it got.
func (h *warehouse) counts(orderID string) (holds, requests int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.holds[orderID], h.requests[orderID]
}

// holdStock asks the warehouse at base to hold the stock of orderID, with
// key as the Idempotency-Key.
func holdStock(ctx context.Context, base, key, orderID string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/holds?order="+url.QueryEscape(orderID), nil)
	if err != nil {
		return err
	}
	req.Header.Set("Idempotency-Key", key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		return fmt.Errorf("warehouse: %s", resp.Status)
	}
	return nil
}
