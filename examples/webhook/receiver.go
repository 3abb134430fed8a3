package main

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"sync"

	"github.com/stagedoor/once"
	"github.com/stagedoor/once/hashers"
)

// event is a provider's webhook delivery.
type event struct {
	ID      string `json:"id"`
	Type    string `json:"type"`
	OrderID string `json:"order_id"`
}

// receiver handles the provider's webhooks: it checks the signature before
// anything else, then processes each event ID once, acknowledging
// duplicate deliveries without processing them again.
type receiver struct {
	secret []byte
	keeper *once.Keeper
	// failOnce makes the first processing of these event IDs fail, as a
	// database blip would; the provider then redelivers.
	failOnce map[string]bool

	mu        sync.Mutex
	processed map[string]int
	failed    map[string]bool
}

func sign(secret, body []byte) string {
	mac := hmac.New(sha256.New, secret)
	mac.Write(body)
	return hex.EncodeToString(mac.Sum(nil))
}

func (rc *receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 64<<10))
	if err != nil {
		http.Error(w, "unreadable body", http.StatusBadRequest)
		return
	}
	// The signature is checked before the key is claimed: an unsigned
	// request must not be able to occupy an event ID.
	got, _ := hex.DecodeString(r.Header.Get("Webhook-Signature"))
	want, _ := hex.DecodeString(sign(rc.secret, body))
	if !hmac.Equal(got, want) {
		http.Error(w, "bad signature", http.StatusUnauthorized)
		return
	}
	var ev event
	if err := json.Unmarshal(body, &ev); err != nil || ev.ID == "" {
		http.Error(w, "bad event", http.StatusBadRequest)
		return
	}
	out, err := once.DoOutcome(r.Context(), rc.keeper.Scope("webhooks:payrail"), ev.ID, hashers.Parts(body),
		func(ctx context.Context) (string, error) { return rc.process(ev) })
	switch {
	case errors.Is(err, once.ErrInProgress):
		w.Header().Set("Retry-After", "1")
		http.Error(w, "delivery in progress", http.StatusConflict)
	case err != nil:
		http.Error(w, "processing failed; redeliver", http.StatusInternalServerError)
	case out.Status == once.Replayed:
		_, _ = io.WriteString(w, `{"status":"duplicate"}`)
	default:
		_, _ = io.WriteString(w, `{"status":"processed"}`)
	}
}

func (rc *receiver) process(ev event) (string, error) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if rc.failOnce[ev.ID] && !rc.failed[ev.ID] {
		rc.failed[ev.ID] = true
		return "", errors.New("database unavailable") // retryable: released, redelivery runs again
	}
	rc.processed[ev.ID]++
	return "order " + ev.OrderID + " marked " + ev.Type, nil
}

func (rc *receiver) count(id string) int {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return rc.processed[id]
}
