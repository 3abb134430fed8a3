// Package oncehttp is net/http middleware that makes a POST (or PATCH)
// happen once per idempotency key, as the IETF httpapi Idempotency-Key
// draft describes: the key comes from the Idempotency-Key request header,
// the scope from a function you provide (the authenticated principal), and
// the request fingerprint is a SHA-256 over the method, the path and the
// body (package hashers).
//
//	m, err := oncehttp.New(keeper, oncehttp.Config{
//		Scope: func(r *http.Request) (string, error) { return userID(r.Context()) },
//	})
//	mux.Handle("POST /orders", m.Handler(placeOrder))
//
// # What a client receives
//
//   - First request with a key: the handler runs; its response is sent as
//     written and, unless it is a 5xx, stored (status, body and the
//     allow-listed headers of Config.StoreHeaders).
//   - Same key, same request, completed: the stored response, byte for byte,
//     with "Idempotent-Replayed: true". The handler does not run. A stored 4xx
//     (a 402 card decline) is replayed like a 201: it is the answer to the
//     intent.
//   - Same key, another method, path or body: 422 Problem Details
//     (idempotency-key-reused), never the stored response.
//   - Same key while the first request runs, or while a 5xx is held: 409
//     Problem Details (request-in-progress) with Retry-After in whole
//     seconds, at least 1.
//   - Missing key (unless Config.AllowMissingKey) or a malformed key: 400.
//     A body over Config.MaxBody: 413. Scope failure: 401 (or the status of
//     a *ScopeError). Store failure: 503, never the store's error text.
//
// Every error answer is an RFC 9457 application/problem+json document with
// type, title, status and detail; none is stored.
//
// # Server errors
//
// A 5xx is not an answer to the intent (a 504 after the payment provider
// timed out means "unknown"), so it is never stored. By default the key is
// held: it stays in progress until the Keeper's lease ends and duplicates
// get 409 meanwhile, as once.Hold does. Config.OnServerError can release the
// key at once instead for statuses where nothing happened (a 503 from an
// open circuit breaker), so that the next retry runs the handler again.
//
// # Panics
//
// If the handler panics, once releases the claim (the next retry runs the
// handler again) and the panic continues unchanged up to net/http, which
// recovers it and aborts the connection. Nothing of the buffered response
// is sent and nothing is stored.
//
// # Buffering
//
// The handler writes into a buffer, so that the response can be stored
// before the client sees it; Flush is a no-op while buffering. A response
// body that grows past Config.MaxStoredBody stops being buffered: it is
// streamed to the client from then on (Flush works), and the key records
// only that the response was too large, so a retry gets a 500 Problem
// Details (response-unavailable) and the handler does not run again.
// Hijacking is refused (http.ErrNotSupported): a hijacked connection has no
// response to store. http.ResponseController reaches the underlying
// writer for deadlines and full duplex through Unwrap.
package oncehttp
