package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/textproto"
	"slices"
	"strings"
	"time"

	"github.com/stagedoor/once"
	"github.com/stagedoor/once/backends"
	"github.com/stagedoor/once/oncehttp"
)

// minRetention is the shortest --retention resolve takes without --yes: a
// resolved record that expires at once lets the next call run the held
// (outcome unknown) effect again.
const minRetention = time.Minute

type resolveCmd struct {
	target      `embed:""`
	Value       string        `placeholder:"JSON" help:"Store this JSON value as the outcome: the JSON encoding of the app's result type T (the app must use the default JSON codec)."`
	Error       string        `placeholder:"MESSAGE" help:"Store a final error with this message as the outcome."`
	Code        string        `help:"Code of the final error (with --error): the code the app registered its error type under, with --data."`
	Data        string        `placeholder:"JSON" help:"JSON of the registered error type's fields (with --error and --code; the app must use the JSON codec), so a replay returns that type."`
	Status      int           `placeholder:"CODE" help:"Store an HTTP response with this status (200 to 599), for a key of oncehttp's middleware (with --header, --body)."`
	Header      []string      `placeholder:"'NAME: VALUE'" help:"A header of the --status response (repeatable; only oncehttp.DefaultStoreHeaders, the ones a replay sends)."`
	Body        string        `placeholder:"TEXT" help:"Body of the --status response."`
	Fingerprint string        `placeholder:"HEX" help:"Fingerprint of the request; a pending or held key must match it (default: no check, and the key keeps its stored fingerprint)."`
	Retention   time.Duration `default:"24h" help:"How long the resolved record lives (at least 1m without --yes); after it, the key is a new intent."`
	Yes         bool          `help:"Confirm a --retention under 1m."`
}

// resolveView is what resolve prints with --json.
type resolveView struct {
	Scope    string `json:"scope"`
	Key      string `json:"key"`
	Resolved bool   `json:"resolved"`
	// Stored is "value", "final_error" or "http_response".
	Stored      string `json:"stored"`
	RetentionMS int64  `json:"retention_ms"`
}

func (r *resolveCmd) Run(e *env) error {
	if err := r.validate(); err != nil {
		return err
	}
	given := 0
	for _, set := range []bool{r.Value != "", r.Error != "", r.Status != 0} {
		if set {
			given++
		}
	}
	header, err := parseHeaders(r.Header)
	if err != nil {
		return err
	}
	switch {
	case given != 1:
		return usagef("resolve needs exactly one of --value JSON, --error MESSAGE and --status CODE")
	case r.Status != 0 && (r.Status < 200 || r.Status > 599):
		// oncehttp replays 200 to 599: a 1xx is answered as an
		// unavailable response, a code above 599 is not an HTTP status.
		return usagef("--status must be 200 to 599 (the statuses oncehttp replays)")
	case r.Status == 0 && (len(r.Header) > 0 || r.Body != ""):
		return usagef("--header and --body go with --status")
	case r.Body != "" && (r.Status == http.StatusNoContent || r.Status == http.StatusNotModified):
		return usagef("--body with --status %d: a %d response has no body, a replay would drop it", r.Status, r.Status)
	case r.Value != "" && !json.Valid([]byte(r.Value)):
		return usagef("--value is not valid JSON")
	case r.Code != "" && r.Error == "":
		return usagef("--code goes with --error")
	case r.Data != "" && (r.Error == "" || r.Code == ""):
		return usagef("--data goes with --error and --code (the code the app registered the error type under)")
	case r.Data != "" && !json.Valid([]byte(r.Data)):
		return usagef("--data is not valid JSON")
	case r.Retention <= 0:
		return usagef("--retention must be positive")
	case r.Retention < minRetention && !r.Yes:
		return usagef("--retention %v is under %v: the resolved record would expire almost at once, and the next call with the key would run its effect again; give --yes to store it anyway", r.Retention, minRetention)
	}
	fp, err := parseFingerprint(r.Fingerprint)
	if err != nil {
		return err
	}
	k, err := e.cli.selectBackend()
	if err != nil {
		return err
	}
	ctx, c, done, err := e.connect(k)
	if err != nil {
		return err
	}
	defer done()

	opts := []once.Option{once.WithRetention(r.Retention)}
	var finalErr error
	if r.Data != "" {
		opts = append(opts, once.RegisterError[*dataError](r.Code))
		finalErr = &dataError{code: r.Code, msg: r.Error, data: json.RawMessage(r.Data)}
	} else if r.Error != "" {
		finalErr = &once.StoredError{Code: r.Code, Message: r.Error}
	}
	scope := once.New(c.store, opts...).Scope(r.Scope)
	if resolveHook != nil {
		resolveHook()
	}
	var what, stored string
	switch {
	case r.Status != 0:
		what, stored = fmt.Sprintf("an HTTP %d response (%d header(s), %d-byte body)", r.Status, len(header), len(r.Body)), "http_response"
		err = oncehttp.ResolveResponse(ctx, scope, r.Key, fp, oncehttp.StoredResponse{Status: r.Status, Header: header, Body: []byte(r.Body)})
	case finalErr != nil:
		what, stored = "a final error", "final_error"
		if r.Code != "" {
			what += " (code " + quoteText(r.Code) + ")"
		}
		if r.Data != "" {
			what += " with data for the app's error type registered under that code (JSON codec)"
		}
		err = once.Resolve(ctx, scope, r.Key, fp, json.RawMessage(nil), finalErr)
	default:
		what, stored = "a JSON value (decoded into the app's type with the JSON codec)", "value"
		err = once.Resolve(ctx, scope, r.Key, fp, json.RawMessage(r.Value), nil)
	}
	var inProgress *once.InProgressError
	if errors.As(err, &inProgress) && !inProgress.Held {
		// Refused by the owner's live lease, or by the store's lock
		// timeout, which looks the same; a read tells them apart (it does
		// not see a claim a transaction holds uncommitted).
		if left := liveLease(ctx, c, r.Scope, r.Key); left > 0 {
			return usagef("the key is pending and its owner's lease is live (%v left): it is running its function now, and nothing was stored. Wait for it: it completes the key, or, if its process died, its lease lapses and resolve then stores your outcome", left.Round(time.Millisecond))
		}
	}
	switch {
	case errors.As(err, &inProgress) && inProgress.Held:
		// A reconciler's live lease on a held key refuses a resolve.
		return fmt.Errorf("a reconciler is asking about the key (its lease ends in %v); nothing was stored: retry after that, or let it resolve the key",
			inProgress.LeaseRemaining.Round(time.Millisecond))
	case errors.As(err, &inProgress):
		// The store could not reach the key in time: a SQL store gave up
		// waiting for a transaction that holds the key uncommitted.
		return errors.New("the key is locked by a transaction that has not committed (a once.DoTx still running, or stuck); the store gave up waiting and nothing was stored: retry later")
	case errors.Is(err, once.ErrAlreadyCompleted):
		return errors.New("the key is already completed; its stored outcome was left as it was (see once get)")
	case errors.Is(err, once.ErrKeyReused):
		return errors.New("the key is bound to another fingerprint; nothing was stored")
	case err != nil:
		return err
	}
	return e.emit(resolveView{r.Scope, r.Key, true, stored, r.Retention.Milliseconds()},
		fmt.Sprintf("resolved: stored %s, kept for %v; calls with the key replay it until then, and after it the key is a new intent", what, r.Retention))
}

// resolveHook, when set (by tests), runs just before the Resolve.
var resolveHook func()

// liveLease returns the lease left on the pending record of (scope, key),
// or 0 when it is not pending with a live lease (or the read failed).
func liveLease(ctx context.Context, c *conn, scope, key string) time.Duration {
	rec, err := c.admin.Get(ctx, scope, key)
	if err != nil || rec.State != backends.StatePending {
		return 0
	}
	return max(rec.LeaseRemaining, 0)
}

// dataError is a final error given with --data: a registered error type
// (RegisterError under its --code) whose JSON encoding is the flag's JSON,
// so the envelope stores it as the app's type's data.
type dataError struct {
	code, msg string
	data      json.RawMessage
}

func (e *dataError) Error() string                { return e.msg }
func (e *dataError) ErrorCode() string            { return e.code }
func (e *dataError) MarshalJSON() ([]byte, error) { return e.data, nil }

// parseHeaders parses "Name: value" flags. Only the headers oncehttp
// stores and replays (oncehttp.DefaultStoreHeaders) are taken: another
// one would be dropped silently, so it is a usage error.
func parseHeaders(flags []string) (http.Header, error) {
	if len(flags) == 0 {
		return nil, nil
	}
	h := http.Header{}
	for _, f := range flags {
		name, value, ok := strings.Cut(f, ":")
		name = strings.TrimSpace(name)
		if !ok || name == "" || strings.ContainsAny(name, " \t\r\n") || strings.ContainsAny(value, "\r\n") {
			return nil, usagef("--header must be 'Name: value'")
		}
		name = textproto.CanonicalMIMEHeaderKey(name)
		if !slices.Contains(oncehttp.DefaultStoreHeaders, name) {
			return nil, usagef("--header %s is not one oncehttp stores and replays; the headers it replays are %s", quoteText(name), strings.Join(oncehttp.DefaultStoreHeaders, ", "))
		}
		h.Add(name, strings.TrimSpace(value))
	}
	return h, nil
}
