package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/stagedoor/once"
	"github.com/stagedoor/once/oncehttp"
)

// answer is what the shop answered one request of the buyer, and which
// layer, if any, deduplicated it.
type answer struct {
	once.Outcome[charge]
	Err error
	// Called: the shop's once.Do ran its function, a call to the provider.
	Called bool
	// ProviderReplayed: the provider answered that call with
	// Idempotent-Replayed: true, its own replay of the DerivedKey.
	ProviderReplayed bool
}

// layer says who deduplicated an answer.
type layer int

const (
	// layerNone: a first execution, or a failure; nothing was deduplicated.
	layerNone layer = iota
	// layerShop: the shop's once.Do on the buyer's key answered from its
	// store (replay) or refused a concurrent duplicate (409); the provider
	// was not called.
	layerShop
	// layerProvider: the shop called the provider again, and the provider's
	// once on the DerivedKey replayed its charge or refused a duplicate.
	layerProvider
)

func (a answer) layer() layer {
	var inProgress *once.InProgressError
	switch {
	case a.Status == once.Replayed || errors.As(a.Err, &inProgress):
		return layerShop
	case a.ProviderReplayed || errors.Is(a.Err, errProviderBusy):
		return layerProvider
	default:
		return layerNone
	}
}

// describe is the line of the demo's output for answer a to the request
// of attempt n of order o.
func (a answer) describe(n int, o order) string {
	buyerKey, providerKey := buyerKeyOf(o.id), once.DerivedKey("order", o.id)
	var d *decline
	var inProgress *once.InProgressError
	var result string
	switch {
	case a.Err == nil:
		result = fmt.Sprintf("paid %s", a.Value.ID)
	case errors.As(a.Err, &d):
		result = fmt.Sprintf("declined (%s)", d.Code)
	default:
		result = failure(a.Err)
	}
	line := fmt.Sprintf("  attempt %d: %-34s Idempotent-Replayed: %-5v ", n, result, a.Status == once.Replayed)
	switch {
	case a.Status == once.Replayed:
		return line + "deduplicated by the shop: once.Do replayed " + buyerKey + ", the provider was not called"
	case errors.As(a.Err, &inProgress):
		return line + "deduplicated by the shop: once.Do holds " + buyerKey + " for the first click"
	case a.ProviderReplayed:
		return line + "deduplicated by the provider: it replayed " + providerKey
	case errors.Is(a.Err, errProviderBusy):
		return line + "deduplicated by the provider: " + providerKey + " is still being charged"
	case a.Err == nil || errors.As(a.Err, &d):
		return line + "first execution: the provider answered " + providerKey
	default:
		return line + "nothing stored; the buyer retries with the same key"
	}
}

// failure names a retryable failure of a request.
func failure(err error) string {
	var inProgress *once.InProgressError
	switch {
	case errors.As(err, &inProgress):
		return "409 in progress, from the shop"
	case errors.Is(err, errProviderBusy):
		return "409 from the provider"
	case errors.Is(err, context.Canceled):
		return "stopped: the shop shut down"
	case isTimeout(err):
		return "timed out waiting for the provider"
	default:
		return "no response from the provider"
	}
}

// retryReason names why the shop's oncehttp.Transport resends a charge.
func retryReason(r oncehttp.Retry) string {
	switch {
	case r.Err != nil && isTimeout(r.Err):
		return fmt.Sprintf("no response within %v", attemptTimeout)
	case r.Err != nil:
		return "no response from the provider (connection closed)"
	case r.Status == http.StatusConflict:
		return "409 from the provider, the key is still being charged"
	default:
		return fmt.Sprintf("%d %s from the provider", r.Status, http.StatusText(r.Status))
	}
}

func isTimeout(err error) bool {
	var t interface{ Timeout() bool }
	return errors.Is(err, context.DeadlineExceeded) || errors.As(err, &t) && t.Timeout()
}

// tally counts, per order, the answers by the layer that deduplicated them.
type tally struct {
	answers, byShop, byProvider int
}

func (t *tally) add(a answer) {
	t.answers++
	switch a.layer() {
	case layerShop:
		t.byShop++
	case layerProvider:
		t.byProvider++
	}
}
