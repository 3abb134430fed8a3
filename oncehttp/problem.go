package oncehttp

import (
	"encoding/json"
	"net/http"
	"strconv"
)

// problemKind enumerates the answers the middleware makes itself.
type problemKind uint8

const (
	probMissingKey problemKind = iota
	probInvalidKey
	probInProgress
	probKeyReused
	probBodyTooLarge
	probInvalidBody
	probUnauthorized
	probStoreUnavailable
	probResponseUnavailable
	probInternal
	probResponseTooLarge
	probInvalidInput
	probOutcomeUnknown
	probRequestFailed
	numProblems
)

type problemSpec struct {
	slug   string
	status int
	title  string
	detail string
}

var problemSpecs = [numProblems]problemSpec{
	probMissingKey: {"idempotency-key-missing", http.StatusBadRequest,
		"Idempotency key required",
		"This operation requires an idempotency key header; generate one when the user acts and send the same one with every retry."},
	probInvalidKey: {"idempotency-key-invalid", http.StatusBadRequest,
		"Invalid idempotency key",
		"The idempotency key must be sent once and be 1 to 255 printable ASCII characters."},
	probInProgress: {"request-in-progress", http.StatusConflict,
		"Request in progress",
		"A request with this idempotency key is still being processed; retry after the time in Retry-After to receive its response."},
	probKeyReused: {"idempotency-key-reused", http.StatusUnprocessableEntity,
		"Idempotency key reused",
		"This idempotency key was already used with a different request (method, path or body); use a new key for a new request."},
	probBodyTooLarge: {"request-body-too-large", http.StatusRequestEntityTooLarge,
		"Request body too large",
		"The request body exceeds the size this operation accepts."},
	probInvalidBody: {"request-body-invalid", http.StatusBadRequest,
		"Request body unreadable",
		"The request body could not be read."},
	probUnauthorized: {"unauthorized", http.StatusUnauthorized,
		"Caller not identified",
		"The caller could not be identified, so the idempotency key cannot be scoped."},
	probStoreUnavailable: {"store-unavailable", http.StatusServiceUnavailable,
		"Idempotency store unavailable",
		"The request was not processed because its idempotency key could not be checked; retry with the same key."},
	probResponseUnavailable: {"response-unavailable", http.StatusInternalServerError,
		"Stored response unavailable",
		"A request with this idempotency key was already processed, but its response cannot be replayed; it will not be processed again."},
	probResponseTooLarge: {"response-too-large", http.StatusSeeOther,
		"Response too large to replay",
		"A request with this idempotency key was already processed, with the status in original_status; its response was too large to keep, and its result is at the URI in Location. It will not be processed again."},
	probInvalidInput: {"invalid-input", http.StatusBadRequest,
		"Invalid input",
		"A value derived from this request is not a valid idempotency scope, key or fingerprint."},
	probOutcomeUnknown: {"request-outcome-unknown", http.StatusConflict,
		"Request outcome unknown",
		"A request with this idempotency key failed with an unknown outcome; it will not be processed again before the time in Retry-After, or before its outcome is established. Check the result before retrying."},
	probRequestFailed: {"request-failed", http.StatusInternalServerError,
		"Request failed",
		"The request failed with an internal error before it could answer, and may have been processed in part."},
	probInternal: {"internal-error", http.StatusInternalServerError,
		"Internal error",
		"The request was not processed because of a server error."},
}

// problem is an RFC 9457 Problem Details document.
type problem struct {
	Type   string `json:"type"`
	Title  string `json:"title"`
	Status int    `json:"status"`
	Detail string `json:"detail"`
	// OriginalStatus and Location are extension members of the answers
	// about a processed request whose response cannot be replayed: the
	// status the handler answered and where its result is.
	OriginalStatus int    `json:"original_status,omitempty"`
	Location       string `json:"location,omitempty"`
	// KeyState is an extension member of the 409 answers: "running" (the
	// first request with the key is being processed: retry after
	// Retry-After to receive its response) or "held" (its outcome is
	// unknown: a retry is not answered before Retry-After, and then runs
	// the request again). Transport retries only "running".
	KeyState string `json:"key_state,omitempty"`
}

// Values of problem.KeyState.
const (
	keyRunning = "running"
	keyHeld    = "held"
)

// problems holds the encoded documents, made once by New.
type problems struct {
	body [numProblems][]byte
	// types are kept to encode the answers whose body varies: *ScopeError
	// statuses other than 401, and unreplayable responses.
	types [numProblems]string
}

func newProblems(base string, types ProblemTypes) problems {
	uris := [numProblems]string{
		probMissingKey:          types.MissingKey,
		probInvalidKey:          types.InvalidKey,
		probInProgress:          types.InProgress,
		probKeyReused:           types.KeyReused,
		probBodyTooLarge:        types.BodyTooLarge,
		probInvalidBody:         types.InvalidBody,
		probUnauthorized:        types.Unauthorized,
		probStoreUnavailable:    types.StoreUnavailable,
		probResponseUnavailable: types.ResponseUnavailable,
		probInternal:            types.Internal,
		probResponseTooLarge:    types.ResponseTooLarge,
		probInvalidInput:        types.InvalidInput,
		probOutcomeUnknown:      types.OutcomeUnknown,
		probRequestFailed:       types.RequestFailed,
	}
	var p problems
	for k, spec := range problemSpecs {
		if uris[k] == "" {
			uris[k] = base + spec.slug
		}
		doc := problem{Type: uris[k], Title: spec.title, Status: spec.status, Detail: spec.detail}
		switch problemKind(k) {
		case probInProgress:
			doc.KeyState = keyRunning
		case probOutcomeUnknown:
			doc.KeyState = keyHeld
		}
		p.body[k] = encodeProblem(doc)
	}
	p.types = uris
	return p
}

func encodeProblem(p problem) []byte {
	b, err := json.Marshal(p)
	if err != nil { // strings and ints always marshal
		panic(err)
	}
	return append(b, '\n')
}

// write sends problem k. retryAfter, when positive, is sent as Retry-After
// in whole seconds.
func (p *problems) write(w http.ResponseWriter, k problemKind, retryAfter int) {
	p.writeBody(w, problemSpecs[k].status, p.body[k], retryAfter)
}

// writeScope sends the answer to a Scope failure with the given status.
func (p *problems) writeScope(w http.ResponseWriter, status int) {
	if status == http.StatusUnauthorized {
		p.write(w, probUnauthorized, 0)
		return
	}
	spec := problemSpecs[probUnauthorized]
	body := encodeProblem(problem{Type: p.types[probUnauthorized], Title: http.StatusText(status), Status: status, Detail: spec.detail})
	p.writeBody(w, status, body, 0)
}

// writeUnreplayable answers a retry of a processed request whose response
// was too large to store: 303 See Other to the result's URI when the
// response named one, else 500 (response-unavailable); both with the
// original status, and with the replay marker, since they stand for the
// stored answer.
func (p *problems) writeUnreplayable(w http.ResponseWriter, s *storedResponse) {
	k := probResponseUnavailable
	loc := s.resultLocation()
	if loc != "" {
		k = probResponseTooLarge
		w.Header().Set("Location", loc)
	}
	spec := problemSpecs[k]
	w.Header().Set(ReplayedHeader, "true")
	body := encodeProblem(problem{
		Type: p.types[k], Title: spec.title, Status: spec.status, Detail: spec.detail,
		OriginalStatus: s.Status, Location: loc,
	})
	p.writeBody(w, spec.status, body, 0)
}

func (p *problems) writeBody(w http.ResponseWriter, status int, body []byte, retryAfter int) {
	h := w.Header()
	h.Set("Content-Type", "application/problem+json")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	h.Set("Cache-Control", "no-store")
	if retryAfter > 0 {
		h.Set("Retry-After", strconv.Itoa(retryAfter))
	}
	w.WriteHeader(status)
	_, _ = w.Write(body)
}
