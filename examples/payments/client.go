package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"time"

	"github.com/stagedoor/once"
	"github.com/stagedoor/once/hashers"
	"github.com/stagedoor/once/oncehttp"
)

var errProviderBusy = errors.New("payrail: a charge with this key is in progress (409)")

// Timeouts of the shop's client of the provider.
const (
	// attemptTimeout bounds one attempt: the wait for the provider's
	// response headers.
	attemptTimeout = 300 * time.Millisecond
	// callTimeout bounds a call with all its retries.
	callTimeout = 5 * time.Second
	// holdFor is how long the shop holds a buyer's key whose charge got no
	// answer (once.WithHoldFor): retries are answered 409 meanwhile, and
	// the shop's reconciler asks the provider what happened.
	holdFor = 3 * time.Second
)

// payrail is the service's client of the payment provider.
type payrail struct {
	base string
	http *http.Client
}

// newPayrail returns a client whose calls go through oncehttp.Transport:
// every POST carries the idempotency key of the request's context
// (oncehttp.WithKey), and an attempt that got no answer (a dropped
// connection, a timeout) or a 409 (the provider is still charging the key)
// is retried with the same key, so the provider answers the retry from its
// record instead of charging again. onRetry hears of each retry.
func newPayrail(base string, onRetry func(oncehttp.Retry)) *payrail {
	return &payrail{base: base, http: oncehttp.NewClient(&oncehttp.Transport{
		Base: &http.Transport{
			ResponseHeaderTimeout: attemptTimeout,
			// A fresh connection per request, so that net/http's own retry of
			// a request with an Idempotency-Key on a reused connection that
			// broke does not hide the lost responses this demo injects.
			DisableKeepAlives: true,
		},
		// Payrail, like Stripe, takes the header's value as the key.
		Bare:      true,
		BaseDelay: 50 * time.Millisecond,
		OnRetry:   onRetry,
	})}
}

// charge asks the provider to charge the card, with key as the provider's
// Idempotency-Key on every attempt. A decline is the final answer to the
// intent; every other failure (no answer within the retries, a 409 or a
// 5xx) is retryable, which is safe because every retry of the intent sends
// the same key. replayed reports the provider's Idempotent-Replayed: true,
// its deduplication of a key it had already answered.
func (p *payrail) charge(ctx context.Context, key string, req chargeRequest) (c charge, replayed bool, err error) {
	ctx, cancel := context.WithTimeout(oncehttp.WithKey(ctx, key), callTimeout)
	defer cancel()
	body, _ := json.Marshal(req)
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, p.base+"/charges", bytes.NewReader(body))
	if err != nil {
		return charge{}, false, err
	}
	hreq.Header.Set("Content-Type", "application/json")
	resp, err := p.http.Do(hreq)
	if err != nil {
		return charge{}, false, err
	}
	defer resp.Body.Close()
	replayed = oncehttp.Replayed(resp)
	switch resp.StatusCode {
	case http.StatusCreated:
		return c, replayed, json.NewDecoder(resp.Body).Decode(&c)
	case http.StatusPaymentRequired:
		d := &decline{}
		if err := json.NewDecoder(resp.Body).Decode(d); err != nil {
			return charge{}, replayed, err
		}
		return charge{}, replayed, once.Final(d)
	case http.StatusConflict:
		return charge{}, replayed, errProviderBusy
	default:
		return charge{}, replayed, fmt.Errorf("payrail: %s", resp.Status)
	}
}

// service is one process of the shop: its once Keeper and its provider
// client. A restart is a new service over the same store.
type service struct {
	keeper  *once.Keeper
	payrail *payrail
}

func newService(keeper *once.Keeper, providerURL string, onRetry func(oncehttp.Retry)) *service {
	return &service{keeper: keeper, payrail: newPayrail(providerURL, onRetry)}
}

// pay charges an order once per buyer intent: the buyer's idempotency key
// guards the service, and DerivedKey("order", id) guards the provider, so
// neither a retried request nor a retried provider call charges twice.
//
// A charge whose request left but got no answer within the client's
// retries has an unknown outcome: the card may or may not have been
// charged. pay holds the buyer's key then (once.Hold, for holdFor): its
// retries get 409 until the shop's reconciler learns what happened, or the
// hold ends and a retry charges again with the same DerivedKey, which the
// provider deduplicates. Every other failure releases the key at once: the
// provider's own answers (a 409 while it charges, a 5xx), a request that
// never left (the connection was refused), and the shop's own shutdown
// (the restarted shop resends the same DerivedKey).
func (s *service) pay(ctx context.Context, buyer, buyerKey string, req chargeRequest) answer {
	fp := hashers.Strings("pay", req.OrderID, fmt.Sprint(req.Amount), req.Card)
	var a answer
	a.Outcome, a.Err = once.DoOutcome(ctx, s.keeper.Scope(buyer), buyerKey, fp, func(ctx context.Context) (charge, error) {
		a.Called = true
		c, replayed, err := s.payrail.charge(ctx, once.DerivedKey("order", req.OrderID), req)
		a.ProviderReplayed = replayed
		if unknownOutcome(ctx, err) {
			return c, once.Hold(err)
		}
		return c, err
	})
	return a
}

// unknownOutcome reports whether err, from a charge made under ctx, leaves
// its outcome unknown: the request was sent (not refused at dial) and no
// answer came back, and not because the shop itself stopped (ctx ended).
func unknownOutcome(ctx context.Context, err error) bool {
	var transport *url.Error
	if err == nil || ctx.Err() != nil || !errors.As(err, &transport) {
		return false
	}
	var op *net.OpError
	return !errors.As(err, &op) || op.Op != "dial"
}

// lookup asks the provider which charge, if any, it made with key (GET
// /charges?idempotency_key=key): the way the shop's reconciler learns
// what became of a charge it got no answer to. found is false when the
// provider made none.
func (p *payrail) lookup(ctx context.Context, key string) (c charge, found bool, err error) {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	hreq, err := http.NewRequestWithContext(ctx, http.MethodGet, p.base+"/charges?idempotency_key="+url.QueryEscape(key), nil)
	if err != nil {
		return charge{}, false, err
	}
	resp, err := http.DefaultClient.Do(hreq)
	if err != nil {
		return charge{}, false, err
	}
	defer resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusOK:
		return c, true, json.NewDecoder(resp.Body).Decode(&c)
	case http.StatusNotFound:
		return charge{}, false, nil
	default:
		return charge{}, false, fmt.Errorf("payrail lookup: %s", resp.Status)
	}
}
