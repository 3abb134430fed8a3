package oncehttp

import (
	"log/slog"
	"net/http"

	"github.com/stagedoor/once"
)

// DefaultHeader is the request header that carries the idempotency key.
const DefaultHeader = "Idempotency-Key"

// ReplayedHeader is added, with the value "true", to every replayed
// response and to no other.
const ReplayedHeader = "Idempotent-Replayed"

// DefaultMaxBody and DefaultMaxStoredBody are the default caps on the
// request body that is fingerprinted and on the response body that is
// stored: 1 MiB each.
const (
	DefaultMaxBody       = 1 << 20
	DefaultMaxStoredBody = 1 << 20
)

// DefaultProblemBase is the prefix of the default problem type URIs. It is
// a placeholder, under the reserved ".example" domain (RFC 2606), so that
// nobody mistakes it for a real page: set Config.ProblemBase (or
// Config.ProblemTypes) to your API's documentation, where each problem's
// slug names a section, as RFC 9457 asks of type URIs.
const DefaultProblemBase = "https://stagedoor.example/problems/"

// DefaultStoreHeaders are the response headers stored and replayed by
// default: the ones a client acts on. To replay another one, list it with
// these: Config{StoreHeaders: append(slices.Clone(DefaultStoreHeaders),
// "X-Request-Id")}. Content-Encoding, Content-Range and Vary are stored
// whatever the list says (see Config.StoreHeaders).
var DefaultStoreHeaders = []string{
	"Location", "Content-Type", "Content-Language", "Content-Location",
	"ETag", "Last-Modified", "Cache-Control", "Retry-After", "Link",
}

// DefaultMethods are the request methods guarded by default.
var DefaultMethods = []string{http.MethodPost, http.MethodPatch}

// Config configures a Middleware. Only Scope is required; the zero value of
// every other field means its documented default.
type Config struct {
	// Scope returns the scope of a request's keys: the authenticated
	// principal (a user or API client id), so that another caller's key is,
	// to this caller, a key nobody has seen. Required: there is no default,
	// because any request-derived default (an IP address, a header the
	// client sets) would let one client replay another's responses. An error
	// is answered with 401 Problem Details, or with the status of a
	// *ScopeError it wraps; an empty scope with a nil error is answered
	// with 401 too. The error's text is never sent.
	Scope func(*http.Request) (string, error)

	// ValidateKey, if set, checks a key against the resource's own
	// published key format (a UUID, a prefix) after the built-in rules
	// (see Header); an error is answered with 400 Problem Details
	// (idempotency-key-invalid) and the handler does not run. The error's
	// text is never sent. Defaults to nil: every key the built-in rules
	// accept is accepted.
	ValidateKey func(key string) error

	// Header is the request header that carries the key. Defaults to
	// "Idempotency-Key". The value may be a bare key or an RFC 8941 string
	// ("quoted", as the draft writes it); the key must be 1 to 255 bytes of
	// printable ASCII (space included) and appear once, else 400.
	Header string

	// Methods lists the guarded request methods; others pass straight to
	// the next handler, untouched. Defaults to POST and PATCH.
	Methods []string

	// AllowMissingKey lets a guarded request without the header through to
	// the next handler unguarded. Defaults to false: a guarded request
	// without a key gets 400 Problem Details (missing-key), since the draft
	// lets a resource require the key and a POST that creates an order
	// should.
	AllowMissingKey bool

	// MaxBody caps the request body read for the fingerprint, in bytes; a
	// longer body gets 413 Problem Details and the handler does not run.
	// Defaults to 1 MiB when zero; negative disables the cap, which lets any
	// client make the server buffer any amount of memory.
	MaxBody int64

	// Fingerprint computes the request fingerprint. Defaults to a
	// hashers.RequestHasher with MaxBody: SHA-256 over the method, the
	// request target (the escaped path and the canonical query, so that
	// "?b=2&a=1" is "?a=1&b=2" but "?status=202" is not "?status=201") and
	// the body's raw bytes, with the body restored for the handler: a JSON
	// body re-serialised by a retry is another request (422), unless you
	// set hashers.RequestHasher{MaxBody: n, Body: hashers.JSON}.Hash here,
	// whose digest ignores key order and whitespace. An error wrapping
	// hashers.ErrBodyTooLarge or *http.MaxBytesError gets 413, any other
	// error 400; its text is never sent. A fingerprint over 64 bytes is a
	// programming error and gets 500.
	Fingerprint func(*http.Request) (once.Fingerprint, error)

	// MaxStoredBody caps the response body that is stored, in bytes.
	// Defaults to 1 MiB when zero; must not be negative. A larger response
	// is still sent in full to the client that caused it, and the handler
	// never runs again for the key; what is stored is its status and
	// stored headers without the body. A retry then learns that the request
	// was processed and where its result is: a response that named its
	// result (Content-Location, else Location) is replayed as 303 See Other
	// to that URI, with a Problem Details body (response-too-large) that
	// gives the original status; one that named nothing gets 500 Problem
	// Details (response-unavailable) with the original status. Give large
	// responses a Location.
	// The middleware sets the Keeper's outcome cap for its own calls to
	// MaxStoredBody plus 64 KiB for the stored headers (math.MaxInt when
	// that sum would overflow), so that a response within MaxStoredBody
	// fits; a response whose stored headers and trailers exceed that room
	// is stored as a too-large one, without its body, and replayed as
	// above (with only its Content-Location or Location when even its
	// headers do not fit, and with none when that one does not either).
	MaxStoredBody int

	// StoreHeaders lists the response headers (and trailers) that are
	// stored and replayed; those the handler set after WriteHeader are not
	// part of the response, as in net/http. Content-Encoding,
	// Content-Range and Vary are stored and replayed whether listed or
	// not: the stored body is the bytes they describe (a gzip body
	// replayed without its Content-Encoding would read as garbage).
	// Defaults to DefaultStoreHeaders (Location, Content-Type,
	// Content-Language, Content-Location, ETag, Last-Modified, Cache-Control,
	// Retry-After, Link). Set-Cookie and hop-by-hop headers (Connection,
	// Keep-Alive, Transfer-Encoding, Upgrade, TE, Trailer, Proxy-*, and any
	// header the response's Connection header names) are never stored, even
	// when listed: a replay must not hand one session's cookie to a retry.
	StoreHeaders []string

	// StoreStatus decides, per status, whether a handler's response below
	// 500 is stored and replayed to retries (true) or released (false: the
	// first client gets it, the key is freed and the next request with it
	// runs the handler again). A handler overrides it for one response
	// with SkipStore or ForceStore. Defaults to DefaultStoreStatus: every
	// answer is stored except validation failures (400, 422) and transient
	// answers (408, 425, 429). 5xx responses are never stored, whatever it
	// says (see OnServerError).
	StoreStatus func(status int) bool

	// OnServerError decides what a 5xx response does to the key; 5xx
	// responses are never stored either way. Release frees the key at
	// once, so the next retry runs the handler again; Hold keeps it held
	// for the Keeper's hold period (once.WithHoldFor; one lease by
	// default), and duplicates get 409 meanwhile. Defaults to
	// ReleaseOn(503): a 503 is released (the request was not processed),
	// every other 5xx held (its outcome is unknown), as the table in the
	// package documentation says. A handler's panic is settled as a 500:
	// OnServerError(500) decides.
	OnServerError func(status int) ServerErrorPolicy

	// Options are applied to the scope of every call (once.Scope.With),
	// e.g. once.WithWait(2*time.Second) so that a duplicate waits for the
	// first request's response instead of getting 409, or a per-route
	// once.WithLease. New refuses, with a *ConfigError (Field "Options"),
	// one the core would refuse on every call (once.WithWait(-1), a
	// non-positive lease). Defaults to none: the Keeper's policy applies. The
	// middleware sets its own codec (responses are stored in a compact
	// binary form), the outcome size cap (see MaxStoredBody) and the
	// default error classifier after these, so those three cannot be
	// overridden here; it also adds observers (beside yours, which still
	// sees every event) that tell FirstExecution about takeovers and log
	// store failures (see Logger).
	Options []once.Option

	// Logger receives one line, at Error level, for each store failure
	// that settles a request: a failed claim (the client got 503
	// store-unavailable), release, or recording of the response (the
	// client got it; the key runs the handler again after its lease); under
	// HandlerTx, a failed begin, and a response not committed with the
	// handler's writes (the client got 503 store-unavailable). The
	// line has the store's error (attribute "error"), the operation
	// ("op") and what it did to the request ("effect"), never the key or
	// the scope. Defaults to slog.Default(), as it is when the line is
	// logged. An observer of yours (Options, or the Keeper's) sees these
	// failures too, but a transaction's begin and commit, as
	// once.EventStoreError, EventUnrecorded and EventHeld events; to log
	// them only there, set Logger to
	// slog.New(slog.DiscardHandler).
	Logger *slog.Logger

	// ProblemBase is the prefix of the problem type URIs that ProblemTypes
	// leaves empty. Defaults to "https://stagedoor.example/problems/".
	ProblemBase string

	// ProblemTypes overrides individual problem type URIs.
	ProblemTypes ProblemTypes
}

// ProblemTypes holds the "type" URI of each Problem Details answer. An empty
// field defaults to Config.ProblemBase followed by the slug in its comment,
// e.g. "https://stagedoor.example/problems/request-in-progress".
type ProblemTypes struct {
	// MissingKey (400): a guarded request without a key. Slug
	// "idempotency-key-missing". Point it at your API documentation, as the
	// draft asks.
	MissingKey string
	// InvalidKey (400): an empty, too long, non-printable or repeated key.
	// Slug "idempotency-key-invalid".
	InvalidKey string
	// InProgress (409): the first request with the key is still running.
	// Slug "request-in-progress"; the document's key_state member is
	// "running".
	InProgress string
	// OutcomeUnknown (409): the key is held: its request failed with an
	// unknown outcome (a 5xx under the Hold policy, a panic, a handler's
	// once.Hold) and nothing runs. Slug "request-outcome-unknown"; the
	// document's key_state member is "held".
	OutcomeUnknown string
	// KeyReused (422): the key was used with another method, path, query
	// or body. Slug "idempotency-key-reused".
	KeyReused string
	// BodyTooLarge (413): the request body exceeds MaxBody. Slug
	// "request-body-too-large".
	BodyTooLarge string
	// InvalidBody (400): the body could not be read or fingerprinted. Slug
	// "request-body-invalid".
	InvalidBody string
	// Unauthorized (401, or a *ScopeError's status): Scope failed. Slug
	// "unauthorized".
	Unauthorized string
	// StoreUnavailable (503): the idempotency store failed; the handler did
	// not run. Slug "store-unavailable".
	StoreUnavailable string
	// ResponseUnavailable (500): the key's request was processed but its
	// response cannot be replayed (it was too large to store and named no
	// URI for its result, or can no longer be decoded). Slug
	// "response-unavailable".
	ResponseUnavailable string
	// ResponseTooLarge (303 See Other): the key's request was processed,
	// its response was too large to store, and it named where its result
	// is (Location). Slug "response-too-large".
	ResponseTooLarge string
	// InvalidInput (400): a nested once.Do refused its input (see
	// WriteError). Slug "invalid-input".
	InvalidInput string
	// RequestFailed (500): the handler panicked before its response was
	// sent; the request may have been processed in part. Slug
	// "request-failed".
	RequestFailed string
	// Internal (500): the request was not processed because of a server
	// error, e.g. Scope returned a name the core rejects (over 255 bytes or
	// with control characters). Slug "internal-error".
	Internal string
}

// DefaultStoreStatus is the default Config.StoreStatus: it stores every
// status below 500 but the validation failures (400, 422), which the client
// corrects, and the transient answers (408, 425, 429), which the same
// request outgrows (see the table in the package documentation). A 402
// card decline, a 404, a 409 business conflict are answers to the intent
// and are stored. 1xx responses are never final and 5xx never stored (see
// Config.OnServerError).
func DefaultStoreStatus(status int) bool {
	switch status {
	case http.StatusBadRequest, http.StatusUnprocessableEntity,
		http.StatusRequestTimeout, http.StatusTooEarly, http.StatusTooManyRequests:
		return false
	}
	return status < 500
}

// ServerErrorPolicy says what a 5xx response does to its key.
type ServerErrorPolicy uint8

const (
	// Hold keeps the key held for the Keeper's hold period (once.Hold,
	// once.WithHoldFor; one lease by default): the outcome is unknown, so
	// duplicates get 409 until then and the next request after the hold
	// runs the handler again — or, with once.HoldUntilResolved, only a
	// resolution with ResolveResponse, a reconcile.Job made by NewReconciler
	// (or cmd/once's resolve --status) ends it. (once.Resolve and a
	// reconcile.Job of your own store a value in the Keeper's
	// codec, which the middleware cannot replay: every retry would get
	// 500 response-unavailable.) The default for every 5xx but 503.
	Hold ServerErrorPolicy = iota
	// Release frees the key at once: the next request with it runs the
	// handler again. Safe only when the failed request did nothing durable,
	// or its downstream call carries a once.DerivedKey. The default for
	// 503.
	Release
)

// ReleaseOn returns an OnServerError policy that releases the key for the
// listed statuses and holds it for every other 5xx. The default policy is
// ReleaseOn(503); ReleaseOn() holds every 5xx.
func ReleaseOn(statuses ...int) func(status int) ServerErrorPolicy {
	set := make(map[int]bool, len(statuses))
	for _, s := range statuses {
		set[s] = true
	}
	return func(status int) ServerErrorPolicy {
		if set[status] {
			return Release
		}
		return Hold
	}
}
