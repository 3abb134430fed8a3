package main

import (
	"encoding/json"
	"errors"
	"time"

	"github.com/stagedoor/once"
)

type resolveCmd struct {
	target      `embed:""`
	Value       string        `placeholder:"JSON" help:"Store this JSON value as the outcome."`
	Error       string        `placeholder:"MESSAGE" help:"Store a final error with this message as the outcome."`
	Code        string        `help:"Code of the final error (with --error)."`
	Fingerprint string        `placeholder:"HEX" help:"Fingerprint of the request; a pending key must match it (default: no check, the stored one is kept)."`
	Retention   time.Duration `default:"24h" help:"How long the resolved record lives."`
}

func (r *resolveCmd) Run(e *env) error {
	if err := r.validate(); err != nil {
		return err
	}
	switch {
	case (r.Value == "") == (r.Error == ""):
		return usagef("resolve needs exactly one of --value JSON and --error MESSAGE")
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
	err = once.Resolve(ctx, scope, r.Key, fp, json.RawMessage(r.Value), finalErr)
	switch {
	case errors.Is(err, once.ErrAlreadyCompleted):
		return errors.New("the key is already completed; its stored outcome was left as it was (see once get)")
	case errors.Is(err, once.ErrKeyReused):
		return errors.New("the key is bound to another fingerprint; nothing was stored")
	case err != nil:
		return err
	}
	what := "a value"
	if finalErr != nil {
		what = "a final error"
	}
	return e.emit(struct {
		Scope    string `json:"scope"`
		Key      string `json:"key"`
		Resolved bool   `json:"resolved"`
	}{r.Scope, r.Key, true}, "resolved with "+what+"; every call with the key now replays it")
}
