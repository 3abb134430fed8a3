package main

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"

	"github.com/stagedoor/once/backends"
	"github.com/stagedoor/once/internal/checkpoints"
	"github.com/stagedoor/once/internal/envelope"
	"github.com/stagedoor/once/oncehttp"
)

type getCmd struct {
	target `embed:""`
}

// recordView is what get prints: JSON with --json, text otherwise.
type recordView struct {
	Scope string `json:"scope"`
	Key   string `json:"key"`
	// State is "absent", "pending", "held" or "completed".
	State       string `json:"state"`
	Fingerprint string `json:"fingerprint,omitempty"` // hex
	// LeaseRemainingMS is set for a pending record (the owner's lease) and
	// a held one (a reconciler's lease); negative once the lease has
	// lapsed.
	LeaseRemainingMS *int64 `json:"lease_remaining_ms,omitempty"`
	// AgeMS is how long a pending record has been claimed, a held one held.
	AgeMS *int64 `json:"age_ms,omitempty"`
	// Hold* and Held* describe a held record.
	HoldRemainingMS   *int64 `json:"hold_remaining_ms,omitempty"`
	HoldUntilResolved bool   `json:"hold_until_resolved,omitempty"`
	HeldCode          string `json:"held_code,omitempty"`
	HeldMessage       string `json:"held_message,omitempty"`
	// HTTP is set for a response stored by oncehttp.
	HTTP        *httpView `json:"http,omitempty"`
	ExpiresInMS int64     `json:"expires_in_ms,omitempty"`
	OutcomeSize int       `json:"outcome_size,omitempty"`
	// OutcomeKind is "value", "error", "too_large" or "undecodable".
	OutcomeKind string `json:"outcome_kind,omitempty"`
	// Outcome is the value's JSON (when it is JSON), the error as
	// {"code", "message", "data"}, or a too-large value's {"size", "limit"}.
	Outcome json.RawMessage `json:"outcome,omitempty"`
	// OutcomeRaw is the payload (base64 in JSON) when it is not JSON.
	OutcomeRaw []byte `json:"outcome_raw,omitempty"`
	// Steps are the intent's checkpoints (once.Step), in the order they
	// were first written.
	Steps []stepView `json:"steps,omitempty"`
	// StepsRaw is the checkpoints (base64 in JSON) when they do not parse.
	StepsRaw []byte `json:"steps_raw,omitempty"`
}

// stepView is one checkpoint: its outcome is described as the record's is.
type stepView struct {
	Name string `json:"name"`
	// State is "done" (its outcome is stored) or "started" (an at-most-once
	// step that began and never finished).
	State       string          `json:"state"`
	OutcomeSize int             `json:"outcome_size,omitempty"`
	OutcomeKind string          `json:"outcome_kind,omitempty"`
	Outcome     json.RawMessage `json:"outcome,omitempty"`
	OutcomeRaw  []byte          `json:"outcome_raw,omitempty"`
}

func (g *getCmd) Run(e *env) error {
	if err := g.validate(); err != nil {
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
	rec, err := c.admin.Get(ctx, g.Scope, g.Key)
	if err != nil {
		return err
	}
	v := newRecordView(g.Scope, g.Key, rec)
	return e.emit(v, v.text()...)
}

func newRecordView(scope, key string, rec backends.Record) recordView {
	v := recordView{Scope: scope, Key: key, State: "absent"}
	if rec.State == 0 {
		return v
	}
	v.State = rec.State.String()
	v.Steps, v.StepsRaw = newStepViews(rec.Steps)
	v.Fingerprint = hex.EncodeToString(rec.Fingerprint)
	v.ExpiresInMS = rec.ExpiresIn.Milliseconds()
	if rec.State != backends.StateCompleted {
		lease, age := rec.LeaseRemaining.Milliseconds(), rec.Age.Milliseconds()
		v.LeaseRemainingMS, v.AgeMS = &lease, &age
		if rec.State == backends.StateHeld {
			hold := rec.Held.Remaining.Milliseconds()
			v.HoldRemainingMS, v.HoldUntilResolved = &hold, rec.Held.Unbounded()
			v.HeldCode, v.HeldMessage = rec.Held.Code, rec.Held.Message
		}
		return v
	}
	v.OutcomeSize = len(rec.Outcome)
	parsed, err := envelope.Parse(rec.Outcome)
	if err == nil && parsed.Kind == envelope.KindValue {
		if resp, ok := oncehttp.DecodeStoredResponse(parsed.Value); ok {
			v.OutcomeKind, v.HTTP = parsed.Kind.String(), newHTTPView(resp)
			return v
		}
	}
	v.OutcomeKind, v.Outcome, v.OutcomeRaw = describeOutcome(rec.Outcome)
	return v
}

// describeOutcome returns an envelope's kind ("undecodable" when it does
// not parse) and its description (see envelope.Describe).
func describeOutcome(b []byte) (kind string, payload json.RawMessage, raw []byte) {
	parsed, err := envelope.Parse(b)
	if err != nil {
		return "undecodable", nil, b
	}
	payload, raw = parsed.Describe()
	return parsed.Kind.String(), payload, raw
}

// newStepViews describes a record's checkpoints, or returns them raw when
// they do not parse.
func newStepViews(b []byte) ([]stepView, []byte) {
	steps, err := checkpoints.Parse(b)
	if err != nil {
		return nil, b
	}
	var views []stepView
	for _, s := range steps {
		sv := stepView{Name: s.Name, State: s.State.String()}
		if s.State == checkpoints.Done {
			sv.OutcomeSize = len(s.Outcome)
			sv.OutcomeKind, sv.Outcome, sv.OutcomeRaw = describeOutcome(s.Outcome)
		}
		views = append(views, sv)
	}
	return views, nil
}

// text renders the view for people.
func (v recordView) text() []string {
	lines := []string{
		"scope:       " + quoteText(v.Scope),
		"key:         " + quoteText(v.Key),
		"state:       " + v.State,
	}
	if v.State == "absent" {
		return append(lines, "             (no live record: never claimed, expired or deleted)")
	}
	fp := v.Fingerprint
	if fp == "" {
		fp = "none"
	}
	lines = append(lines, "fingerprint: "+fp)
	if v.HoldRemainingMS != nil {
		lines = append(lines, "held for:    "+roundAge(ms(*v.AgeMS)))
		lines = append(lines, "hold:        "+holdText(listedView{
			HoldRemainingMS: v.HoldRemainingMS, HoldUntilResolved: v.HoldUntilResolved,
			LeaseRemainingMS: *v.LeaseRemainingMS, HeldCode: v.HeldCode, HeldMessage: v.HeldMessage,
		}))
	} else if v.LeaseRemainingMS != nil {
		lines = append(lines, "claimed:     "+roundAge(ms(*v.AgeMS))+" ago")
		left := ms(*v.LeaseRemainingMS)
		if left > 0 {
			lines = append(lines, "lease:       "+left.String()+" left")
		} else {
			lines = append(lines, "lease:       lapsed "+(-left).String()+" ago (the next call with the key takes it over)")
		}
	}
	lines = append(lines, "expires in:  "+ms(v.ExpiresInMS).String())
	lines = append(lines, v.stepsText()...)
	if v.State != backends.StateCompleted.String() {
		return lines
	}
	if v.HTTP != nil {
		lines = append(lines, fmt.Sprintf("outcome:     %d bytes, an HTTP response stored by oncehttp", v.OutcomeSize))
		return append(lines, v.HTTP.text()...)
	}
	lines = append(lines, fmt.Sprintf("outcome:     %d bytes, %s", v.OutcomeSize, describeKind(v.OutcomeKind)))
	return append(lines, payloadText("  ", v.Outcome, v.OutcomeRaw)...)
}

// stepsText renders the checkpoints, none when there are none.
func (v recordView) stepsText() []string {
	switch {
	case v.StepsRaw != nil:
		return []string{fmt.Sprintf("steps:       %d bytes, undecodable (not written by this version of once)", len(v.StepsRaw))}
	case len(v.Steps) == 0:
		return nil
	}
	lines := []string{fmt.Sprintf("steps:       %d checkpointed", len(v.Steps))}
	for _, s := range v.Steps {
		if s.State != checkpoints.Done.String() {
			lines = append(lines, "  "+quoteText(s.Name)+": started, not finished (at most once: a later execution holds the key instead of running it again)")
			continue
		}
		lines = append(lines, fmt.Sprintf("  %s: done, %d bytes, %s", quoteText(s.Name), s.OutcomeSize, describeKind(s.OutcomeKind)))
		lines = append(lines, payloadText("    ", s.Outcome, s.OutcomeRaw)...)
	}
	return lines
}

// payloadText renders an outcome's description, indented.
func payloadText(indent string, payload json.RawMessage, raw []byte) []string {
	switch {
	case payload != nil:
		var b bytes.Buffer
		if json.Indent(&b, payload, indent, "  ") == nil {
			return []string{indent + b.String()}
		}
	case raw != nil:
		return []string{fmt.Sprintf("%s(not JSON; %d bytes from a custom codec; use --json for base64)", indent, len(raw))}
	}
	return nil
}

func describeKind(kind string) string {
	switch kind {
	case envelope.KindValue.String():
		return "value"
	case envelope.KindError.String():
		return "final error"
	case envelope.KindTooLarge.String():
		return "too large (the value exceeded the size cap; every call gets an *once.OutcomeTooLargeError)"
	default:
		return "undecodable (not written by this version of once)"
	}
}

func ms(n int64) time.Duration { return time.Duration(n) * time.Millisecond }
