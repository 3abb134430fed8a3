// Package oncehttp is both sides of the IETF httpapi Idempotency-Key draft
// for net/http: Middleware makes a POST (or PATCH) happen once per
// idempotency key on the server, and Transport, on the client, sends one
// key per intent and retries safely with it. They share the header names
// and the key rules, so they live in one package.
//
// # Server
//
//	m, err := oncehttp.New(keeper, oncehttp.Config{
//		Scope: func(r *http.Request) (string, error) { return userID(r.Context()) },
//	})
//	mux.Handle("POST /orders", m.Handler(placeOrder))
//
// The key comes from the Idempotency-Key request header, the scope from a
// function you provide (the authenticated principal), and the request
// fingerprint is a SHA-256 over the method, the request target (escaped
// path and canonical query) and the body's raw bytes (package hashers): a
// retry whose JSON body was re-serialised (another key order, other
// whitespace) is another request, answered 422. For a digest of the JSON
// value instead, set Config.Fingerprint to
// hashers.RequestHasher{Body: hashers.JSON}.Hash.
//
// # What a client receives
//
//   - First request with a key: the handler runs; its response is sent as
//     written and, if Config.StoreStatus says so (see below), stored:
//     status, body, the allow-listed headers and trailers of
//     Config.StoreHeaders.
//   - Same key, same request, completed: the stored response, its status
//     and body byte for byte, with its stored headers (see Headers) and
//     "Idempotent-Replayed: true". The handler does not run. A stored 4xx
//     (a 402 card decline) is replayed like a 201: it is the answer to the
//     intent.
//   - Same key, another method, path, query or body: 422 Problem Details
//     (idempotency-key-reused), never the stored response.
//   - Same key while the first request runs: 409 Problem Details
//     (request-in-progress, key_state "running") with Retry-After: once's
//     hint (once.InProgressError.RetryAfter: the owner's lease left, at
//     most 1 s, since the owner usually answers sooner), in whole seconds,
//     at least 1. A duplicate that comes back before the answer is ready
//     is told to wait again; to make duplicates wait for the answer
//     instead, pass once.WithWait in Config.Options.
//   - Same key while it is held (after a 5xx of unknown outcome, or a
//     panic: see the table below): 409 Problem Details
//     (request-outcome-unknown, key_state "held") with Retry-After: the
//     hold left, after which a request with the key runs the handler
//     again; no Retry-After when the key is held until resolved
//     (once.HoldUntilResolved), since only a resolution ends that hold.
//     Transport returns this 409 to its caller instead of waiting.
//   - A response too large to store (Config.MaxStoredBody): 303 See Other
//     to the Location (or Content-Location) it gave, with the original
//     status in a Problem Details body (response-too-large); 500
//     (response-unavailable) if it gave none. The handler does not run
//     again.
//   - Missing key (unless Config.AllowMissingKey), a malformed key or one
//     Config.ValidateKey refuses: 400. A body over Config.MaxBody: 413.
//     A body that cannot be read in full (the client went away while
//     sending it): 400 (request-body-invalid), before the key is claimed,
//     so nothing is stored and a retry with the key runs the handler (a
//     Config.Fingerprint that does not read the body leaves the read, and
//     the answer to its failure, to the handler). Scope failure: 401 (or
//     the status of a *ScopeError). Store failure: 503, never the store's
//     error text, which is logged instead (Config.Logger, slog.Default()
//     by default).
//
// Every answer of the middleware's own is an RFC 9457
// application/problem+json document with type, title, status and detail;
// none is stored. The type URIs default to placeholders under
// DefaultProblemBase, to be pointed at your documentation.
//
// # What each status does to the key
//
// As Stripe does, an answer is stored only once the endpoint started
// executing; the key of an answer given before anything happened is
// released, so that the client's retry runs the handler again; and the key
// of an answer whose outcome is unknown is held. With the defaults
// (Config.StoreStatus DefaultStoreStatus, Config.OnServerError
// ReleaseOn(503)), this is the whole policy:
//
//	the handler answers          the key is            a retry with the key gets
//	2xx, 3xx, 4xx but those      stored                the stored response,
//	  below                                              replayed
//	400, 422 (validation)        released              a new run (the corrected
//	                                                     request)
//	408, 425, 429 (transient)    released              a new run
//	503 (not processed)          released              a new run
//	500, 502, 504, any other     held for the hold     409 request-outcome-unknown,
//	  5xx, a panic (outcome        (once.WithHoldFor;    Retry-After the hold left
//	  unknown)                     one lease by          (none if held until
//	                               default)              resolved); after the hold,
//	                                                     a new run
//
// A 503 says that the server did not process the request (RFC 9110
// §15.6.4: overloaded, a circuit breaker open, a dependency down before
// anything was done), so its retry must run. A 504 (a downstream call
// timed out after the request left), a 502 (the downstream answered
// something unreadable) and a 500 (the handler failed, perhaps after
// acting) may each follow an effect: running the handler again could
// repeat it. So with the defaults, the Transport and stripe-go, each with
// its own default settings, retry a transient 503 to the handler's next
// answer, and retry a 504 only to the held key's 409, which they return
// (the Transport at once, stripe-go after its two retries): the handler
// runs once. A handler whose 503 follows an effect (its downstream
// service answered 503 after the request left) must answer 502 or 504
// instead, or hold the 503 with Config.OnServerError.
//
// A handler overrides the policy for the response it is writing with
// SkipStore(r.Context()) (an answer given before anything durable happened)
// or ForceStore (neither changes a 5xx). WriteError answers an error from
// the handler's own nested once.Do with the right problem (409, 422, 400,
// 503) and does not store it.
//
// # Headers
//
// The response's header is the header map as it was at WriteHeader (or
// the first Write), as net/http sends it: a header set later is dropped,
// except trailers (declared in "Trailer", or set with http.TrailerPrefix),
// which follow the body. The first client gets every header; a replay gets
// the headers and trailers of Config.StoreHeaders (DefaultStoreHeaders:
// Location, Content-Type, Content-Language, Content-Location, ETag,
// Last-Modified, Cache-Control, Retry-After, Link), plus the
// representation headers the stored bytes depend on (Content-Encoding,
// Content-Range, Vary), whatever StoreHeaders says, plus Content-Length
// and "Idempotent-Replayed: true". Set-Cookie and hop-by-hop headers are
// never stored. To replay another header, list it with the defaults:
// Config{StoreHeaders: append(slices.Clone(DefaultStoreHeaders),
// "X-Request-Id")}.
//
// # Inside the handler
//
// Key, ScopeName and FirstExecution tell the handler which key and scope
// it runs for, and whether it runs after a takeover of an earlier,
// unfinished execution, so that it can derive the keys of its own
// downstream calls (once.DerivedKey) and look for partial work.
//
// # In a transaction
//
// On a SQL store, HandlerTx runs the handler in the transaction that
// claims the key and stores its response (once.DoTx), and Tx gives the
// handler that transaction: its rows and its stored response commit
// together or not at all.
//
//	mux.Handle("POST /orders", oncehttp.HandlerTx(m, store.BeginTx, placeOrder))
//
//	tx, _ := oncehttp.Tx[pgx.Tx](r.Context()) // in placeOrder
//
// # Panics
//
// A handler that panics may have acted first (charged, then failed to
// render), so a panic is settled as a 500 of unknown outcome: the
// middleware recovers it, logs it as net/http does (with the stack, to the
// Server's ErrorLog, else the log package), applies OnServerError(500) to
// the key (Hold by default: retries get 409 request-outcome-unknown until
// the hold ends), and answers 500 Problem Details (request-failed). It
// does not panic again: net/http would abort the connection, which
// clients retry with the same key (Transport, and net/http's own
// Transport on a reused connection). The core's tracer and observers see
// the panic all the same: the held 500 wraps a *once.PanicError, so the
// call's once.EventDoEnd has Panicked set (onceotel's OutcomePanic)
// and the once.EventExecuted's FnErr holds it; the held record keeps the
// 500's message and no code, whatever the panic value. Nothing of the
// buffered response is sent (its representation headers, Location and
// cookies are dropped; headers set by outer middleware stay) and nothing
// is stored. A panic
// with http.ErrAbortHandler, or one after the response started streaming
// (see Buffering), is settled the same way and then aborts the connection
// (the middleware panics with http.ErrAbortHandler, which net/http does
// not log), so that the client does not take a partial response for a
// complete one.
//
// # Buffering
//
// The handler writes into a buffer, so that the response can be stored
// before the client sees it; Flush is a no-op while buffering. A response
// body that grows past Config.MaxStoredBody stops being buffered: it is
// streamed to the client from then on (Flush works), and the key records
// its status and headers without the body (see above). Hijacking is
// refused (http.ErrNotSupported): a hijacked connection has no response to
// store. http.ResponseController reaches the underlying writer for
// deadlines and full duplex through Unwrap.
//
// # Client
//
//	client := oncehttp.NewClient(&oncehttp.Transport{})
//	ctx = oncehttp.WithKey(ctx, once.DerivedKey("order", orderID))
//	req, _ := http.NewRequestWithContext(ctx, "POST", url, bytes.NewReader(body))
//	resp, err := client.Do(req) // retried with the same key and body
//	replayed := oncehttp.Replayed(resp)
//
// Transport attaches the key (the request's header, WithKey's, or one made
// per request), retries connection errors, 429, 502, 503 and 504 (and
// another server's 409 with Retry-After) with Retry-After or capped
// exponential backoff with jitter, within MaxAttempts and the context's
// deadline, polls the running 409 (key_state "running") at its
// Retry-After for at most MaxInProgressWait in all, and never retries a
// final answer (400, 402, 422, a held key's 409, a handler's own 409…).
// See Transport.
package oncehttp
