package oncehttp

import (
	"context"
	"errors"
	"maps"
	"net/http"
	"net/textproto"
	"slices"

	"github.com/stagedoor/once"
	"github.com/stagedoor/once/reconcile"
)

// errVerdictNotResponse is why a verdict with an error is refused: a key
// of the middleware is answered with a response.
var errVerdictNotResponse = errors.New("oncehttp: a settled verdict on a key of the middleware is a response (StoredResponse); give a refusal its status and body instead of Err")

// NewReconciler returns a reconcile.Job for the keys the middleware
// holds (a 5xx under the Hold policy, or a handler's once.Hold), whose
// verdicts are responses: check asks the downstream service what
// happened and, once it knows, returns Settled with the response every
// later request with the key must receive; the Job stores it as
// ResolveResponse does (the middleware's codec, the headers of
// DefaultStoreHeaders), and each later request gets it with
// Idempotent-Replayed. k must be the Keeper the middleware uses.
//
// A settled verdict with Err set, or with a status outside 200-999, is
// not stored: the key stays held and the pass counts it as Failed, with
// the reason in its Errors. cfg.Codec and cfg.MaxOutcomeSize are ignored:
// the middleware's codec is the only one its keys replay, and a verdict
// is never refused for its size, as ResolveResponse's is not.
func NewReconciler(k *once.Keeper, check reconcile.Check[StoredResponse], cfg reconcile.Config) (*reconcile.Job[StoredResponse], error) {
	if check == nil {
		return nil, &once.InvalidInputError{Field: "check", Reason: "nil"}
	}
	cfg.Codec, cfg.MaxOutcomeSize = responseCodec{}, resolutionCap
	return reconcile.New(k, func(ctx context.Context, hk reconcile.HeldKey) (reconcile.Verdict[StoredResponse], error) {
		v, err := check(ctx, hk)
		if err != nil || !v.Settled {
			return v, err
		}
		if v.Err != nil {
			return reconcile.Verdict[StoredResponse]{}, errVerdictNotResponse
		}
		if !validStatus(v.Value.Status) {
			return reconcile.Verdict[StoredResponse]{}, errStatus()
		}
		return v, nil
	}, cfg)
}

// validStatus reports whether code is a final status, which a replay
// sends (an informational 1xx never ends a response).
func validStatus(code int) bool { return code >= 200 && code <= 999 }

// errStatus is the error for a StoredResponse whose status validStatus
// refuses.
func errStatus() error {
	return &once.InvalidInputError{Field: "status", Reason: "not a final HTTP status code (200 to 999)"}
}

// toStored is resp as the middleware stores it: the headers and trailers
// of DefaultStoreHeaders (and the representation headers the body
// depends on), under their canonical names whatever case resp used,
// never a cookie or a hop-by-hop field.
func toStored(resp StoredResponse) storedResponse {
	allow := storeList(nil)
	return storedResponse{
		Format: storedFormat, Status: resp.Status,
		Header:  storedHeader(canonicalHeader(resp.Header), allow),
		Trailer: storedHeader(canonicalHeader(resp.Trailer), allow),
		Body:    resp.Body, TooLarge: resp.TooLarge,
	}
}

// canonicalHeader returns h with every name in canonical form, merging
// the values of names that differ only in case; h itself when it already
// is.
func canonicalHeader(h http.Header) http.Header {
	canonical := true
	for name := range h {
		if textproto.CanonicalMIMEHeaderKey(name) != name {
			canonical = false
			break
		}
	}
	if canonical {
		return h
	}
	out := make(http.Header, len(h))
	for _, name := range slices.Sorted(maps.Keys(h)) {
		c := textproto.CanonicalMIMEHeaderKey(name)
		out[c] = append(out[c], h[name]...)
	}
	return out
}
