package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/stagedoor/once"
	"github.com/stagedoor/once/hashers"
)

var errProviderBusy = errors.New("payrail: a charge with this key is in progress (409)")

// payrail is the service's client of the payment provider.
type payrail struct {
	base string
	http *http.Client
}

// charge asks the provider to charge the card, sending key as the
// provider's Idempotency-Key. A decline is the final answer to the intent;
// every other failure (a timeout, a dropped connection, a 409 or a 5xx) is
// retryable, which is safe because every retry sends the same key. replayed
// reports the provider's Idempotent-Replayed: true, its deduplication of a
// key it had already answered.
func (p *payrail) charge(ctx context.Context, key string, req chargeRequest) (c charge, replayed bool, err error) {
	c, resp, err := p.post(ctx, key, req)
	if resp != nil {
		replayed = resp.Header.Get("Idempotent-Replayed") == "true"
	}
	return c, replayed, err
}

func (p *payrail) post(ctx context.Context, key string, req chargeRequest) (charge, *http.Response, error) {
	body, _ := json.Marshal(req)
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, p.base+"/charges", bytes.NewReader(body))
	if err != nil {
		return charge{}, nil, err
	}
	hreq.Header.Set("Idempotency-Key", key)
	hreq.Header.Set("Content-Type", "application/json")
	resp, err := p.http.Do(hreq)
	if err != nil {
		return charge{}, nil, err
	}
	defer resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusCreated:
		var c charge
		return c, resp, json.NewDecoder(resp.Body).Decode(&c)
	case http.StatusPaymentRequired:
		d := &decline{}
		if err := json.NewDecoder(resp.Body).Decode(d); err != nil {
			return charge{}, resp, err
		}
		return charge{}, resp, once.Final(d)
	case http.StatusConflict:
		return charge{}, resp, errProviderBusy
	default:
		return charge{}, resp, fmt.Errorf("payrail: %s", resp.Status)
	}
}

// service is one process of the shop: its once Keeper and its provider
// client. A restart is a new service over the same store.
type service struct {
	keeper  *once.Keeper
	payrail *payrail
}

func newService(keeper *once.Keeper, providerURL string) *service {
	return &service{
		keeper: keeper,
		payrail: &payrail{base: providerURL, http: &http.Client{
			Timeout: 300 * time.Millisecond,
			// A fresh connection per request, so that net/http's own retry of
			// a request with an Idempotency-Key on a reused connection that
			// broke does not hide the lost responses this demo injects.
			Transport: &http.Transport{DisableKeepAlives: true},
		}},
	}
}

// pay charges an order once per buyer intent: the buyer's idempotency key
// guards the service, and DerivedKey("order", id) guards the provider, so
// neither a retried request nor a retried provider call charges twice.
func (s *service) pay(ctx context.Context, buyer, buyerKey string, req chargeRequest) answer {
	fp := hashers.Strings("pay", req.OrderID, fmt.Sprint(req.Amount), req.Card)
	var a answer
	a.Outcome, a.Err = once.DoOutcome(ctx, s.keeper.Scope(buyer), buyerKey, fp, func(ctx context.Context) (charge, error) {
		a.Called = true
		c, replayed, err := s.payrail.charge(ctx, once.DerivedKey("order", req.OrderID), req)
		a.ProviderReplayed = replayed
		return c, err
	})
	return a
}
