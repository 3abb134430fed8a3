package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/textproto"
	"strings"
	"time"

	"github.com/stagedoor/once"
	"github.com/stagedoor/once/oncehttp"
)

type resolveCmd struct {
	target      `embed:""`
	Value       string        `placeholder:"JSON" help:"Store this JSON value as the outcome."`
	Error       string        `placeholder:"MESSAGE" help:"Store a final error with this message as the outcome."`
	Code        string        `help:"Code of the final error (with --error)."`
	Status      int           `placeholder:"CODE" help:"Store an HTTP response with this status, for a key of oncehttp's middleware (with --header, --body)."`
	Header      []string      `placeholder:"'NAME: VALUE'" help:"A header of the --status response (repeatable; the middleware's stored headers only)."`
	Body        string        `placeholder:"TEXT" help:"Body of the --status response."`
	Fingerprint string        `placeholder:"HEX" help:"Fingerprint of the request; a pending or held key must match it (default: no check, and the key keeps its stored fingerprint)."`
	Retention   time.Duration `default:"24h" help:"How long the resolved record lives."`
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
	case r.Status != 0 && (r.Status < 100 || r.Status > 999):
		return usagef("--status must be an HTTP status code (100 to 999)")
	case r.Status == 0 && (len(r.Header) > 0 || r.Body != ""):
		return usagef("--header and --body go with --status")
	case r.Value != "" && !json.Valid([]byte(r.Value)):
		return usagef("--value is not valid JSON")
	case r.Code != "" && r.Error == "":
		return usagef("--code goes with --error")
	case r.Retention <= 0:
		return usagef("--retention must be positive")
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

	scope := once.New(c.store, once.WithRetention(r.Retention)).Scope(r.Scope)
	var finalErr error
	if r.Error != "" {
		finalErr = &once.StoredError{Code: r.Code, Message: r.Error}
	}
	what := "a value"
	switch {
	case r.Status != 0:
		what = fmt.Sprintf("an HTTP %d response", r.Status)
		err = oncehttp.ResolveResponse(ctx, scope, r.Key, fp, oncehttp.StoredResponse{Status: r.Status, Header: header, Body: []byte(r.Body)})
	case finalErr != nil:
		what = "a final error"
		err = once.Resolve(ctx, scope, r.Key, fp, json.RawMessage(nil), finalErr)
	default:
		err = once.Resolve(ctx, scope, r.Key, fp, json.RawMessage(r.Value), nil)
	}
	var inProgress *once.InProgressError
	switch {
	case errors.As(err, &inProgress):
		// Resolve stores over any claim; only a reconciler's live lease on
		// a held key refuses it.
		return fmt.Errorf("a reconciler is asking about the key (its lease ends in %v); nothing was stored: retry after that, or let it resolve the key",
			inProgress.LeaseRemaining.Round(time.Millisecond))
	case errors.Is(err, once.ErrAlreadyCompleted):
		return errors.New("the key is already completed; its stored outcome was left as it was (see once get)")
	case errors.Is(err, once.ErrKeyReused):
		return errors.New("the key is bound to another fingerprint; nothing was stored")
	case err != nil:
		return err
	}
	return e.emit(struct {
		Scope    string `json:"scope"`
		Key      string `json:"key"`
		Resolved bool   `json:"resolved"`
	}{r.Scope, r.Key, true}, "resolved with "+what+"; every call with the key now replays it")
}

// parseHeaders parses "Name: value" flags.
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
		h.Add(textproto.CanonicalMIMEHeaderKey(name), strings.TrimSpace(value))
	}
	return h, nil
}
