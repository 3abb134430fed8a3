package main

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/stagedoor/once"
	"github.com/stagedoor/once/oncehttp"
)

// checkout is the shop's HTTP endpoint, POST /pay: the buyer's browser
// sends the order as JSON with "Authorization: Bearer <buyer>" and the
// Idempotency-Key it made at the click, the same on every retry. It runs
// pay and answers:
//
//	201 the charge (JSON), with Idempotent-Replayed: true when once.Do
//	    replayed it (a retry of a paid order, or a key the reconciler
//	    resolved)
//	402 the decline (JSON), replayed likewise
//	409 the key is in progress or held (oncehttp.WriteError: Problem
//	    Details, Retry-After the time the key stays blocked by the store's
//	    clock, rounded up to whole seconds); onBusy hears of the error
//	504 the provider did not answer after the request left: the key is
//	    now held (Problem Details, Retry-After the hold)
//	503 any other failure; nothing was stored, retry with the same key
func (s *service) checkout(onBusy func(*once.InProgressError)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		buyer, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		key := r.Header.Get("Idempotency-Key")
		var req chargeRequest
		switch {
		case !ok || buyer == "":
			writeProblem(w, http.StatusUnauthorized, "unauthorized", "Buyer not identified", 0)
			return
		case key == "":
			writeProblem(w, http.StatusBadRequest, "idempotency-key-missing", "Idempotency-Key required", 0)
			return
		case json.NewDecoder(r.Body).Decode(&req) != nil:
			writeProblem(w, http.StatusBadRequest, "order-invalid", "Order unreadable", 0)
			return
		}
		a := s.pay(r.Context(), buyer, key, req)
		var inProgress *once.InProgressError
		var d *decline
		switch {
		case a.Err == nil:
			writeAnswer(w, http.StatusCreated, a.Value, a.Status == once.Replayed)
		case errors.As(a.Err, &d):
			writeAnswer(w, http.StatusPaymentRequired, d, a.Status == once.Replayed)
		case errors.As(a.Err, &inProgress):
			if onBusy != nil {
				onBusy(inProgress)
			}
			oncehttp.WriteError(w, r, a.Err)
		case unknownOutcome(r.Context(), a.Err):
			writeProblem(w, http.StatusGatewayTimeout, "payment-outcome-unknown", "Payment outcome unknown", holdFor)
		default:
			writeProblem(w, http.StatusServiceUnavailable, "payment-unavailable", "Payment provider unavailable", time.Second)
		}
	})
}

func writeAnswer(w http.ResponseWriter, status int, v any, replayed bool) {
	if replayed {
		w.Header().Set(oncehttp.ReplayedHeader, "true")
	}
	writeJSON(w, status, v)
}

// writeProblem answers an RFC 9457 Problem Details document of the shop's;
// retryAfter, when positive, is sent in whole seconds.
func writeProblem(w http.ResponseWriter, status int, slug, title string, retryAfter time.Duration) {
	if retryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(int((retryAfter+time.Second-1)/time.Second)))
	}
	w.Header().Set("Content-Type", "application/problem+json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{
		"type": "https://shop.example/problems/" + slug, "title": title, "status": status,
	})
}

// serveShop starts h on a loopback port and returns its base URL; the
// server stops when ctx ends.
func serveShop(ctx context.Context, h http.Handler) (string, error) {
	ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	go func() {
		<-ctx.Done()
		_ = srv.Close()
	}()
	return "http://" + ln.Addr().String(), nil
}
