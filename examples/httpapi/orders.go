package main

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/stagedoor/once"
	"github.com/stagedoor/once/oncehttp"
)

type orderRequest struct {
	HoldIDs []int  `json:"hold_ids"`
	Card    string `json:"card"`
}

type order struct {
	ID      string `json:"id"`
	Buyer   string `json:"buyer"`
	HoldIDs []int  `json:"hold_ids"`
	Amount  int    `json:"amount"`
	Status  string `json:"status"`
}

// shop places orders; placed and declined count what the handler really
// did, whatever the clients retried.
type shop struct {
	slow    time.Duration // how long an "X-Simulate: slow" order takes
	running atomic.Int32  // orders being placed right now

	mu       sync.Mutex
	orders   map[string]order
	placed   int
	declined int
}

// newServer returns the service's handler over keeper: POST /orders guarded
// by the idempotency middleware, GET /orders/{id} unguarded.
func newServer(keeper *once.Keeper, slow time.Duration) (http.Handler, *shop, error) {
	s := &shop{slow: slow, orders: map[string]order{}}
	m, err := oncehttp.New(keeper, oncehttp.Config{Scope: scope})
	if err != nil {
		return nil, nil, err
	}
	mux := http.NewServeMux()
	mux.Handle("POST /orders", m.Handler(http.HandlerFunc(s.placeOrder)))
	mux.HandleFunc("GET /orders/{id}", s.getOrder)
	return authenticate(mux), s, nil
}

func (s *shop) placeOrder(w http.ResponseWriter, r *http.Request) {
	s.running.Add(1)
	defer s.running.Add(-1)
	var req orderRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || len(req.HoldIDs) == 0 || req.Card == "" {
		writeProblem(w, http.StatusBadRequest, "invalid-order", "Invalid order", "The body must be JSON with hold_ids and card.")
		return
	}
	if r.Header.Get("X-Simulate") == "slow" {
		select {
		case <-time.After(s.slow): // a slow payment provider
		case <-r.Context().Done():
			return
		}
	}
	user, _ := scope(r)
	s.mu.Lock()
	defer s.mu.Unlock()
	if strings.HasSuffix(req.Card, "0002") {
		s.declined++
		writeProblem(w, http.StatusPaymentRequired, "card-declined", "Card declined", "The card was declined: insufficient funds.")
		return
	}
	o := order{ID: newID(), Buyer: user, HoldIDs: req.HoldIDs, Amount: 4200 * len(req.HoldIDs), Status: "confirmed"}
	s.orders[o.ID] = o
	s.placed++
	w.Header().Set("Location", "/orders/"+o.ID)
	writeJSON(w, http.StatusCreated, "application/json", o)
}

func (s *shop) getOrder(w http.ResponseWriter, r *http.Request) {
	user, err := scope(r)
	s.mu.Lock()
	o, ok := s.orders[r.PathValue("id")]
	s.mu.Unlock()
	if err != nil || !ok || o.Buyer != user {
		writeProblem(w, http.StatusNotFound, "not-found", "Not found", "No such order.")
		return
	}
	writeJSON(w, http.StatusOK, "application/json", o)
}

// counts returns how many orders were placed and cards declined.
func (s *shop) counts() (placed, declined int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.placed, s.declined
}

func newID() string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func writeProblem(w http.ResponseWriter, status int, slug, title, detail string) {
	writeJSON(w, status, "application/problem+json", struct {
		Type   string `json:"type"`
		Title  string `json:"title"`
		Status int    `json:"status"`
		Detail string `json:"detail"`
	}{oncehttp.DefaultProblemBase + slug, title, status, detail})
}

func writeJSON(w http.ResponseWriter, status int, contentType string, v any) {
	w.Header().Set("Content-Type", contentType)
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
