package oncehttp

import (
	"context"
	"net/http"

	"github.com/stagedoor/once"
)

// StoredResponse is an HTTP response as the middleware stores it, for
// operator tooling (cmd/once get and resolve): what every retry with the
// key is answered.
type StoredResponse struct {
	Status  int
	Header  http.Header
	Trailer http.Header
	Body    []byte
	// TooLarge reports that the body exceeded MaxStoredBody and was not
	// stored.
	TooLarge bool
}

// DecodeStoredResponse decodes the codec bytes of a stored value (what
// follows the outcome envelope's header) when the middleware wrote them; ok is false otherwise (a JSON value, say: the
// middleware's format byte never starts a JSON text). Body aliases
// payload.
func DecodeStoredResponse(payload []byte) (resp StoredResponse, ok bool) {
	var s storedResponse
	if len(payload) == 0 || payload[0] != storedFormat || (responseCodec{}).Unmarshal(payload, &s) != nil {
		return StoredResponse{}, false
	}
	return StoredResponse{Status: s.Status, Header: s.Header, Trailer: s.Trailer, Body: s.Body, TooLarge: s.TooLarge}, true
}

// ResolveResponse stores resp as the outcome of a held (or never
// recorded) key of the middleware, as once.Resolve does: every later
// request with the key is answered resp, with Idempotent-Replayed. scope
// must come from the Keeper the middleware uses. An empty fp keeps the
// key's stored fingerprint. Only the headers of DefaultStoreHeaders (and
// Content-Encoding, Content-Range and Vary) are kept, as the middleware
// keeps them, under their canonical names ("location" is Location). A
// status outside 200-999 (a 1xx is never a final answer) is refused with
// an *once.InvalidInputError (Field "status") and nothing is stored. The
// Keeper's outcome cap does not apply: every response a middleware stores,
// whatever its MaxStoredBody, is accepted (a response refused for its
// size would leave the key held), within the store's own limits. A
// request that is running now is left to finish (see once.Resolve).
func ResolveResponse(ctx context.Context, scope once.Scope, key string, fp once.Fingerprint, resp StoredResponse) error {
	if !validStatus(resp.Status) {
		return errStatus()
	}
	return once.Resolve(ctx, scope.With(once.WithCodec(responseCodec{}), once.WithMaxOutcomeSize(resolutionCap)), key, fp, toStored(resp), nil)
}
